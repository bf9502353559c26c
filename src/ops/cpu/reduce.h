#pragma once
// CPU kernels of the reduce family. `reduced[d]` marks the dims folded away; `out` is contiguous
// with the kept dims' shape.
#include <vector>

#include "nanoformer/core/tensor.h"

namespace nf::cpu {

// out = sum over reduced dims (accumulated in double for floating inputs, int64 for integers)
void sum(const Tensor& out, const Tensor& x, const std::vector<bool>& reduced);

}  // namespace nf::cpu
