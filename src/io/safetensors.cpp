// Reading safetensors: map the file, validate the whole header against the file size, then hand
// out views into the mapping (or owned copies). Nothing in the data section is read before the
// header has been checked, and no access ever goes past the end of the mapping.
#include "nanoformer/io/safetensors.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "nanoformer/core/error.h"
#include "io/mapped_file.h"
#include "io/safetensors_internal.h"
#include "util/json_input.h"

static_assert(std::endian::native == std::endian::little,
              "safetensors stores little-endian data; a big-endian host would need byte swapping");

namespace nf::io {
namespace {

using json = nlohmann::json;
using util::json_excerpt;

constexpr uint64_t kMaxHeaderBytes = 100'000'000;  // the reference (Rust) reader's limit
// A safetensors header nests three levels ({name: {"shape": [...]}}); allow slack for unknown
// fields but refuse pathological nesting, which would only cost memory.
constexpr int kMaxJsonDepth = 16;

json parse_header(const std::string& path, const char* text, size_t length) {
  std::set<std::string> top_level_keys;
  // Refuses deep nesting and duplicate top-level keys (a JSON object would silently keep the last).
  const json::parser_callback_t guard = [&](int depth, json::parse_event_t event, json& parsed) {
    if ((event == json::parse_event_t::object_start || event == json::parse_event_t::array_start) &&
        depth >= kMaxJsonDepth) {
      NF_FAIL(file_context(path), "header nests deeper than ", kMaxJsonDepth, " levels");
    }
    if (event == json::parse_event_t::key && depth == 1 && !top_level_keys.insert(parsed.get<std::string>()).second) {
      NF_FAIL(file_context(path), "header names '", parsed.get<std::string>(), "' twice");
    }
    return true;
  };
  // The JSON parser would stop at a NUL byte as if the input ended there.
  if (const void* nul = std::memchr(text, '\0', length)) {
    NF_FAIL(file_context(path), "header is not valid JSON (NUL byte at header offset ",
            static_cast<const char*>(nul) - text, ")");
  }
  try {
    return json::parse(text, text + length, guard);
  } catch (const json::exception& e) {
    NF_FAIL(file_context(path), "header is not valid JSON (", e.what(), ")");
  }
}

uint64_t non_negative_integer(const json& v, bool& ok) {
  ok = v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0);
  return ok ? v.get<uint64_t>() : 0;
}

TensorEntry parse_entry(const std::string& path, const std::string& name, const json& info, size_t data_size) {
  const std::string where = file_context(path) + "tensor '" + name + "': ";
  NF_CHECK(info.is_object(), where, "entry is not a JSON object but ", json_excerpt(info));
  for (const char* field : {"dtype", "shape", "data_offsets"}) {
    NF_CHECK(info.contains(field), where, "entry has no \"", field, "\"");
  }
  TensorEntry e;
  e.name = name;

  const json& dtype = info["dtype"];
  NF_CHECK(dtype.is_string(), where, "dtype is not a string but ", json_excerpt(dtype));
  e.dtype = dtype_from_safetensors(dtype.get<std::string>(), where);

  const json& shape = info["shape"];
  NF_CHECK(shape.is_array(), where, "shape is not an array but ", json_excerpt(shape));
  // The product of the non-zero sizes must fit int64 even when a zero makes the element count 0:
  // it bounds the contiguous strides and every partial product of the sizes.
  uint64_t numel = 1, nonzero_product = 1;
  for (const json& d : shape) {
    bool ok = false;
    const uint64_t size = non_negative_integer(d, ok);
    NF_CHECK(ok, where, "shape ", json_excerpt(shape), " must hold non-negative integers");
    NF_CHECK(!__builtin_mul_overflow(nonzero_product, size == 0 ? 1 : size, &nonzero_product) &&
                 nonzero_product <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()),
             where, "shape ", json_excerpt(shape), " overflows");
    numel *= size;
    e.shape.push_back(static_cast<int64_t>(size));
  }
  uint64_t nbytes = 0;
  NF_CHECK(!__builtin_mul_overflow(numel, dtype_size(e.dtype), &nbytes) &&
               nbytes <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()),
           where, "shape ", shape_str(e.shape), " overflows");

  const json& offsets = info["data_offsets"];
  bool begin_ok = false, end_ok = false;
  const bool pair = offsets.is_array() && offsets.size() == 2;
  const uint64_t begin = pair ? non_negative_integer(offsets[0], begin_ok) : 0;
  const uint64_t end = pair ? non_negative_integer(offsets[1], end_ok) : 0;
  NF_CHECK(pair && begin_ok && end_ok, where, "data_offsets ", json_excerpt(offsets),
           " must be two non-negative integers [begin, end]");
  NF_CHECK(begin <= end, where, "data_offsets [", begin, ", ", end, "] end before they begin");
  NF_CHECK(end <= data_size, where, "data_offsets [", begin, ", ", end, "] run past the end of the ", data_size,
           "-byte data section (file truncated?)");
  NF_CHECK(end - begin == nbytes, where, "data_offsets [", begin, ", ", end, "] hold ", end - begin,
           " bytes but shape ", shape_str(e.shape), " of ", safetensors_dtype_name(e.dtype), " needs ", nbytes);
  e.begin = static_cast<size_t>(begin);
  e.end = static_cast<size_t>(end);
  return e;
}

std::map<std::string, std::string> parse_metadata(const std::string& path, const json& value) {
  NF_CHECK(value.is_object(), file_context(path), "__metadata__ is not a JSON object but ", json_excerpt(value));
  std::map<std::string, std::string> out;
  for (const auto& [key, v] : value.items()) {
    NF_CHECK(v.is_string(), file_context(path), "__metadata__ value of '", key, "' is not a string but ",
             json_excerpt(v));
    out.emplace(key, v.get<std::string>());
  }
  return out;
}

// As the reference reader: sorted by offsets, the tensors must tile the data section exactly,
// with neither overlaps nor gaps nor trailing bytes.
void check_tiling(const std::string& path, const std::vector<TensorEntry>& sorted, size_t data_size) {
  size_t covered = 0;
  const TensorEntry* previous = nullptr;
  for (const TensorEntry& e : sorted) {
    NF_CHECK(e.begin >= covered, file_context(path), "tensors '", previous->name, "' [", previous->begin, ", ",
             previous->end, ") and '", e.name, "' [", e.begin, ", ", e.end, ") overlap");
    NF_CHECK(e.begin == covered, file_context(path), "bytes [", covered, ", ", e.begin,
             ") of the data section belong to no tensor (gap before '", e.name, "')");
    covered = e.end;
    previous = &e;
  }
  NF_CHECK(covered == data_size, file_context(path), "the data section has ", data_size,
           " bytes but the tensors end at byte ", covered, " (trailing bytes belong to no tensor)");
}

// bool is only defined for the bytes 0 and 1; anything else would be undefined behaviour later.
void check_bool_bytes(const std::string& path, const TensorEntry& e, const unsigned char* bytes) {
  if (e.dtype != DType::boolean) return;
  for (size_t i = 0; i < e.end - e.begin; ++i) {
    NF_CHECK(bytes[i] <= 1, file_context(path), "tensor '", e.name, "': BOOL element ", i, " is byte ",
             static_cast<int>(bytes[i]), ", not 0 or 1");
  }
}

}  // namespace

std::string file_context(const std::string& path) { return "safetensors: " + path + ": "; }

const char* safetensors_dtype_name(DType dtype) {
  switch (dtype) {
    case DType::f32: return "F32";
    case DType::f64: return "F64";
    case DType::bf16: return "BF16";
    case DType::f16: return "F16";
    case DType::i32: return "I32";
    case DType::i64: return "I64";
    case DType::boolean: return "BOOL";
  }
  return "?";
}

DType dtype_from_safetensors(const std::string& code, const std::string& context) {
  for (DType t : {DType::f32, DType::f64, DType::bf16, DType::f16, DType::i32, DType::i64, DType::boolean}) {
    if (code == safetensors_dtype_name(t)) return t;
  }
  NF_FAIL(context, "unknown dtype '", code, "' (supported: F32, F64, BF16, F16, I32, I64, BOOL)");
}

SafetensorsFile SafetensorsFile::open(const std::string& path) {
  SafetensorsFile file;
  file.path_ = path;
  const MappedFile mapped = map_file(path, file_context(path));
  const size_t file_size = mapped.size;
  NF_CHECK(file_size >= 8, file_context(path), "file is ", file_size,
           " bytes, too short for the 8-byte header length (truncated?)");
  file.mapping_ = mapped.mapping;
  const unsigned char* bytes = mapped.bytes();

  uint64_t header_size = 0;
  for (int i = 7; i >= 0; --i) header_size = (header_size << 8) | bytes[i];
  NF_CHECK(header_size <= kMaxHeaderBytes, file_context(path), "header length ", header_size, " exceeds the ",
           kMaxHeaderBytes, "-byte limit (corrupt length prefix?)");
  NF_CHECK(header_size <= file_size - 8, file_context(path), "header length ", header_size, " exceeds the ",
           file_size - 8, " bytes after the length prefix (file truncated?)");

  const json header = parse_header(path, reinterpret_cast<const char*>(bytes + 8), header_size);
  NF_CHECK(header.is_object(), file_context(path), "header is not a JSON object but ", json_excerpt(header));

  const size_t data_size = file_size - 8 - static_cast<size_t>(header_size);
  for (const auto& [name, value] : header.items()) {
    if (name == "__metadata__") {
      file.metadata_ = parse_metadata(path, value);
    } else {
      file.entries_.push_back(parse_entry(path, name, value, data_size));
    }
  }
  std::sort(file.entries_.begin(), file.entries_.end(), [](const TensorEntry& a, const TensorEntry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end != b.end ? a.end < b.end : a.name < b.name;
  });
  check_tiling(path, file.entries_, data_size);
  for (size_t i = 0; i < file.entries_.size(); ++i) file.index_.emplace(file.entries_[i].name, i);
  file.data_ = bytes + 8 + header_size;
  return file;
}

bool SafetensorsFile::contains(const std::string& name) const { return index_.count(name) != 0; }

const TensorEntry& SafetensorsFile::entry(const std::string& name) const {
  const auto it = index_.find(name);
  if (it != index_.end()) return entries_[it->second];
  std::string known;
  for (size_t i = 0; i < entries_.size() && i < 8; ++i) known += (i ? ", " : "") + entries_[i].name;
  if (entries_.size() > 8) known += ", ...";
  NF_FAIL(file_context(path_), "no tensor named '", name, "' (the file holds ", entries_.size(), " tensors",
          entries_.empty() ? "" : ": ", known, ")");
}

Tensor SafetensorsFile::view(const std::string& name) const {
  const TensorEntry& e = entry(name);
  const unsigned char* bytes = data_ + e.begin;
  // A tensor whose bytes are not aligned for its dtype (an unpadded header, or an unaligned
  // order of tensors) cannot be read through typed pointers: give an aligned copy instead.
  if (reinterpret_cast<uintptr_t>(bytes) % dtype_size(e.dtype) != 0) return load(name);
  check_bool_bytes(path_, e, bytes);
  auto storage = std::make_shared<Storage>(const_cast<unsigned char*>(bytes), e.end - e.begin, mapping_);
  Tensor t = Tensor::from_storage(std::move(storage), e.shape, contiguous_strides(e.shape), 0, e.dtype);
  t.set_name(e.name);
  return t;
}

Tensor SafetensorsFile::load(const std::string& name) const {
  const TensorEntry& e = entry(name);
  const unsigned char* bytes = data_ + e.begin;
  check_bool_bytes(path_, e, bytes);
  Tensor t = Tensor::empty(e.shape, e.dtype);
  if (e.end > e.begin) std::memcpy(t.raw_data(), bytes, e.end - e.begin);
  t.set_name(e.name);
  return t;
}

std::map<std::string, Tensor> load_safetensors(const std::string& path) {
  const SafetensorsFile file = SafetensorsFile::open(path);
  std::map<std::string, Tensor> out;
  for (const TensorEntry& e : file.entries()) out.emplace(e.name, file.load(e.name));
  return out;
}

}  // namespace nf::io
