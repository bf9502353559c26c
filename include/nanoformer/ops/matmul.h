#pragma once
// Matrix products on CBLAS. Operands whose last two dims are transposed views are passed to BLAS
// as transposed, never copied.
#include <span>
#include <vector>

#include "nanoformer/core/tensor.h"

namespace nf {

// matmul as torch.matmul: 1-D operands are promoted (and the added dim removed), 2-D is a plain
// product, higher ranks are batches of matrices with broadcast batch dims:
//   (..., M, K) @ (..., K, N) -> (broadcast(...), M, N)
Tensor matmul(const Tensor& a, const Tensor& b);
// linear(x, W, b) = x W^T + b:  x (..., in), W (out, in), b (out) or undefined -> (..., out)
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = {});
// linear(x, weights[i], biases[i]) for each i (biases[i] undefined: none), with the same values.
// Decoding's products of one x (q, k and v; gate and up), when no gradient is recorded, run in one
// hand-off between the threads, each taking its share of every weight.
std::vector<Tensor> linear_together(const Tensor& x, std::span<const Tensor> weights, std::span<const Tensor> biases);

}  // namespace nf
