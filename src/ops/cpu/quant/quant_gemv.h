#pragma once
// The decode-time product over quantised weights: y (m, n) = x (m, k) W (n, k)^T + b for a few
// rows of x (one token per sequence: m <= kQuantGemvMaxRows), W in one of llama.cpp's weight
// types (core/quant_type.h). As llama.cpp does, the rows of x are first quantised per block
// (activation_quant.h: Q8_0's formula for the 32-value types, Q8_K's for the K types), then
// each weight block meets each activation block in an integer dot product (AVX2's maddubs/madd,
// or scalar), scaled by the two blocks' scales:
//   Q8_0  d_w d_x sum q_w q_x                 Q4_0 / Q5_0  d_w d_x sum (q_w - 8 | 16) q_x
//   Q4_1 / Q5_1  d_w d_x sum q_w q_x + m_w s_x (s_x = d_x sum q_x, Q8_1's s)
//   Q4_K / Q6_K  per sub-block scales, against Q8_K (256 values, f32 d, sums of 16)
// F16 / BF16 / F32 weights are converted and multiplied into x unquantised. Every weight row is
// read from memory once for all m rows of x (its blocks stay in L1 while the rows of x pass);
// output rows are split across the engine's threads (gemv_driver.h). Decoding is bound by the
// bytes of W read. The tiles of each type: tiles_q32.cpp, tiles_k.cpp, tiles_float.cpp, chosen by
// the type's entry in the traits table (type_traits.h).
#include <cstdint>
#include <span>

#include "nanoformer/core/quantized_tensor.h"
#include "nanoformer/core/tensor.h"
#include "ops/problems/linear.h"

namespace nf::cpu {

inline constexpr int64_t kQuantGemvMaxRows = 16;

// Whether quant_linear_gemv computes this product: x f32 (m, k), 1 <= m <= kQuantGemvMaxRows,
// unit stride along k, and a weight type with a product (its traits' gemv).
bool quant_gemv_applies(const Tensor& x, const QuantizedTensor& weight);

// y (m, n) contiguous = x (m, k) W^T + b, b (n) f32 or undefined. `scalar`: the portable kernels
// (the quantisers and tiles a build without AVX2 runs) where the build has AVX2, the same sums in
// another order, for the tests to hold both to the formulas; the float types have one path.
void quant_linear_gemv(const Tensor& y, const Tensor& x, const QuantizedTensor& weight, const Tensor& bias,
                       bool scalar = false);

// One x times several weights of one type (decoding's q, k and v; gate and up): y_i = x W_i^T + b_i,
// x quantised once and one hand-off between the threads for all of them; each y_i as above.
void quant_linear_gemv(std::span<const QuantGemvProduct> products, const Tensor& x, bool scalar = false);

}  // namespace nf::cpu
