#pragma once
// GGUF, llama.cpp's model file (ggml/docs/gguf.md), version 2 and 3, little-endian:
//   "GGUF" u32 version | u64 tensor_count | u64 kv_count
//   kv_count x (string key, u32 value_type, value)        strings are u64 length + bytes (no NUL)
//   tensor_count x (string name, u32 n_dims, u64 dims[n_dims] (innermost first), u32 type, u64 offset)
//   padding to general.alignment (default 32), then the data section; each tensor at its offset
//   (a multiple of the alignment) from the data section's start.
// Value types: 0 u8, 1 i8, 2 u16, 3 i16, 4 u32, 5 i32, 6 f32, 7 bool, 8 string,
// 9 array (u32 item type, u64 count, items), 10 u64, 11 i64, 12 f64.
// Reading memory-maps the file and validates every count, length and offset against the file's
// size before anything is allocated from it; tensors are views into the mapping (used in place).
// Every error is one line that starts with the path and names the key or tensor at fault.
// Writing goes to a temporary file that is renamed into place; its bytes are those of the `gguf`
// Python package's GGUFWriter given the same keys and tensors in the same order.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "nanoformer/core/quant_type.h"
#include "nanoformer/core/quantized_tensor.h"
#include "nanoformer/core/tensor.h"

namespace nf::io {

// One metadata value. Arrays hold one vector of their item type (arrays of arrays are refused, as
// llama.cpp refuses them).
using GGUFValue = std::variant<uint8_t, int8_t, uint16_t, int16_t, uint32_t, int32_t, float, bool, std::string,
                               uint64_t, int64_t, double, std::vector<uint8_t>, std::vector<int8_t>,
                               std::vector<uint16_t>, std::vector<int16_t>, std::vector<uint32_t>,
                               std::vector<int32_t>, std::vector<float>, std::vector<bool>,
                               std::vector<std::string>, std::vector<uint64_t>, std::vector<int64_t>,
                               std::vector<double>>;

// "u32", "string", "array of f32": the GGUF type of a value, for messages.
std::string gguf_value_type_name(const GGUFValue& value);

struct GGUFTensorInfo {
  std::string name;
  QuantType type = QuantType::f32;
  std::vector<int64_t> shape;  // outermost first, as a Tensor's (GGUF stores innermost first)
  uint64_t offset = 0;         // from the data section's start
  size_t nbytes = 0;
};

// Whether `path` is a regular file that starts with the bytes "GGUF" (reads 4 bytes; false when it
// cannot be read): how model and tokenizer loaders tell a GGUF file from others whatever its name.
bool is_gguf_file(const std::string& path);

class GGUFFile {
 public:
  // Opens and validates `path`; throws nf::Error naming the file and the field at fault.
  static GGUFFile open(const std::string& path);

  const std::string& path() const { return path_; }
  uint32_t version() const { return version_; }
  uint32_t alignment() const { return alignment_; }  // general.alignment, 32 when absent
  const std::map<std::string, GGUFValue>& metadata() const { return metadata_; }
  const std::vector<std::string>& keys() const { return keys_; }  // in file order
  bool has(const std::string& key) const { return metadata_.count(key) != 0; }
  // Typed metadata: throws naming the file and key when it is missing or of another type. Integer
  // keys accept any integer type whose value fits (writers differ: u32 or i32, u64).
  std::string get_string(const std::string& key) const;
  int64_t get_int(const std::string& key) const;
  double get_float(const std::string& key) const;   // f32 or f64
  bool get_bool(const std::string& key) const;
  const GGUFValue& get(const std::string& key) const;

  const std::vector<GGUFTensorInfo>& tensors() const { return tensors_; }  // in file order
  bool contains(const std::string& name) const;
  const GGUFTensorInfo& tensor(const std::string& name) const;  // throws naming file and tensor
  // The tensor's bytes in place (a view that keeps the mapping alive): a 2-D (or higher, rows
  // flattened) tensor of a block type as a QuantizedTensor; an f32 / f16 / bf16 one as a Tensor
  // (dtype f32 / f16 / bf16, copied only when the mapping's alignment does not suit it).
  // Any type (f32 / f16 / bf16 too) reads as a QuantizedTensor of (product of the outer sizes, the
  // innermost size); only f32 / f16 / bf16 read as a Tensor. Views stay in place unless the bytes
  // are not aligned for the type (a file with a small general.alignment): then they are copied.
  QuantizedTensor quantized(const std::string& name) const;
  Tensor dense(const std::string& name) const;
  // Drops `view`'s pages (a view of this file's mapping, as quantized() gives; anything else is left
  // alone) from resident memory: touched again, they are read back from the file. For a weight
  // the kernels read in another layout (QuantizedTensor::panels), so the process holds it once.
  void release(const QuantizedTensor& view) const;

 private:
  std::string path_;
  uint32_t version_ = 0;
  uint32_t alignment_ = 32;
  std::shared_ptr<void> mapping_;
  const unsigned char* data_ = nullptr;  // start of the data section
  size_t mapped_bytes_ = 0;
  std::map<std::string, GGUFValue> metadata_;
  std::vector<std::string> keys_;
  std::vector<GGUFTensorInfo> tensors_;
  std::map<std::string, size_t> index_;
};

// What a GGUF writer is given: metadata in order, then tensors (dense or quantised) in order.
struct GGUFTensorSource {
  std::string name;
  Tensor dense;               // f32 / f16 / bf16, any shape; or
  QuantizedTensor quantized;  // (rows, cols), written with shape (rows, cols)
};
// Writes version 3, keys in the order given, then the tensor infos, then each tensor padded with
// zeros to the alignment, atomically (temporary + rename). The alignment is the metadata's
// general.alignment (a u32 power of two, as GGUFWriter.add_custom_alignment writes it), else 32.
// Names must be unique, tensor names shorter than 64 bytes (llama.cpp's limit), dense tensors
// f32 / f16 / bf16 of at most 4 dimensions; everything is checked before the file is created.
void write_gguf(const std::string& path, const std::vector<std::pair<std::string, GGUFValue>>& metadata,
                const std::vector<GGUFTensorSource>& tensors);

}  // namespace nf::io
