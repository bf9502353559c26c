#pragma once
// Rows of x quantised per block for the integer products, once for decode's tiles (quant_gemv.h)
// and prefill's GEMM (quant_gemm.h), as llama.cpp does: Q8_0's formula for the partners of the
// 32-value types, Q8_K's for the K types (quant_blocks.h). The portable form is the reference
// quantiser itself (quant_rows.cpp's); the AVX2 form gives the same bits.
#include <cstdint>
#include <vector>

#include "ops/cpu/quant/quant_blocks.h"

namespace nf::cpu {

// 32-value blocks (the partner of Q4_0 .. Q8_0): Q8_0's formula, d = max|x| / 127 rounded to f16,
// q = round(x / d) (bit-identical to quantize_row(q8_0)), and s = d * sum q (Q8_1's s unrounded,
// for Q4_1 / Q5_1's minimum). 256-value blocks (the partner of the K types): Q8_K's formula, d and
// q bit-identical to quantize_row(q8_k) (llama.cpp's), sums[i] = sum of q over the i-th group of 16.
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

// Quantises `rows` rows of x (row i at x + i * ldx) of `cols` values into `out` (its buffers
// reused when large enough), blocks of `block` values (32 or 256). AVX2 or the reference
// (`scalar` forces it, to test both), the same bits.
void quantize_activations(const float* x, int64_t ldx, int64_t rows, int64_t cols, int64_t block,
                          QuantizedActivations& out, bool scalar = false);

// The same quantisation into blocks of `block` values, threaded over rows: the x of quant_gemm
// (prefill). 32: BlockQ8_0 (d as f16, the value quantize_activations rounds it to); 256: BlockQ8_K
// (quantize_row(q8_k)'s bits). `out` holds rows * cols / block of them.
void quantize_activation_blocks(const float* x, int64_t ldx, int64_t rows, int64_t cols, int64_t block, void* out);

}  // namespace nf::cpu
