// Distillation's tempered KL from teacher to student, forward and backward side by side, and the
// loss mixing it with the cross-entropy.
#include "nanoformer/ops/distillation_loss.h"

#include <cmath>

#include "nanoformer/autograd/grad_mode.h"
#include "nanoformer/autograd/node.h"
#include "nanoformer/core/error.h"
#include "nanoformer/ops/elementwise.h"
#include "nanoformer/ops/reduce.h"
#include "nanoformer/ops/softmax.h"
#include "nanoformer/ops/view.h"
#include "ops/reduce_internal.h"

namespace nf {

Tensor distillation_kl(const Tensor& student_logits, const Tensor& teacher_logits, const Tensor& target,
                       double temperature, int64_t ignore_index, Reduction reduction) {
  require_floating_input(student_logits, "distillation_kl");
  NF_CHECK(teacher_logits.defined(), "distillation_kl: teacher_logits is undefined");
  NF_CHECK(student_logits.dim() == 2 && teacher_logits.shape() == student_logits.shape() &&
               teacher_logits.dtype() == student_logits.dtype(),
           "distillation_kl: student logits ", shape_str(student_logits.shape()), " ",
           dtype_name(student_logits.dtype()), " and teacher logits ", shape_str(teacher_logits.shape()), " ",
           dtype_name(teacher_logits.dtype()), " are not two (N, V) of one dtype");
  NF_CHECK(target.defined() && target.dim() == 1 && target.size(0) == student_logits.size(0) &&
               (target.dtype() == DType::i64 || target.dtype() == DType::i32),
           "distillation_kl: target ", target.defined() ? shape_str(target.shape()) : "undefined",
           " is not (N) = (", student_logits.size(0), ") i64 or i32");
  NF_CHECK(temperature > 0 && std::isfinite(temperature), "distillation_kl: temperature must be > 0, got ",
           temperature);
  const int64_t rows = student_logits.size(0);
  Tensor out, student_minus_teacher, keep;  // (N, V) p_s - p_t; (N, 1) 1 where kept
  double scale = 1.0;
  {
    NoGradGuard no_grad;
    const DType dtype = student_logits.dtype();
    const Tensor log_p_s = log_softmax(div(student_logits.detach(), temperature), 1);
    const Tensor log_p_t = log_softmax(div(teacher_logits.detach(), temperature), 1);
    const Tensor p_t = exp(log_p_t);
    keep = sub(1.0, eq(target, static_cast<double>(ignore_index)).to(dtype)).reshape({rows, 1});
    const Tensor row_kl = mul(sum(mul(p_t, sub(log_p_t, log_p_s)), {1}), keep.reshape({rows}));
    student_minus_teacher = sub(exp(log_p_s), p_t);
    switch (reduction) {
      case Reduction::none: out = row_kl; break;
      case Reduction::sum: out = sum(row_kl); break;
      case Reduction::mean: {  // batchmean over the kept rows; 0 / 0 = NaN when none is
        const double kept = sum(keep).item();
        out = div(sum(row_kl), kept);
        scale = 1.0 / kept;
        break;
      }
    }
  }
  // d kl_n / d s_n = (softmax(s_n / T) - softmax(t_n / T)) / T, 0 on ignored rows
  autograd::record("distillation_kl", out, {student_logits},
                   [student_minus_teacher, keep, scale, temperature, rows](const Tensor& g, const autograd::Node&) {
                     const Tensor g_rows = g.dim() == 0 ? g : g.reshape({rows, 1});
                     const Tensor weight = mul(mul(keep, g_rows), scale / temperature);
                     return std::vector<Tensor>{mul(student_minus_teacher, weight)};
                   });
  return out;
}

DistillationLoss distillation_loss(const Tensor& student_logits, const Tensor& teacher_logits, const Tensor& target,
                                   double temperature, double alpha, int64_t ignore_index) {
  NF_CHECK(alpha >= 0 && alpha <= 1, "distillation_loss: alpha must be in [0, 1], got ", alpha);
  DistillationLoss out;
  out.ce = cross_entropy(student_logits, target, ignore_index, Reduction::mean);
  out.kl = distillation_kl(student_logits, teacher_logits, target, temperature, ignore_index, Reduction::mean);
  out.loss = add(mul(out.ce, alpha), mul(out.kl, (1.0 - alpha) * temperature * temperature));
  return out;
}

}  // namespace nf
