#pragma once
#include "nanoformer/core/tensor.h"

namespace nf::cpu {
// x[i] = value for every element (any layout), value converted to x's dtype.
void fill(const Tensor& x, double value);
}  // namespace nf::cpu
