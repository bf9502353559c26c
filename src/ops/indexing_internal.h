#pragma once
// Pieces shared by the indexing op files (not public API).
#include "nanoformer/core/tensor.h"

namespace nf {

// Checks that `index` is i64 or i32 and that every value lies in [0, target_shape[dim]); returns
// it contiguous. The error names op, the first offending value and its position, the valid range,
// and the dim and shape it indexes.
Tensor checked_index(const char* op, const Tensor& index, const Shape& target_shape, int64_t dim);

}  // namespace nf
