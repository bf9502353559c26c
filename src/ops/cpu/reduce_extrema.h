#pragma once
// CPU kernels of max/min/argmax/argmin and their backward. `reduced[d]` marks the dims folded
// away; results are contiguous with the kept dims' shape.
#include <cstdint>
#include <vector>

#include "nanoformer/core/tensor.h"
#include "ops/problems/reduce.h"

namespace nf::cpu {

// indices[o] (i64) = flat row-major index, within the reduced dims, of the FIRST extremum of
// slice o; values[o] = that element (skipped when `values` is undefined). A NaN beats every
// number, so a slice holding NaN yields its first NaN (as PyTorch). Slices must be non-empty.
void extremum(const Tensor& values, const Tensor& indices, const Tensor& x, const std::vector<bool>& reduced,
              Extremum kind);

// dx[slice o at reduced index indices[o]] = g[o]; dx (contiguous, x's shape) must be zero-filled,
// g and indices contiguous with the kept dims' shape.
void scatter_to_indices(const Tensor& dx, const Tensor& g, const Tensor& indices, const std::vector<bool>& reduced);

// dx[i] = g / ties where x[i] equals `value` (NaN matches NaN), else 0; ties = how many x[i] do.
// x contiguous; dx contiguous with x's shape; g holds one element.
void distribute_to_ties(const Tensor& dx, const Tensor& x, const Tensor& value, const Tensor& g);

}  // namespace nf::cpu
