#pragma once
// CPU kernels of the reduce family. `reduced[d]` marks the dims folded away; `out` is contiguous
// with the kept dims' shape. (max/min/argmax/argmin: reduce_extrema.h.)
#include <cstdint>
#include <vector>

#include "nanoformer/core/tensor.h"

namespace nf::cpu {

// out = sum over reduced dims (accumulated in double for floating inputs, int64 for integers)
void sum(const Tensor& out, const Tensor& x, const std::vector<bool>& reduced);

// out = sum / count over reduced dims (f32, f64; accumulated in double; NaN when count is 0)
void mean(const Tensor& out, const Tensor& x, const std::vector<bool>& reduced);

// out = sum((x - mean)^2) / max(0, count - correction) over reduced dims (f32, f64), by Welford's
// running update in double, so a large mean does not cancel the small deviations.
void var(const Tensor& out, const Tensor& x, const std::vector<bool>& reduced, int64_t correction);

}  // namespace nf::cpu
