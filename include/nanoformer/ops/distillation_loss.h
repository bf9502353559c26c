#pragma once
// Knowledge distillation (Hinton et al. 2015) as MiniMind's train_distillation, per row n of the
// student's and the teacher's logits s_n, t_n (V) whose target is kept (target_n != ignore_index):
//   kl_n = KL(softmax(t_n / T) || softmax(s_n / T)) = sum_v p_t (log p_t - log p_s)   (log-softmax, stable)
//   loss = alpha * mean_n CE(s_n, target_n) + (1 - alpha) * T^2 * mean_n kl_n
// equal to torch's F.kl_div(F.log_softmax(s / T), F.log_softmax(t / T), log_target=True,
// reduction="batchmean") over the kept rows and F.cross_entropy(s, target, ignore_index).
// The teacher is a constant: no gradient flows to it.
#include <cstdint>

#include "nanoformer/core/tensor.h"
#include "nanoformer/ops/loss.h"

namespace nf {

// student_logits, teacher_logits (N, V) f32/f64 of one dtype; target (N) i64/i32; temperature > 0.
// none: (N) kl_n (0 on ignored rows); sum: their sum; mean: the sum over the kept rows (NaN when
// none is kept, as cross_entropy). Gradient w.r.t. the student: (softmax(s / T) - softmax(t / T)) / T.
Tensor distillation_kl(const Tensor& student_logits, const Tensor& teacher_logits, const Tensor& target,
                       double temperature, int64_t ignore_index = -100, Reduction reduction = Reduction::mean);

struct DistillationLoss {
  Tensor loss;  // () alpha * ce + (1 - alpha) * T^2 * kl, differentiable w.r.t. the student logits
  Tensor ce;    // () mean cross-entropy of the student over the kept rows
  Tensor kl;    // () mean KL over the kept rows (without T^2)
};

// The loss above; alpha in [0, 1].
DistillationLoss distillation_loss(const Tensor& student_logits, const Tensor& teacher_logits, const Tensor& target,
                                   double temperature, double alpha, int64_t ignore_index = -100);

}  // namespace nf
