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

// dim normalised to [0, x.dim()) (negative counts from the end; a 0-dim tensor takes 0 or -1);
// out of range throws naming `op`, the dim and x's shape.
int64_t checked_dim(const Tensor& x, int64_t dim, const char* op);

// Throws, naming `op`, the dtype and the shape, unless x is a defined f32 or f64 tensor.
void require_floating_input(const Tensor& x, const char* op);

}  // namespace nf
