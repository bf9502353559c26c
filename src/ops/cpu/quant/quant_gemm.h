#pragma once
// The prefill product over quantised weights: y (m, n) = x (m, k) W (n, k)^T with W's rows in
// blocks of a quantised type and x's rows quantised to Q8_0 (the 32-value types) or Q8_K (the K
// types), for many rows of x (a prompt):
// y[i, j] = sum over blocks b of d_x[i, b] d_w[j, b] sum_t q_x[i, b, t] q_w[j, b, t]
// (Q4_1 and the like add their block minimum's term; the K types scale sub-blocks, k_blocks.h),
// with int8 products in the vector unit (quant_gemm.cpp, quant_gemm_k.cpp).
#include <cstdint>

#include "nanoformer/core/quant_type.h"
#include "ops/cpu/quant/quant_blocks.h"

namespace nf::cpu {

// Whether quant_gemm takes weights of this type.
bool quant_gemm_supports(QuantType wtype);

// y[i * ldy + j] = the dot of x's row i and W's row j (n rows of k values of `wtype`, row after
// row, at w) for i < m, j < n. x: m rows of k / B blocks, B = activation_block(wtype), Q8_0's
// (B = 32) or Q8_K's (B = 256), as quantize_activation_blocks writes them; k a multiple of B.
// Threaded over tiles of y. The int8 instructions are int8_isa()'s; all give the same y.
void quant_gemm(QuantType wtype, const void* w, int64_t n, int64_t k, const void* xq, int64_t m, float* y, int64_t ldy);

}  // namespace nf::cpu
