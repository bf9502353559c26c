#pragma once
// The geometry of one conv2d, on any device (ops/conv.cpp): input (B, C, H, W), kernel (kh, kw),
// output (Ho, Wo).
#include <cstdint>

namespace nf {

struct ConvGeometry {
  int64_t batch, channels, height, width;
  int64_t kh, kw, out_h, out_w;
  int64_t stride_h, stride_w, pad_h, pad_w, dil_h, dil_w;
};

}  // namespace nf
