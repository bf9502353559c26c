#pragma once
// Joining and splitting along a dimension. Split pieces are views of the input.
#include <vector>

#include "nanoformer/core/tensor.h"

namespace nf {

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim);
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim);
std::vector<Tensor> split(const Tensor& x, int64_t split_size, int64_t dim);  // last piece may be smaller
std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int64_t dim);
std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim);     // as torch.chunk

}  // namespace nf
