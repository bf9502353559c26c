#pragma once
// Each weight type's kernels, declared once, in the type-erased forms the traits table holds
// (type_traits.h): the table in type_traits.cpp is the one place that maps a type to them, so a
// new type is its kernels here plus one entry there. (activation_quant.cpp also calls the Q8_0 and
// Q8_K quantisers by name: they are its portable form.)
//   quantize_T / dequantize_T  nb blocks (nb values for the float types), the reference formulas
//                              of quant_blocks.h, bit-identical to gguf.quants / llama.cpp (quant_rows.cpp, quant_rows_k.cpp)
//   gemv_T                     decode's product: tiles_q32.cpp, tiles_k.cpp, tiles_float.cpp
//   gemm_T                     prefill's integer GEMM (quant_gemm.cpp, quant_gemm_k.cpp)
#include <cstdint>
#include <span>

#include "ops/cpu/quant/gemv_tile.h"
#include "ops/cpu/quant/quant_blocks.h"

namespace nf::cpu {

// x (nb blocks) -> blocks, and back (quant_rows.cpp)
void quantize_f32(const float* x, void* blocks, int64_t nb);
void quantize_f64(const float* x, void* blocks, int64_t nb);
void quantize_f16(const float* x, void* blocks, int64_t nb);
void quantize_bf16(const float* x, void* blocks, int64_t nb);
void quantize_q8_0(const float* x, void* blocks, int64_t nb);
void quantize_q8_1(const float* x, void* blocks, int64_t nb);
void quantize_q4_0(const float* x, void* blocks, int64_t nb);
void quantize_q4_1(const float* x, void* blocks, int64_t nb);
void quantize_q5_0(const float* x, void* blocks, int64_t nb);
void quantize_q5_1(const float* x, void* blocks, int64_t nb);
void quantize_q4_k(const float* x, void* blocks, int64_t nb);
void quantize_q6_k(const float* x, void* blocks, int64_t nb);
void quantize_q5_k(const float* x, void* blocks, int64_t nb);
void quantize_q3_k(const float* x, void* blocks, int64_t nb);
void quantize_q8_k(const float* x, void* blocks, int64_t nb);
void dequantize_f32(const void* blocks, float* y, int64_t nb);
void dequantize_f64(const void* blocks, float* y, int64_t nb);
void dequantize_f16(const void* blocks, float* y, int64_t nb);
void dequantize_bf16(const void* blocks, float* y, int64_t nb);
void dequantize_q8_0(const void* blocks, float* y, int64_t nb);
void dequantize_q8_1(const void* blocks, float* y, int64_t nb);
void dequantize_q4_0(const void* blocks, float* y, int64_t nb);
void dequantize_q4_1(const void* blocks, float* y, int64_t nb);
void dequantize_q5_0(const void* blocks, float* y, int64_t nb);
void dequantize_q5_1(const void* blocks, float* y, int64_t nb);
void dequantize_q4_k(const void* blocks, float* y, int64_t nb);
void dequantize_q6_k(const void* blocks, float* y, int64_t nb);
void dequantize_q5_k(const void* blocks, float* y, int64_t nb);
void dequantize_q3_k(const void* blocks, float* y, int64_t nb);
void dequantize_q8_k(const void* blocks, float* y, int64_t nb);

// y = x W^T for the m rows of x of each base (gemv_tile.h; x quantised first for the quantised
// types); `scalar`: the portable tiles and quantisers, as a build without AVX2 runs (no change
// for the float types, which have one path)
void gemv_q8_0(std::span<TileArgs> bases, int64_t m, bool scalar);
void gemv_q4_0(std::span<TileArgs> bases, int64_t m, bool scalar);
void gemv_q4_1(std::span<TileArgs> bases, int64_t m, bool scalar);
void gemv_q5_0(std::span<TileArgs> bases, int64_t m, bool scalar);
void gemv_q5_1(std::span<TileArgs> bases, int64_t m, bool scalar);
void gemv_q4_k(std::span<TileArgs> bases, int64_t m, bool scalar);
void gemv_q6_k(std::span<TileArgs> bases, int64_t m, bool scalar);
void gemv_q5_k(std::span<TileArgs> bases, int64_t m, bool scalar);
void gemv_q3_k(std::span<TileArgs> bases, int64_t m, bool scalar);
void gemv_f32(std::span<TileArgs> bases, int64_t m, bool scalar);
void gemv_f16(std::span<TileArgs> bases, int64_t m, bool scalar);
void gemv_bf16(std::span<TileArgs> bases, int64_t m, bool scalar);

// y (m, n; ldy apart) = xq W^T, W n rows of k values, xq m rows of the type's activation blocks:
// BlockQ8_0 (quant_gemm.cpp) or, for the K types, BlockQ8_K (quant_gemm_k.cpp) (quant_gemm.h's
// quant_gemm checks the operands first)
void gemm_q8_0(const void* w, int64_t n, int64_t k, const void* xq, int64_t m, float* y, int64_t ldy);
void gemm_q4_0(const void* w, int64_t n, int64_t k, const void* xq, int64_t m, float* y, int64_t ldy);
void gemm_q4_1(const void* w, int64_t n, int64_t k, const void* xq, int64_t m, float* y, int64_t ldy);
void gemm_q5_0(const void* w, int64_t n, int64_t k, const void* xq, int64_t m, float* y, int64_t ldy);
void gemm_q5_1(const void* w, int64_t n, int64_t k, const void* xq, int64_t m, float* y, int64_t ldy);
void gemm_q4_k(const void* w, int64_t n, int64_t k, const void* xq, int64_t m, float* y, int64_t ldy);
void gemm_q6_k(const void* w, int64_t n, int64_t k, const void* xq, int64_t m, float* y, int64_t ldy);
void gemm_q5_k(const void* w, int64_t n, int64_t k, const void* xq, int64_t m, float* y, int64_t ldy);
void gemm_q3_k(const void* w, int64_t n, int64_t k, const void* xq, int64_t m, float* y, int64_t ldy);

}  // namespace nf::cpu
