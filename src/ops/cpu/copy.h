#pragma once
#include "nanoformer/core/tensor.h"

namespace nf::cpu {
// dst[i] = convert(src[i]) for every element; any layouts; shapes equal.
void copy(const Tensor& dst, const Tensor& src);
}  // namespace nf::cpu
