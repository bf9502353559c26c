#pragma once
// CPU kernels of softmax and log_softmax. Every tensor is contiguous and seen as (outer, n, inner)
// with the softmax taken along n: rows of n contiguous elements when inner == 1 (the fast path),
// else n rows of `inner` columns, processed a block of columns at a time.
#include <cstdint>

#include "nanoformer/core/tensor.h"
#include "ops/problems/softmax.h"

namespace nf::cpu {

// softmax:     y = e^(x - max) / sum e^(x - max)
// log_softmax: y = (x - max) - log sum e^(x - max)
void softmax_forward(const Tensor& y, const Tensor& x, SoftmaxLayout layout, bool log);

// softmax:     dx = y (dy - sum(dy y))
// log_softmax: dx = dy - e^y sum(dy)
// (y is the forward's output, the sums run along n)
void softmax_backward(const Tensor& dx, const Tensor& dy, const Tensor& y, SoftmaxLayout layout, bool log);

}  // namespace nf::cpu
