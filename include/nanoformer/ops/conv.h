#pragma once
// 2-D convolution (cross-correlation, as torch.nn.functional.conv2d) by im2col + one GEMM per group.
#include <array>
#include <cstdint>

#include "nanoformer/core/tensor.h"

namespace nf {

struct Conv2dOptions {
  std::array<int64_t, 2> stride{1, 1};    // (rows, columns), >= 1
  std::array<int64_t, 2> padding{0, 0};   // zeros added on both sides, >= 0
  std::array<int64_t, 2> dilation{1, 1};  // spacing between kernel taps, >= 1
  int64_t groups = 1;                     // divides in and out channels
};

// out[b, o, i, j] = bias[o] + sum_{c in group(o), m, n} x[b, c, i*s - p + m*d, j*s - p + n*d] w[o, c, m, n]
//   x (B, C, H, W), weight (O, C/groups, kh, kw), bias (O) or undefined -> (B, O, Ho, Wo) with
//   Ho = floor((H + 2p - d(kh - 1) - 1) / s) + 1 (Wo likewise); f32 or f64.
Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias = {}, const Conv2dOptions& options = {});

}  // namespace nf
