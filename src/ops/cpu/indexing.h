#pragma once
// CPU kernels of the indexing family. Index tensors (i32 or i64) arrive contiguous and already
// validated with first_out_of_range, so the kernels never read or write out of bounds.
#include "nanoformer/core/tensor.h"

namespace nf::cpu {

// Flat position of the first element of contiguous `index` outside [0, size), or -1 when none is.
int64_t first_out_of_range(const Tensor& index, int64_t size);

// out (outer, K, inner)[o, k, :] = x (outer, N, inner)[o, index[k], :]; x and out contiguous, any dtype.
void index_select(const Tensor& out, const Tensor& x, const Tensor& index, int64_t dim);
// dst (outer, N, inner)[o, index[k], :] += src (outer, K, inner)[o, k, :], each element in k order;
// dst and src contiguous.
void index_add(const Tensor& dst, const Tensor& src, const Tensor& index, int64_t dim);

// out[p] = x[p with p[dim] := index[p]] for every position p of index.shape; x any layout, any dtype.
void gather(const Tensor& out, const Tensor& x, const Tensor& index, int64_t dim);
// dst[p with p[dim] := index[p]] += src[p] for every position p of index.shape, each dst element
// in p[dim] order; src any layout.
void scatter_add(const Tensor& dst, const Tensor& src, const Tensor& index, int64_t dim);

// out (N, D)[n, :] = weight (V, D)[ids[n], :]; weight and out contiguous, any dtype.
void embedding(const Tensor& out, const Tensor& weight, const Tensor& ids);
// grad_weight (V, D)[v, :] = sum over n with ids[n] = v of grad_out (N, D)[n, :], summed in n order
// (the result does not depend on the thread count); grad_out contiguous, grad_weight written whole.
void embedding_backward(const Tensor& grad_weight, const Tensor& grad_out, const Tensor& ids);

}  // namespace nf::cpu
