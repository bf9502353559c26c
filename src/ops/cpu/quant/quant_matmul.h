#pragma once
// The decode-time product over quantised weights: y (m, n) = x (m, k) W (n, k)^T + b for a few
// rows of x (one token per sequence: m <= kQuantGemvMaxRows), W in one of llama.cpp's weight
// types (core/quant_type.h). As llama.cpp does, the rows of x are first quantised per block
// (quantize_activations: Q8_0's formula for the 32-value types, Q8_K's for the K types), then
// each weight block meets each activation block in an integer dot product (AVX2's maddubs/madd,
// or scalar), scaled by the two blocks' scales:
//   Q8_0  d_w d_x sum q_w q_x                 Q4_0 / Q5_0  d_w d_x sum (q_w - 8 | 16) q_x
//   Q4_1 / Q5_1  d_w d_x sum q_w q_x + m_w s_x (s_x = d_x sum q_x, Q8_1's s)
//   Q4_K / Q6_K  per sub-block scales, against Q8_K (256 values, f32 d, sums of 16)
// F16 / BF16 / F32 weights are converted and multiplied into x unquantised. Every weight row is
// read from memory once for all m rows of x (its blocks stay in L1 while the rows of x pass);
// output rows are split across the engine's threads. Decoding is bound by the bytes of W read.
#include <cstdint>
#include <span>
#include <vector>

#include "nanoformer/core/quantized_tensor.h"
#include "nanoformer/core/tensor.h"
#include "ops/problems/linear.h"
#include "ops/cpu/quant/quant_blocks.h"

namespace nf::cpu {

inline constexpr int64_t kQuantGemvMaxRows = 16;

// Rows of x quantised per block for the integer dot products. 32-value blocks (the partner of
// Q4_0 .. Q8_0): Q8_0's formula, d = max|x| / 127 rounded to f16, q = round(x / d) (bit-identical
// to quantize_row(q8_0)), and s = d * sum q (Q8_1's s unrounded, for Q4_1 / Q5_1's minimum).
// 256-value blocks (the partner of the K types): Q8_K's formula, d and q bit-identical to
// quantize_row(q8_k) (llama.cpp's), sums[i] = sum of q over the i-th group of 16.
struct QuantizedActivations {
  int64_t rows = 0, cols = 0, block = 32;  // block: 32 or 256
  std::vector<int8_t> q;      // (rows, cols)
  std::vector<float> d, s;    // (rows, cols / block); s for 32-value blocks only
  std::vector<int16_t> sums;  // (rows, cols / 16), 256-value blocks only

  int64_t blocks_per_row() const { return block == 32 ? cols / 32 : cols / 256; }  // constant divisors: no division in loops
  const int8_t* row_q(int64_t r) const { return q.data() + r * cols; }
  const float* row_d(int64_t r) const { return d.data() + r * blocks_per_row(); }
  const float* row_s(int64_t r) const { return s.data() + r * blocks_per_row(); }
  const int16_t* row_sums(int64_t r) const { return sums.data() + r * (cols / 16); }
};

// The activation block size a weight type's product uses: 32, 256 for the K types, 0 for the
// float types (x is used unquantised) and for types without a product.
int64_t activation_block(QuantType weight_type);

// Quantises `rows` rows of x (row i at x + i * ldx) of `cols` values into `out` (its buffers
// reused when large enough), blocks of `block` values (32 or 256). AVX2 or scalar (`scalar`
// forces it, to test both), the same bits.
void quantize_activations(const float* x, int64_t ldx, int64_t rows, int64_t cols, int64_t block,
                          QuantizedActivations& out, bool scalar = false);

// The same quantisation into Q8_0 blocks (d as f16, the value quantize_activations rounds it to),
// threaded over rows: the x of quant_gemm (prefill).
void quantize_activation_blocks(const float* x, int64_t ldx, int64_t rows, int64_t cols, BlockQ8_0* out);

// Whether quant_linear_gemv computes this product: x f32 (m, k), 1 <= m <= kQuantGemvMaxRows,
// unit stride along k, and a weight type with a product (activation_block != 0 or a float type).
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
