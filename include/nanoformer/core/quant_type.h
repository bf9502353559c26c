#pragma once
// Weight storage types of llama.cpp (ggml), numbered as GGUF numbers them: the float types (F32,
// the 16-bit floats, and F64, which a KV cache of an f64 model stores), and the block-quantised types, where a row of `cols` values is cut into blocks of
// block_size values and each block is stored as block_bytes bytes (scales + packed integers).
// The layouts and formulas of each block are in src/ops/cpu/quant/quant_blocks.h.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "nanoformer/core/dtype.h"

namespace nf {

enum class QuantType : uint32_t {
  f32 = 0,
  f16 = 1,
  q4_0 = 2,
  q4_1 = 3,
  q5_0 = 6,
  q5_1 = 7,
  q8_0 = 8,
  q8_1 = 9,
  q2_k = 10,
  q3_k = 11,
  q4_k = 12,
  q5_k = 13,
  q6_k = 14,
  q8_k = 15,
  f64 = 28,
  bf16 = 30,
};

struct QuantTypeInfo {
  const char* name;  // "q8_0", as llama.cpp's quantize tool and GGUF tools spell it (lowercase)
  int64_t block_size;  // values per block (1 for the float types)
  int64_t block_bytes;  // bytes per block
};

// The info of a type this engine knows, or nullopt for an id it does not (a GGUF type number).
std::optional<QuantTypeInfo> quant_type_info(uint32_t id);
const QuantTypeInfo& quant_type_info(QuantType type);
const char* quant_type_name(QuantType type);
// "q4_0" / "Q4_0" -> QuantType; throws nf::Error naming the text and the known names.
QuantType quant_type_from_name(std::string_view name);
// Bytes of one row of `cols` values; throws when cols is not a multiple of the block size.
size_t quant_row_bytes(QuantType type, int64_t cols);
bool is_block_quantized(QuantType type);  // not f32 / f16 / bf16 / f64
// A float type's rows as a dtype's values: f32, f64, f16, bf16 -> that dtype; nullopt for a
// block-quantised type. And back: the float type that holds a floating dtype's values exactly.
std::optional<DType> float_type_dtype(QuantType type);
QuantType float_type_of(DType dtype);

}  // namespace nf
