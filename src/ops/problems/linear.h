#pragma once
// Several products of one input, on any device (ops/matmul.cpp, ops/quantized.cpp): decoding's q, k
// and v, or gate and up, y_i = x W_i^T + b_i in one call.
#include "nanoformer/core/quantized_tensor.h"
#include "nanoformer/core/tensor.h"

namespace nf {

struct GemvProduct {
  const Tensor* y;
  const Tensor* weight;
  const Tensor* bias;  // undefined: none
};

struct QuantGemvProduct {
  const Tensor* y;
  const QuantizedTensor* weight;
  const Tensor* bias;  // undefined: none
};

}  // namespace nf
