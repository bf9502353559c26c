#pragma once
// The prefill product over quantised weights: y (m, n) = x (m, k) W (n, k)^T with W's rows in
// blocks of a quantised type and x's rows quantised to Q8_0, for many rows of x (a prompt):
// y[i, j] = sum over blocks b of d_x[i, b] d_w[j, b] sum_t q_x[i, b, t] q_w[j, b, t]
// (Q4_1 and the like add their block minimum's term), with int8 products in the vector unit.
#include <cstdint>

#include "nanoformer/core/quant_type.h"
#include "ops/cpu/quant/quant_blocks.h"

namespace nf::cpu {

// Whether quant_gemm takes weights of this type.
bool quant_gemm_supports(QuantType wtype);

// y[i * ldy + j] = the dot of x's row i (k / 32 Q8_0 blocks at xq + i * k / 32) and W's row j
// (n rows of k values of `wtype`, row after row, at w) for i < m, j < n; k is a multiple of 32.
// Threaded over tiles of y. The int8 instructions are int8_isa()'s; all give the same y.
void quant_gemm(QuantType wtype, const void* w, int64_t n, int64_t k, const BlockQ8_0* xq, int64_t m, float* y,
                int64_t ldy);

}  // namespace nf::cpu
