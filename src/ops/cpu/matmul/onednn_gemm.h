#pragma once
// bf16 GEMM on the CPU's bf16 instructions (AVX512-BF16 vdpbf16ps, AMX tiles) through oneDNN's
// matmul primitive: C (f32) = A (bf16) B (bf16), every product exact, sums in f32.
#include <cstdint>
#include <string>

namespace nf::cpu {

// Whether oneDNN dispatches bf16 GEMMs to bf16 instructions on this CPU (its effective ISA has
// AVX512-BF16 or AMX). Without them oneDNN would emulate bf16; we take the sgemm fallback instead.
bool onednn_bf16_native();
// "oneDNN 2.6.3, <implementation>" (the implementation oneDNN picks for a probe GEMM).
const std::string& onednn_bf16_info();

// C (M, N) = op(A) op(B), row-major, op(X) = X or X^T as stored with leading dimension ld
// (as cblas_sgemm with RowMajor); a, b hold bf16 bit patterns. Primitives are cached by shape.
void onednn_gemm_bf16(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const uint16_t* a, int64_t lda,
                      const uint16_t* b, int64_t ldb, float* c, int64_t ldc);

}  // namespace nf::cpu
