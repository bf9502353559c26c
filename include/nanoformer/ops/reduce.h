#pragma once
// Reductions along dimensions. `dims` empty means all dimensions; keepdim keeps them as size 1.
#include <vector>

#include "nanoformer/core/tensor.h"

namespace nf {

Tensor sum(const Tensor& x);  // all elements -> shape ()
Tensor sum(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim = false);
Tensor mean(const Tensor& x);
Tensor mean(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim = false);
// var = sum((x - mean)^2) / (N - correction); correction 1 is the unbiased estimate (PyTorch's default)
Tensor var(const Tensor& x, const std::vector<int64_t>& dims, int64_t correction = 1, bool keepdim = false);
// max/min along one dim (values); a NaN counts as the extremum. The gradient goes to the first
// position of the extremum, the index argmax/argmin report (as PyTorch's max(dim) with indices).
Tensor max(const Tensor& x, int64_t dim, bool keepdim = false);
Tensor min(const Tensor& x, int64_t dim, bool keepdim = false);
// max/min over all elements -> shape (). The gradient is shared equally among all elements equal
// to the result (as PyTorch's max()/min(), which distribute it evenly among ties).
Tensor max(const Tensor& x);
Tensor min(const Tensor& x);
// index (i64) of the first extremum along dim; not differentiable
Tensor argmax(const Tensor& x, int64_t dim, bool keepdim = false);
Tensor argmin(const Tensor& x, int64_t dim, bool keepdim = false);

// Sums x down to `shape` over broadcast dimensions (the backward of broadcasting).
Tensor sum_to(const Tensor& x, const Shape& shape);

}  // namespace nf
