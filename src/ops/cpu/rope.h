#pragma once
// CPU kernel of the fused rotary embedding (see include/nanoformer/ops/rope.h for the layouts).
#include <cstdint>
#include <span>

#include "nanoformer/core/tensor.h"
#include "nanoformer/ops/rope.h"

namespace nf::cpu {

// out = rotation of x (..., T, D) at positions offsets[b] + t (b: the index along x's dim 0; one
// offset: every row's) by the angles of the tables cos, sin (L, D/2), contiguous; with `inverse`
// the rotation by minus those angles (the backward). x and out: any layouts whose last dim has
// stride 1, same shape; f32 or f64.
void rope_rotate(const Tensor& out, const Tensor& x, const Tensor& cos, const Tensor& sin,
                 std::span<const int64_t> offsets, RopeLayout layout, bool inverse);

}  // namespace nf::cpu
