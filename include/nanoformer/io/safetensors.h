#pragma once
// safetensors: an 8-byte little-endian header length N, N bytes of JSON
//   {"name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, ..., "__metadata__": {...}}
// then the tensor bytes (offsets relative to the end of the header). Reading memory-maps the file
// and validates the header before any tensor is touched: known dtypes, non-negative integer shapes,
// offsets that match shape x dtype size and, as the reference reader demands, tile the data section
// exactly (no overlap, gap or trailing bytes); every failure is an nf::Error naming the file and,
// where one is at fault, the tensor. Writing goes to "<path>.tmp.<pid>", which is fsynced and
// renamed into place, so a crash never leaves a half-written checkpoint.
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "nanoformer/core/tensor.h"

namespace nf::io {

struct TensorEntry {
  std::string name;
  DType dtype = DType::f32;
  Shape shape;
  size_t begin = 0;  // byte offsets into the data section
  size_t end = 0;
};

class SafetensorsFile {
 public:
  // Opens and validates `path`; throws nf::Error naming the file and the problem.
  static SafetensorsFile open(const std::string& path);

  const std::string& path() const { return path_; }
  const std::vector<TensorEntry>& entries() const { return entries_; }  // in data order
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  bool contains(const std::string& name) const;
  const TensorEntry& entry(const std::string& name) const;  // throws naming file and tensor
  // A view into the mapping (no copy) that keeps the mapping alive while it lives. The mapping is
  // copy-on-write: writing through the view copies the pages written, the file stays unchanged.
  // When the tensor's bytes are not aligned for its dtype (a header whose length is not a multiple
  // of 8, or tensors of mixed item sizes in an unaligned order) the result is an aligned copy.
  Tensor view(const std::string& name) const;
  // An owned, contiguous copy.
  Tensor load(const std::string& name) const;

 private:
  std::string path_;
  std::shared_ptr<void> mapping_;  // the mmap, unmapped when the last view dies
  const unsigned char* data_ = nullptr;  // start of the data section
  std::vector<TensorEntry> entries_;
  std::map<std::string, size_t> index_;  // name -> position in entries_
  std::map<std::string, std::string> metadata_;
};

// Loads every tensor (owned copies).
std::map<std::string, Tensor> load_safetensors(const std::string& path);

// Writes tensors (any layout; written contiguous) in the order given, atomically, with the header
// padded with spaces to a multiple of 8 bytes (as the Python writer). Views of the file stay
// zero-copy when tensors with larger item sizes come first (the reference writer sorts that way).
// Names must be unique, non-empty and not "__metadata__"; tensors must be on the CPU.
void save_safetensors(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
                      const std::map<std::string, std::string>& metadata = {});
void save_safetensors(const std::string& path, const std::map<std::string, Tensor>& tensors,
                      const std::map<std::string, std::string>& metadata = {});
// A braced list, {{"w", w}, {"b", b}}, in the order given (the two overloads above would be ambiguous).
void save_safetensors(const std::string& path, std::initializer_list<std::pair<std::string, Tensor>> tensors,
                      const std::map<std::string, std::string>& metadata = {});

// safetensors dtype codes: "F32" <-> DType::f32, "BF16", "F16", "F64", "I32", "I64", "BOOL".
const char* safetensors_dtype_name(DType dtype);
DType dtype_from_safetensors(const std::string& code, const std::string& context);

}  // namespace nf::io
