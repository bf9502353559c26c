#pragma once
#include "nanoformer/core/tensor.h"

namespace nf::cpu {
// out (..., R, C)[.., i, j] = keep ? x[.., i, j] : 0, keep = j - i >= diagonal when `upper`
// (triu), j - i <= diagonal otherwise (tril). out contiguous; x any layout, any dtype.
void triangular(const Tensor& out, const Tensor& x, int64_t diagonal, bool upper);
}  // namespace nf::cpu
