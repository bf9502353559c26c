#pragma once
#include <string>

#include "nanoformer/core/tensor.h"

namespace nf::cpu {
// out (B..., M, N) = a (B..., M, K) @ b (B..., K, N): identical batch shapes (broadcast batch dims
// arrive as stride 0), any strides; out contiguous. One GEMM per batch entry; an operand whose
// matrix dims are transposed in memory is passed as transposed, never copied.
//   f32, f64: CBLAS sgemm / dgemm, out of the operands' dtype;
//   bf16: out f32, oneDNN on the CPU's bf16 instructions (bf16_gemm_native()), else the fallback;
//   f16, and the bf16 fallback: out f32, the operands widened to f32 (exact) on sgemm.
// Either way every product of two 16-bit values is exact and the sums are f32.
void matmul(const Tensor& out, const Tensor& a, const Tensor& b);

// Whether bf16 products run on the CPU's bf16 instructions: the CPU has them and the fallback is
// not forced (force_bf16_gemm_fallback, or NANOFORMER_BF16_GEMM=fallback in the environment).
bool bf16_gemm_native();
void force_bf16_gemm_fallback(bool force);
// "oneDNN 2.6.3, brg:avx512_core_bf16" or "fallback: ... (why)"
std::string bf16_gemm_info();
}  // namespace nf::cpu
