#pragma once
// Quantising and dequantising rows of every weight type (core/quant_type.h), bit-identical to the
// reference of gguf.quants, and to llama.cpp's quantize_row_*_ref for the types gguf.quants cannot
// quantise (Q3_K to Q6_K, Q8_K, Q8_1); src/ops/cpu/quant/quant_blocks.h gives each formula. n is a multiple
// of the block size. Each type's quantiser and dequantiser (quant_rows.cpp, quant_rows_k.cpp, declared in
// type_kernels.h)
// is reached through its entry in the traits table (type_traits.h), looked up once per call.
// Tested against tools/quant/make_quant_fixtures.py's fixture (tests/ops/test_quant_rows.cpp).
#include <cstdint>

#include "nanoformer/core/quant_type.h"
#include "nanoformer/core/quantized_tensor.h"
#include "nanoformer/core/tensor.h"

namespace nf::cpu {

void quantize_row(QuantType type, const float* x, void* blocks, int64_t n);
void dequantize_row(QuantType type, const void* blocks, float* y, int64_t n);

}  // namespace nf::cpu

namespace nf::cpu {

// The whole-tensor forms, threaded over rows (ops/quantized.cpp's tables):
// out's rows quantised from weight (out.rows(), out.cols()) f32 contiguous
void quantize_rows(QuantizedTensor& out, const Tensor& weight);
// out (end - begin, cols) f32 contiguous = rows begin .. end - 1 of w dequantised
void dequantize_rows(const Tensor& out, const QuantizedTensor& w, int64_t begin, int64_t end);
// out (n, cols) f32 contiguous: row i = row ids[i] of w dequantised (ids checked by the caller)
void gather_rows(const Tensor& out, const QuantizedTensor& w, const int64_t* ids, int64_t n);

}  // namespace nf::cpu
