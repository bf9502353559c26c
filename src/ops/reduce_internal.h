#pragma once
// Pieces shared by the reduction op files (not public API).
#include <vector>

#include "nanoformer/core/tensor.h"

namespace nf {

struct ReducedDims {
  std::vector<bool> mask;  // per input dim: folded away?
  Shape kept_shape;        // output shape without keepdim
  Shape keepdim_shape;     // output shape with reduced dims kept as 1
  int64_t count = 1;       // elements folded into each output
};

// Validates `dims` (empty = all) for x and describes the reduction; errors name `op`.
ReducedDims reduced_dims(const Tensor& x, const std::vector<int64_t>& dims, const char* op);

}  // namespace nf
