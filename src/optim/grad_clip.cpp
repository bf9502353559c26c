// clip_grad_norm: the total gradient 2-norm (summed in double) and torch's fp32 clipping factor;
// sum_of_squares.
#include "nanoformer/optim/grad_clip.h"

#include <cmath>

#include "nanoformer/autograd/grad_mode.h"
#include "nanoformer/core/error.h"
#include "nanoformer/ops/elementwise.h"

namespace nf::optim {

double sum_of_squares(const Tensor& x) {
  const Tensor c = x.to(DType::f32).contiguous();
  const float* v = c.data<float>();
  const int64_t n = c.numel();
  constexpr int kLanes = 8;  // independent partial sums, so the loop vectorises
  double lanes[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int l = 0; l < kLanes; ++l) lanes[l] += static_cast<double>(v[i + l]) * v[i + l];
  double total = 0;
  for (; i < n; ++i) total += static_cast<double>(v[i]) * v[i];
  for (const double lane : lanes) total += lane;
  return total;
}

double clip_grad_norm(const std::vector<Tensor>& params, double max_norm) {
  NF_CHECK(max_norm > 0 && std::isfinite(max_norm), "clip_grad_norm: max_norm ", max_norm, " must be finite and > 0");
  NoGradGuard no_grad;
  double sum_squares = 0;
  for (const Tensor& p : params) {
    if (const Tensor grad = p.grad(); grad.defined()) sum_squares += sum_of_squares(grad);  // sum ||grad||^2
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

}  // namespace nf::optim
