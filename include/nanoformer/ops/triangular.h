#pragma once
// triu keeps elements with col - row >= diagonal, tril those with col - row <= diagonal, over the
// last two dimensions; the rest become zero. Gradient is masked the same way.
#include "nanoformer/core/tensor.h"

namespace nf {

Tensor triu(const Tensor& x, int64_t diagonal = 0);
Tensor tril(const Tensor& x, int64_t diagonal = 0);

}  // namespace nf
