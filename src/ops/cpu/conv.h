#pragma once
// im2col and its adjoint col2im: the kernels that turn a convolution into a GEMM.
#include <cstdint>

#include "nanoformer/core/tensor.h"
#include "ops/problems/conv.h"

namespace nf::cpu {

// col (C*kh*kw, B*Ho*Wo)[(c, m, n), (b, i, j)] = x (B, C, H, W)[b, c, i*s - p + m*d, j*s - p + n*d],
// 0 outside the image; x and col contiguous, f32 or f64.
void im2col(const Tensor& col, const Tensor& x, const ConvGeometry& g);
// dx (B, C, H, W)[b, c, i*s - p + m*d, j*s - p + n*d] += col[(c, m, n), (b, i, j)] inside the image (the
// adjoint of im2col); dx zeroed by the caller, both contiguous.
void col2im(const Tensor& dx, const Tensor& col, const ConvGeometry& g);

}  // namespace nf::cpu
