#pragma once
// The k largest entries along a dimension (torch.topk with largest = true, sorted = true).
#include <cstdint>

#include "nanoformer/core/tensor.h"

namespace nf {

struct TopK {
  Tensor values;   // x's dtype, x's shape with shape[dim] = k, in descending order; differentiable
  Tensor indices;  // i64, same shape: positions along dim; not differentiable
};

// values = x.gather(dim, indices), indices of the k largest along dim, largest first; among equal
// values the lower index comes first, and NaN counts as larger than every number (as PyTorch).
// The gradient flows to the selected positions only.
TopK topk(const Tensor& x, int64_t k, int64_t dim = -1);

}  // namespace nf
