#pragma once
#include <vector>

#include "nanoformer/core/tensor.h"

namespace nf::cpu {
// out = the inputs laid end to end along `dim`: out (..., sum_i n_i, ...) from inputs (..., n_i, ...).
// out is contiguous; inputs share its dtype and may have any layout.
void cat(const Tensor& out, const std::vector<Tensor>& inputs, int64_t dim);
}  // namespace nf::cpu
