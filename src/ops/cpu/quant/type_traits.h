#pragma once
// One entry per weight type (core/quant_type.h) with what the CPU's kernels need of it, in one
// table (type_traits.cpp), as ggml-cpu's type_traits_cpu: its reference quantiser and dequantiser,
// the block its activations are quantised to for the integer products, its decode product and its
// prefill GEMM where it has them. Its block size and bytes are core's (info()). The entries hold
// instantiated kernels (type_kernels.h): a caller looks its type up once per call or row range,
// never per block. A new type: its block (quant_blocks.h), its kernels, one entry.
#include <cstdint>
#include <span>

#include "nanoformer/core/quant_type.h"
#include "ops/cpu/quant/gemv_tile.h"
#include "ops/cpu/quant/quant_blocks.h"

namespace nf::cpu {

struct QuantTypeTraits {
  QuantType type;
  // nb blocks of x (nb values for the float types) into blocks of the type, and back (quant_rows.cpp)
  void (*quantize)(const float* x, void* blocks, int64_t nb);
  void (*dequantize)(const void* blocks, float* y, int64_t nb);
  // the activations' block (activation_quant.h): 32 (Q8_0's formula), 256 (Q8_K's), or 0 (x used
  // unquantised: the float types; or no product)
  int64_t activation_block;
  // decode's product (quant_gemv.h): each base's rows of W times m rows of x; null: none
  void (*gemv)(std::span<TileArgs> bases, int64_t m, bool scalar);
  // prefill's integer GEMM (quant_gemm.h) over x in blocks of activation_block values (Q8_0's for
  // 32, Q8_K's for 256: quantize_activation_blocks); null: none (W is dequantised)
  void (*gemm)(const void* w, int64_t n, int64_t k, const void* xq, int64_t m, float* y, int64_t ldy);
  // its panels (panels.h), where it has them: W's rows packed once (pack_panels: n rows of k values
  // into ceil(n / 16) panels), and decode's product and prefill's GEMM over them; null: none
  void (*pack_panels)(const void* rows, int64_t n, int64_t k, void* panels) = nullptr;
  void (*gemv_panels)(std::span<TileArgs> bases, int64_t m, bool scalar) = nullptr;
  void (*gemm_panels)(const void* panels, int64_t n, int64_t k, const void* xq, int64_t m, float* y, int64_t ldy) = nullptr;
  // one row's blocks back from the panels (the embedding's look-up of a tied head)
  void (*unpack_panel_row)(const void* panels, int64_t k, int64_t row, void* blocks) = nullptr;

  const QuantTypeInfo& info() const { return quant_type_info(type); }
};

// The entry of `type`; a type the engine does not know is an error (core's, naming its number).
const QuantTypeTraits& quant_traits(QuantType type);

// quant_traits(type).activation_block
int64_t activation_block(QuantType weight_type);

}  // namespace nf::cpu
