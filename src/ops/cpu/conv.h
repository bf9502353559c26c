#pragma once
// im2col and its adjoint col2im: the kernels that turn a convolution into a GEMM.
#include <cstdint>

#include "nanoformer/core/tensor.h"

namespace nf::cpu {

// The geometry of one conv2d: input (B, C, H, W), kernel (kh, kw), output (Ho, Wo).
struct ConvGeometry {
  int64_t batch, channels, height, width;
  int64_t kh, kw, out_h, out_w;
  int64_t stride_h, stride_w, pad_h, pad_w, dil_h, dil_w;
};

// col (C*kh*kw, B*Ho*Wo)[(c, m, n), (b, i, j)] = x (B, C, H, W)[b, c, i*s - p + m*d, j*s - p + n*d],
// 0 outside the image; x and col contiguous, f32 or f64.
void im2col(const Tensor& col, const Tensor& x, const ConvGeometry& g);
// dx (B, C, H, W)[b, c, i*s - p + m*d, j*s - p + n*d] += col[(c, m, n), (b, i, j)] inside the image (the
// adjoint of im2col); dx zeroed by the caller, both contiguous.
void col2im(const Tensor& dx, const Tensor& col, const ConvGeometry& g);

}  // namespace nf::cpu
