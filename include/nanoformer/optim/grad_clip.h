#pragma once
// Gradient-norm clipping, as torch.nn.utils.clip_grad_norm_ (the 2-norm):
//   total = sqrt(sum over parameters of ||grad||^2)
//   every gradient *= min(1, max_norm / (total + 1e-6))
// Parameters without a gradient are skipped. Returns the total before clipping. A non-finite total
// is returned with the gradients left untouched (torch would scale them by nan); the trainer or
// the loss scaler then skips the step.
#include <vector>

#include "nanoformer/core/tensor.h"

namespace nf::optim {

// Throws nf::Error when max_norm is not > 0.
double clip_grad_norm(const std::vector<Tensor>& params, double max_norm);

// sum x^2 over a tensor's elements, accumulated in double (in a fixed order: the same bits on every run).
double sum_of_squares(const Tensor& x);

}  // namespace nf::optim
