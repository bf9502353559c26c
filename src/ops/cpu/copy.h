#pragma once
#include "nanoformer/core/tensor.h"

namespace nf::cpu {
// dst[i] = convert(src[i]) for every element; any layouts; shapes equal.
void copy(const Tensor& dst, const Tensor& src);
// A copy of src in `dtype` laid out as src is, when src's elements fill one dense block of memory
// in any dim order (contiguous, transposed, permuted; broadcast dims keep stride 0): the block is
// converted as one flat run. Any other layout gives a contiguous copy.
Tensor convert_keeping_layout(const Tensor& src, DType dtype);
}  // namespace nf::cpu
