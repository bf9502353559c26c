#pragma once
// Autocast: mixed-precision matrix products, as torch.autocast("cpu", dtype=...) for training.
// Inside an AutocastGuard(bf16) (or f16) on this thread, matmul and linear (and the ops built on
// matmul: conv2d, the plain attention path, LoRA's B A) multiply bf16-rounded (f16-rounded) copies
// of their f32 operands, accumulate in f32 and return f32; their backward multiplies the rounded
// gradient with the same rounded copies. Every other op, the parameters and their gradients stay
// f32. f64 operands are never rounded. The fused attention kernel keeps its own GEMMs in f32.
//
//   { nf::AutocastGuard guard(nf::DType::bf16);
//     Tensor loss = model.forward(ids, targets).loss;
//     loss.backward(); }                      // optimizer step after the guard
//
// Within the outermost guard the rounded copy of a parameter (a leaf that requires grad) is made
// once and reused by every product that reads it; leaving the outermost guard drops the copies, so
// the parameters must not change in place inside a guard (step the optimizer outside it).
#include <string>

#include "nanoformer/core/dtype.h"

namespace nf {

// bf16 or f16 inside a guard, f32 where autocast is off (no guard, or an AutocastGuard(f32)).
DType autocast_dtype();

// Sets the autocast dtype (bf16, f16, or f32 to switch it off) for the scope; nested guards
// restore the enclosing one's dtype.
class AutocastGuard {
 public:
  explicit AutocastGuard(DType dtype);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  DType previous_;
};

// The GEMM behind bf16 products: the CPU's bf16 instructions (AVX512-BF16, AMX) through oneDNN
// where the CPU has them, else the fallback: the bf16 values widened to f32 (exactly) on the BLAS
// sgemm. Both compute the same exact products with f32 sums; only the summation order differs.
// Forcing the fallback (also NANOFORMER_BF16_GEMM=fallback) lets a bf16 machine test it.
bool bf16_gemm_native();
void force_bf16_gemm_fallback(bool force);
std::string bf16_gemm_info();  // "oneDNN 2.6.3, brg:avx512_core_bf16" or "fallback: ... (why)"

}  // namespace nf
