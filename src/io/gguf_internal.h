#pragma once
// Shared by the GGUF reader and writer (include/nanoformer/io/gguf.h has the layout).
#include <cstddef>
#include <cstdint>
#include <string>

#include "nanoformer/io/gguf.h"

namespace nf::io::gguf {

inline constexpr uint32_t kMagic = 0x46554747;  // "GGUF" read as a little-endian u32
inline constexpr uint32_t kVersion = 3;         // written; 2 and 3 are read (they differ only for big-endian files)
inline constexpr uint32_t kDefaultAlignment = 32;
inline constexpr uint32_t kMaxDims = 4;         // GGML_MAX_DIMS
inline constexpr size_t kMaxTensorName = 63;    // GGML_MAX_NAME (64) less the NUL: llama.cpp refuses longer names
inline constexpr const char* kAlignmentKey = "general.alignment";

// GGUF value type numbers.
enum ValueType : uint32_t {
  kU8 = 0, kI8 = 1, kU16 = 2, kI16 = 3, kU32 = 4, kI32 = 5, kF32 = 6, kBool = 7, kString = 8, kArray = 9,
  kU64 = 10, kI64 = 11, kF64 = 12,
};

// "u8", ..., "f64" for a value type number, nullptr for a number GGUF does not define.
const char* value_type_name(uint32_t type);
// The GGUF type number of a value (kArray for arrays) and, for an array, of its items.
uint32_t value_type(const GGUFValue& value);
uint32_t array_item_type(const GGUFValue& value);  // only for arrays

// "<path>: ", the start of every message about a GGUF file.
inline std::string file_context(const std::string& path) { return path + ": "; }

}  // namespace nf::io::gguf
