#pragma once
// Quantising and dequantising rows of every weight type (core/quant_type.h), the reference
// formulas of gguf.quants (src/ops/cpu/quant_blocks.h gives each). n is a multiple of the block size.
#include <cstdint>

#include "nanoformer/core/quant_type.h"

namespace nf::cpu {

void quantize_row(QuantType type, const float* x, void* blocks, int64_t n);
void dequantize_row(QuantType type, const void* blocks, float* y, int64_t n);

}  // namespace nf::cpu
