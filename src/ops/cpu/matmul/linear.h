#pragma once
// The CPU entries of linear, y = x W^T + b (ops/matmul.cpp and ops/quantized.cpp's tables): each
// chooses among the CPU's kernels from the operands, in this one place:
//   f32 W:       a few f32 rows (decoding)   -> the matrix-vector kernel (gemv.h), W streamed once
//                otherwise                   -> the GEMM (matmul.h), then + b
//   quantised W: a few rows, a type with a product -> the quantised matrix-vector kernel (quant_gemv.h)
//                a type the integer GEMM takes     -> x quantised once (Q8_0, or Q8_K for the K types),
//                                                     the integer GEMM (quant_gemm.h)
//                otherwise                         -> W dequantised, then as an f32 W
#include <span>

#include "nanoformer/core/quantized_tensor.h"
#include "nanoformer/core/tensor.h"
#include "ops/problems/linear.h"

namespace nf::cpu {

// y (R, N) contiguous = x (R, K) W^T + b: x and W f32 (or autocast's bf16 / f16 copies: the GEMM,
// f32 sums), b (N) of y's dtype or undefined.
void linear(const Tensor& y, const Tensor& x, const Tensor& weight, const Tensor& bias);
// Several products of one f32 x: in one hand-off of the matrix-vector kernel when it applies to every
// one, else each as linear.
void linear(std::span<const GemvProduct> products, const Tensor& x);

// y (R, N) contiguous f32 = x (R, K) W^T + b: x f32 with unit stride along K, b (N) f32 or undefined.
void quant_linear(const Tensor& y, const Tensor& x, const QuantizedTensor& weight, const Tensor& bias);
// Several products of one x: weights of one type in one hand-off of the matrix-vector kernel (a few
// rows) or with x quantised once for the integer GEMMs (many); else each as quant_linear.
void quant_linear(std::span<const QuantGemvProduct> products, const Tensor& x);

}  // namespace nf::cpu
