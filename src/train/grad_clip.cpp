// clip_grad_norm: the total gradient 2-norm (summed in double) and torch's fp32 clipping factor.
#include "nanoformer/train/grad_clip.h"

#include <cmath>

#include "nanoformer/autograd/grad_mode.h"
#include "nanoformer/core/error.h"
#include "nanoformer/ops/elementwise.h"

namespace nf::train {

double clip_grad_norm(const std::vector<Tensor>& params, double max_norm) {
  NF_CHECK(max_norm > 0 && std::isfinite(max_norm), "clip_grad_norm: max_norm ", max_norm, " must be finite and > 0");
  NoGradGuard no_grad;
  double sum_squares = 0;
  for (const Tensor& p : params) {
    const Tensor grad = p.grad();
    if (!grad.defined()) continue;
    const Tensor g = grad.to(DType::f32).contiguous();
    const float* v = g.data<float>();
    for (int64_t i = 0; i < g.numel(); ++i) sum_squares += static_cast<double>(v[i]) * v[i];  // sum ||grad||^2
  }
  const double total = std::sqrt(sum_squares);
  if (!std::isfinite(total)) return total;
  // torch, in fp32: (1 / (total + 1e-6)) max_norm, clamped to at most 1
  const float coefficient = (1.0f / (static_cast<float>(total) + 1e-6f)) * static_cast<float>(max_norm);
  if (coefficient >= 1.0f) return total;
  for (const Tensor& p : params)
    if (const Tensor grad = p.grad(); grad.defined()) mul_(grad, coefficient);
  return total;
}

}  // namespace nf::train
