#pragma once
// CPU kernel of the fused rotary embedding (see include/nanoformer/ops/rope.h for the layouts).
#include <cstdint>

#include "nanoformer/core/tensor.h"
#include "nanoformer/ops/rope.h"

namespace nf::cpu {

// out = rotation of x (..., T, D) at positions offset + t by the angles of the tables cos, sin
// (L, D/2), contiguous; with `inverse` the rotation by minus those angles (the backward).
// x and out: any layouts whose last dim has stride 1, same shape; f32 or f64.
void rope_rotate(const Tensor& out, const Tensor& x, const Tensor& cos, const Tensor& sin, int64_t offset,
                 RopeLayout layout, bool inverse);

}  // namespace nf::cpu
