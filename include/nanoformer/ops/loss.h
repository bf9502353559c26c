#pragma once
// Losses. cross_entropy fuses log_softmax and the negative log-likelihood:
//   loss_n = logsumexp(logits_n) - logits_n[target_n], skipped where target_n == ignore_index;
//   mean divides by the number of targets that are not ignored (as PyTorch).
#include <cstdint>

#include "nanoformer/core/tensor.h"

namespace nf {

enum class Reduction { none, mean, sum };

// logits (N, C) f32/f64, target (N) i64 (or i32). Returns () for mean/sum, (N) for none.
Tensor cross_entropy(const Tensor& logits, const Tensor& target, int64_t ignore_index = -100,
                     Reduction reduction = Reduction::mean);
// mean((a - b)^2) (or sum / none)
Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::mean);

}  // namespace nf
