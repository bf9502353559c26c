#pragma once
// CPU kernels of the fused cross-entropy. logits (N, C) f32/f64, target (N) i64/i32 and the
// per-row stats (N, 2) of logits' dtype are contiguous.
#include <cstdint>

#include "nanoformer/core/tensor.h"

namespace nf::cpu {

// With m_r = max logits[r] and log_sum_r = log sum_c e^(logits[r, c] - m_r) (saved as
// stats[r] = (m_r, log_sum_r) for the backward): loss[r] = (m_r - logits[r, target[r]]) + log_sum_r,
// and loss[r] = 0 (stats not computed) where target[r] == ignore_index. Nothing of size (N, C) is
// written. Returns how many rows are not ignored. Throws, naming cross_entropy, the row, the
// target and C, when a target is outside [0, C) and not ignore_index.
int64_t cross_entropy_forward(const Tensor& loss, const Tensor& stats, const Tensor& logits, const Tensor& target,
                              int64_t ignore_index);

// dlogits[r, c] = (e^((logits[r, c] - m_r) - log_sum_r) - [c == target[r]]) w_r, with
// w_r = scale grad[r] when grad is 1-D (reduction none), else scale grad[0]; rows whose target is
// ignore_index get 0.
void cross_entropy_backward(const Tensor& dlogits, const Tensor& logits, const Tensor& target, const Tensor& stats,
                            const Tensor& grad, double scale, int64_t ignore_index);

}  // namespace nf::cpu
