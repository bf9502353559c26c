// Names and block sizes of llama.cpp's weight types, by GGUF type number.
#include "nanoformer/core/quant_type.h"

#include <algorithm>
#include <cctype>
#include <string>
#include <utility>

#include "nanoformer/core/error.h"

namespace nf {
namespace {

struct Known {
  QuantType type;
  QuantTypeInfo info;
};

// block bytes: see src/ops/cpu/quant/quant_blocks.h (static_asserts there keep them in step)
constexpr Known kKnown[] = {
    {QuantType::f32, {"f32", 1, 4}},       {QuantType::f16, {"f16", 1, 2}},
    {QuantType::bf16, {"bf16", 1, 2}},     {QuantType::q4_0, {"q4_0", 32, 18}},
    {QuantType::q4_1, {"q4_1", 32, 20}},   {QuantType::q5_0, {"q5_0", 32, 22}},
    {QuantType::q5_1, {"q5_1", 32, 24}},   {QuantType::q8_0, {"q8_0", 32, 34}},
    {QuantType::q8_1, {"q8_1", 32, 36}},   {QuantType::q4_k, {"q4_k", 256, 144}},
    {QuantType::q6_k, {"q6_k", 256, 210}}, {QuantType::q8_k, {"q8_k", 256, 292}},
    {QuantType::q5_k, {"q5_k", 256, 176}}, {QuantType::q3_k, {"q3_k", 256, 110}},
    {QuantType::f64, {"f64", 1, 8}},
};

// the float types and the dtypes of their values
constexpr std::pair<QuantType, DType> kFloatTypes[] = {
    {QuantType::f32, DType::f32}, {QuantType::f64, DType::f64}, {QuantType::f16, DType::f16}, {QuantType::bf16, DType::bf16}};

}  // namespace

std::optional<QuantTypeInfo> quant_type_info(uint32_t id) {
  for (const Known& k : kKnown)
    if (static_cast<uint32_t>(k.type) == id) return k.info;
  return std::nullopt;
}

const QuantTypeInfo& quant_type_info(QuantType type) {
  for (const Known& k : kKnown)
    if (k.type == type) return k.info;
  NF_FAIL("quant type: unknown type number ", static_cast<uint32_t>(type));
}

const char* quant_type_name(QuantType type) { return quant_type_info(type).name; }

QuantType quant_type_from_name(std::string_view name) {
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  std::string known;
  for (const Known& k : kKnown) {
    if (lower == k.info.name) return k.type;
    known += known.empty() ? "" : ", ";
    known += k.info.name;
  }
  NF_FAIL("unknown weight type '", name, "' (known: ", known, ")");
}

size_t quant_row_bytes(QuantType type, int64_t cols) {
  const QuantTypeInfo& info = quant_type_info(type);
  NF_CHECK(cols >= 0 && cols % info.block_size == 0, "quant type ", info.name, ": a row of ", cols,
           " values is not a whole number of blocks of ", info.block_size);
  return static_cast<size_t>(cols / info.block_size) * static_cast<size_t>(info.block_bytes);
}

bool is_block_quantized(QuantType type) { return !float_type_dtype(type); }

std::optional<DType> float_type_dtype(QuantType type) {
  for (const auto& [t, dtype] : kFloatTypes)
    if (t == type) return dtype;
  return std::nullopt;
}

QuantType float_type_of(DType dtype) {
  for (const auto& [type, d] : kFloatTypes)
    if (d == dtype) return type;
  NF_FAIL("quant type: ", dtype_name(dtype), " is not a floating dtype");
}

}  // namespace nf
