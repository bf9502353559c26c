#pragma once
#include "nanoformer/core/tensor.h"

namespace nf::cpu {
// indices (rows, k) i64 = positions of the k largest of each row of x (rows, n), largest first,
// ties to the lower position, NaN largest; x contiguous f32 or f64.
void topk_indices(const Tensor& indices, const Tensor& x);
}  // namespace nf::cpu
