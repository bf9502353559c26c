#pragma once
// Indexing by integer tensors (i64 or i32). Out-of-range indices throw, naming op, index and size.
#include "nanoformer/core/tensor.h"

namespace nf {

// out = x.index_select(dim, index): index is 1-D; out.shape[dim] = index.numel()
Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index);
// out[i][j][k] = x[i][index[i][j][k]][k] for dim = 1 (and so on); out.shape = index.shape
Tensor gather(const Tensor& x, int64_t dim, const Tensor& index);
// out = x, then out[i][index[i][j][k]][k] += src[i][j][k] for dim = 1; returns a new tensor
Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);
// out = x, then out[.., index[k], ..] += src[.., k, ..] along dim (repeats accumulate); index 1-D,
// src shaped like x except src.shape[dim] = index.numel(); returns a new tensor
Tensor index_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);
// embedding(weight (V, D), ids (...)) -> (..., D); backward scatter-adds rows into dWeight
Tensor embedding(const Tensor& weight, const Tensor& ids);

}  // namespace nf
