// Reading GGUF: map the file, walk the header with a cursor that checks every length and count
// against the bytes left before it reads or allocates anything, then check each tensor's type,
// shape and place in the data section. Tensors are handed out as views into the mapping.
#include "nanoformer/io/gguf.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <numeric>
#include <ostream>

#include "nanoformer/core/error.h"
#include "io/gguf_internal.h"
#include "io/mapped_file.h"

static_assert(std::endian::native == std::endian::little,
              "GGUF files are little-endian here; a big-endian host would need byte swapping");

namespace nf::io {
namespace {

using gguf::file_context;

constexpr size_t kHeaderBytes = 4 + 4 + 8 + 8;        // magic, version, tensor count, key count
constexpr size_t kMinKeyValueBytes = 8 + 4 + 1;       // key length, value type, the smallest value
constexpr size_t kMinTensorInfoBytes = 8 + 4 + 4 + 8;  // name length, n_dims, type, offset
constexpr uint64_t kInt64Max = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());

// GGUF value types in the order of GGUFValue's scalar alternatives (its arrays follow in the same order).
constexpr uint32_t kVariantTypes[] = {gguf::kU8,  gguf::kI8,     gguf::kU16, gguf::kI16, gguf::kU32, gguf::kI32,
                                      gguf::kF32, gguf::kBool, gguf::kString, gguf::kU64, gguf::kI64, gguf::kF64};
constexpr size_t kScalarAlternatives = std::size(kVariantTypes);

// A name from the file as it appears in a message: control bytes escaped, long names cut, so that
// a message stays one readable line whatever the file holds.
std::string shown(const std::string& name) {
  constexpr size_t kMaxShown = 96;
  std::string out;
  for (size_t i = 0; i < name.size() && i < kMaxShown; ++i) {
    const auto c = static_cast<unsigned char>(name[i]);
    if (c < 0x20 || c == 0x7f) {
      static const char* kHex = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  if (name.size() > kMaxShown) out += "...";
  return out;
}

// ggml's name of a tensor type number, including the types nanoformer does not read (for the
// message that refuses them); nullptr for a number ggml never defined.
const char* ggml_type_name(uint32_t type) {
  static const char* const kNames[] = {
      "f32",     "f16",    "q4_0",    "q4_1",  "q4_2",   "q4_3",   "q5_0",     "q5_1",     "q8_0",     "q8_1",
      "q2_k",    "q3_k",   "q4_k",    "q5_k",  "q6_k",   "q8_k",   "iq2_xxs",  "iq2_xs",   "iq3_xxs",  "iq1_s",
      "iq4_nl",  "iq3_s",  "iq2_s",   "iq4_xs", "i8",    "i16",    "i32",      "i64",      "f64",      "iq1_m",
      "bf16",    "q4_0_4_4", "q4_0_4_8", "q4_0_8_8", "tq1_0", "tq2_0", "iq4_nl_4_4", "iq4_nl_4_8", "iq4_nl_8_8",
      "mxfp4",   "nvfp4",  "q1_0"};
  return type < std::size(kNames) ? kNames[type] : nullptr;
}

// What is being read, for messages: "key 'general.name'", or an item of an array "... item 3"
// (the item number is kept apart so that reading a 150,000-token vocabulary builds no strings).
struct Field {
  Field(const std::string& field, int64_t index = -1) : name(field), item(index) {}  // implicit from a name
  const std::string& name;
  int64_t item;
};

std::ostream& operator<<(std::ostream& os, const Field& f) {
  os << f.name;
  if (f.item >= 0) os << " item " << f.item;
  return os;
}

// Reads the header front to back. Every read first checks that its bytes are there.
class Cursor {
 public:
  Cursor(const std::string& path, const unsigned char* bytes, size_t size)
      : path_(path), bytes_(bytes), size_(size) {}

  size_t pos() const { return pos_; }
  size_t left() const { return size_ - pos_; }

  // Throws unless `n` more bytes follow; `what` names the field being read.
  void need(size_t n, const Field& what) const {
    NF_CHECK(n <= left(), file_context(path_), what, " needs ", n, " bytes at offset ", pos_, " but the file ends ",
             left(), " bytes later (truncated?)");
  }

  template <class T>
  T read(const Field& what) {
    need(sizeof(T), what);
    return read_unchecked<T>();
  }

  template <class T>
  T read_unchecked() {
    T value;
    std::memcpy(&value, bytes_ + pos_, sizeof value);
    pos_ += sizeof value;
    return value;
  }

  // A u64 length and that many bytes.
  std::string read_string(const Field& what) {
    const uint64_t length = read<uint64_t>(what);
    NF_CHECK(length <= left(), file_context(path_), what, " is ", length, " bytes long but the file ends ", left(),
             " bytes after its length (truncated or corrupt?)");
    std::string s(reinterpret_cast<const char*>(bytes_ + pos_), static_cast<size_t>(length));
    pos_ += static_cast<size_t>(length);
    return s;
  }

 private:
  const std::string& path_;
  const unsigned char* bytes_;
  size_t size_;
  size_t pos_ = 0;
};

// bool is a byte that must be 0 or 1 (anything else would be undefined behaviour as a C++ bool).
bool read_bool(Cursor& in, const std::string& path, const Field& field) {
  const auto byte = in.read_unchecked<uint8_t>();
  NF_CHECK(byte <= 1, file_context(path), field, " holds the bool byte ", static_cast<int>(byte), ", not 0 or 1");
  return byte == 1;
}

template <class T>
T read_scalar(Cursor& in, const std::string& path, const std::string& field) {
  if constexpr (std::is_same_v<T, std::string>) {
    return in.read_string(field);
  } else {
    in.need(sizeof(T), field);
    if constexpr (std::is_same_v<T, bool>) {
      return read_bool(in, path, field);
    } else {
      return in.read_unchecked<T>();
    }
  }
}

// An array of `count` items of T: the count is checked against the bytes left (each string takes
// at least its 8-byte length) before the vector is reserved.
template <class T>
GGUFValue read_array(Cursor& in, const std::string& path, const std::string& field, uint64_t count,
                     const char* item_name) {
  const size_t item_bytes = std::is_same_v<T, std::string> ? 8 : sizeof(T);
  NF_CHECK(count <= in.left() / item_bytes, file_context(path), field, " is an array of ", count, " ", item_name,
           ", which needs at least ", item_bytes, " bytes each, but the file ends ", in.left(),
           " bytes later (truncated or corrupt?)");
  std::vector<T> items;
  // Fixed-size items take no more memory than the file's bytes; strings grow as they are read.
  if constexpr (!std::is_same_v<T, std::string> && !std::is_same_v<T, bool>) items.reserve(static_cast<size_t>(count));
  for (uint64_t i = 0; i < count; ++i) {
    if constexpr (std::is_same_v<T, std::string>) {
      items.push_back(in.read_string(Field(field, static_cast<int64_t>(i))));
    } else if constexpr (std::is_same_v<T, bool>) {
      items.push_back(read_bool(in, path, Field(field, static_cast<int64_t>(i))));
    } else {
      items.push_back(in.read_unchecked<T>());
    }
  }
  return items;
}

// Calls fn(T{}) with the C++ type of a scalar GGUF value type.
template <class F>
auto with_scalar_type(uint32_t type, F&& fn) {
  switch (type) {
    case gguf::kU8: return fn(uint8_t{});
    case gguf::kI8: return fn(int8_t{});
    case gguf::kU16: return fn(uint16_t{});
    case gguf::kI16: return fn(int16_t{});
    case gguf::kU32: return fn(uint32_t{});
    case gguf::kI32: return fn(int32_t{});
    case gguf::kF32: return fn(float{});
    case gguf::kBool: return fn(bool{});
    case gguf::kString: return fn(std::string{});
    case gguf::kU64: return fn(uint64_t{});
    case gguf::kI64: return fn(int64_t{});
    case gguf::kF64: return fn(double{});
  }
  NF_FAIL("gguf: not a scalar value type ", type);  // callers check first
}

GGUFValue read_value(Cursor& in, const std::string& path, const std::string& field) {
  const uint32_t type = in.read<uint32_t>(field + " value type");
  NF_CHECK(gguf::value_type_name(type) != nullptr, file_context(path), field, " has value type ", type,
           ", which GGUF does not define (0-12)");
  if (type != gguf::kArray) {
    return with_scalar_type(type, [&](auto t) -> GGUFValue { return read_scalar<decltype(t)>(in, path, field); });
  }
  const uint32_t item_type = in.read<uint32_t>(field + " array item type");
  NF_CHECK(gguf::value_type_name(item_type) != nullptr, file_context(path), field, " is an array of value type ",
           item_type, ", which GGUF does not define (0-12)");
  NF_CHECK(item_type != gguf::kArray, file_context(path), field,
           " is an array of arrays, which nanoformer (like llama.cpp) does not read");
  const uint64_t count = in.read<uint64_t>(field + " array length");
  return with_scalar_type(item_type, [&](auto t) {
    return read_array<decltype(t)>(in, path, field, count, gguf::value_type_name(item_type));
  });
}

uint32_t read_alignment(const std::string& path, const std::map<std::string, GGUFValue>& metadata) {
  const auto it = metadata.find(gguf::kAlignmentKey);
  if (it == metadata.end()) return gguf::kDefaultAlignment;
  const auto* alignment = std::get_if<uint32_t>(&it->second);
  NF_CHECK(alignment != nullptr, file_context(path), gguf::kAlignmentKey, " is ", gguf_value_type_name(it->second),
           ", not u32");
  NF_CHECK(std::has_single_bit(*alignment), file_context(path), gguf::kAlignmentKey, " is ", *alignment,
           ", not a power of two");
  return *alignment;
}

// One tensor info: name, dimensions (innermost first), type, offset; its shape and byte count checked.
GGUFTensorInfo read_tensor_info(Cursor& in, const std::string& path, uint64_t index) {
  GGUFTensorInfo info;
  info.name = in.read_string("tensor #" + std::to_string(index) + " name");
  NF_CHECK(!info.name.empty(), file_context(path), "tensor #", index, " has an empty name");
  const std::string field = "tensor '" + shown(info.name) + "'";
  const uint32_t n_dims = in.read<uint32_t>(field + " n_dims");
  NF_CHECK(n_dims <= gguf::kMaxDims, file_context(path), field, " has ", n_dims, " dimensions; GGUF allows at most ",
           gguf::kMaxDims);
  in.need(8 * n_dims + 4 + 8, field + " (dimensions, type and offset)");
  uint64_t dims[gguf::kMaxDims] = {1, 1, 1, 1};
  for (uint32_t d = 0; d < n_dims; ++d) dims[d] = in.read_unchecked<uint64_t>();
  const uint32_t type = in.read_unchecked<uint32_t>();
  info.offset = in.read_unchecked<uint64_t>();

  std::string dims_text = "[";
  for (uint32_t d = 0; d < n_dims; ++d) dims_text += (d ? ", " : "") + std::to_string(dims[d]);
  dims_text += "] (innermost first)";
  // The product of the non-zero sizes must fit int64 even when a zero makes the element count 0:
  // it bounds the contiguous strides of the tensor made from it.
  uint64_t elements = 1, nonzero_product = 1;
  for (uint32_t d = 0; d < n_dims; ++d) {
    NF_CHECK(!__builtin_mul_overflow(nonzero_product, dims[d] == 0 ? 1 : dims[d], &nonzero_product) &&
                 nonzero_product <= kInt64Max,
             file_context(path), field, " has dimensions ", dims_text, ", whose product overflows int64");
    elements *= dims[d];
  }
  for (uint32_t d = n_dims; d-- > 0;) info.shape.push_back(static_cast<int64_t>(dims[d]));

  const std::optional<QuantTypeInfo> type_info = quant_type_info(type);
  if (!type_info) {
    const char* name = ggml_type_name(type);
    NF_CHECK(name != nullptr, file_context(path), field, " has type ", type, ", which is not a GGML type");
    NF_FAIL(file_context(path), field, " has type ", type, " (", name, "), which nanoformer does not read");
  }
  info.type = static_cast<QuantType>(type);
  NF_CHECK(dims[0] % static_cast<uint64_t>(type_info->block_size) == 0, file_context(path), field,
           " has rows of ", dims[0], " values, not a whole number of ", type_info->name, " blocks of ",
           type_info->block_size);
  uint64_t nbytes = 0;
  NF_CHECK(!__builtin_mul_overflow(elements / static_cast<uint64_t>(type_info->block_size),
                                   static_cast<uint64_t>(type_info->block_bytes), &nbytes) &&
               nbytes <= kInt64Max,
           file_context(path), field, " of ", type_info->name, " with dimensions ", dims_text,
           " would take more than 2^63 bytes");
  info.nbytes = static_cast<size_t>(nbytes);
  return info;
}

// Each tensor at a multiple of the alignment, inside the data section, and no two overlapping
// (tensors of no bytes may share an offset with the next, as llama.cpp's writer places them).
void check_placement(const std::string& path, const std::vector<GGUFTensorInfo>& tensors, uint32_t alignment,
                     size_t data_size) {
  for (const GGUFTensorInfo& t : tensors) {
    NF_CHECK(t.offset % alignment == 0, file_context(path), "tensor '", shown(t.name), "' has offset ", t.offset,
             ", not a multiple of the alignment ", alignment);
    NF_CHECK(t.offset <= data_size && t.nbytes <= data_size - t.offset, file_context(path), "tensor '",
             shown(t.name), "' has ", t.nbytes, " bytes at offset ", t.offset, ", past the end of the ", data_size,
             "-byte data section (file truncated?)");
  }
  std::vector<const GGUFTensorInfo*> placed;
  for (const GGUFTensorInfo& t : tensors)
    if (t.nbytes > 0) placed.push_back(&t);
  std::sort(placed.begin(), placed.end(), [](const GGUFTensorInfo* a, const GGUFTensorInfo* b) {
    return a->offset != b->offset ? a->offset < b->offset : a->nbytes < b->nbytes;
  });
  for (size_t i = 1; i < placed.size(); ++i) {
    const GGUFTensorInfo& a = *placed[i - 1];
    const GGUFTensorInfo& b = *placed[i];
    NF_CHECK(a.offset + a.nbytes <= b.offset, file_context(path), "tensors '", shown(a.name), "' (bytes [", a.offset,
             ", ", a.offset + a.nbytes, ")) and '", shown(b.name), "' (bytes [", b.offset, ", ", b.offset + b.nbytes,
             ")) overlap");
  }
}

// Bytes a view of `type` needs its address aligned to: every block struct's alignment (at most 4,
// that of a float) divides its size, so gcd(block bytes, 4) is enough for each.
size_t view_alignment(QuantType type) {
  return std::gcd(static_cast<size_t>(quant_type_info(type).block_bytes), size_t{4});
}

}  // namespace

namespace gguf {

const char* value_type_name(uint32_t type) {
  static const char* const kNames[] = {"u8",     "i8",    "u16", "i16", "u32", "i32", "f32",
                                       "bool",   "string", "array", "u64", "i64", "f64"};
  return type < std::size(kNames) ? kNames[type] : nullptr;
}

uint32_t value_type(const GGUFValue& value) {
  return value.index() < kScalarAlternatives ? kVariantTypes[value.index()] : kArray;
}

uint32_t array_item_type(const GGUFValue& value) {
  NF_CHECK(value.index() >= kScalarAlternatives, "gguf: array_item_type of a ", gguf_value_type_name(value));
  return kVariantTypes[value.index() - kScalarAlternatives];
}

}  // namespace gguf

std::string gguf_value_type_name(const GGUFValue& value) {
  const uint32_t type = gguf::value_type(value);
  if (type != gguf::kArray) return gguf::value_type_name(type);
  return std::string("array of ") + gguf::value_type_name(gguf::array_item_type(value));
}

bool is_gguf_file(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return false;
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  return in.read(magic, 4) && std::memcmp(magic, "GGUF", 4) == 0;
}

GGUFFile GGUFFile::open(const std::string& path) {
  GGUFFile file;
  file.path_ = path;
  const MappedFile mapped = map_file(path, file_context(path));
  file.mapping_ = mapped.mapping;
  file.mapped_bytes_ = mapped.size;
  Cursor in(path, mapped.bytes(), mapped.size);

  const bool magic = mapped.size >= 4 && std::memcmp(mapped.bytes(), "GGUF", 4) == 0;
  NF_CHECK(magic, file_context(path), "not a GGUF file (it does not start with the bytes 'GGUF')");
  NF_CHECK(mapped.size >= kHeaderBytes, file_context(path), "the file is ", mapped.size,
           " bytes, too short for the 24-byte GGUF header (truncated?)");
  in.read_unchecked<uint32_t>();
  file.version_ = in.read_unchecked<uint32_t>();
  const bool big_endian = file.version_ == 0x02000000 || file.version_ == 0x03000000;
  NF_CHECK(file.version_ == 2 || file.version_ == 3, file_context(path), "GGUF version ", file.version_,
           " is not supported (nanoformer reads versions 2 and 3", big_endian ? "; this looks like a big-endian file" : "",
           ")");
  const auto tensor_count = in.read_unchecked<uint64_t>();
  const auto kv_count = in.read_unchecked<uint64_t>();
  // Both counts against the bytes left before anything is sized from them.
  NF_CHECK(kv_count <= in.left() / kMinKeyValueBytes && tensor_count <= in.left() / kMinTensorInfoBytes &&
               kv_count * kMinKeyValueBytes + tensor_count * kMinTensorInfoBytes <= in.left(),
           file_context(path), "the header counts ", kv_count, " keys and ", tensor_count,
           " tensors, more than the ", in.left(), " bytes after it can hold (at least ", kMinKeyValueBytes,
           " bytes a key, ", kMinTensorInfoBytes, " a tensor; truncated or corrupt?)");

  for (uint64_t i = 0; i < kv_count; ++i) {
    std::string key = in.read_string("key #" + std::to_string(i));
    NF_CHECK(!key.empty(), file_context(path), "key #", i, " has an empty name");
    const std::string field = "key '" + shown(key) + "'";
    NF_CHECK(file.metadata_.count(key) == 0, file_context(path), field, " appears twice");
    GGUFValue value = read_value(in, path, field);
    file.keys_.push_back(key);
    file.metadata_.emplace(std::move(key), std::move(value));
  }
  file.alignment_ = read_alignment(path, file.metadata_);

  for (uint64_t i = 0; i < tensor_count; ++i) {
    GGUFTensorInfo info = read_tensor_info(in, path, i);
    NF_CHECK(file.index_.emplace(info.name, file.tensors_.size()).second, file_context(path), "tensor '",
             shown(info.name), "' appears twice");
    file.tensors_.push_back(std::move(info));
  }

  // The data section starts at the next multiple of the alignment (past the end when it is empty).
  const size_t data_start = (in.pos() + file.alignment_ - 1) / file.alignment_ * file.alignment_;
  const size_t data_size = data_start <= mapped.size ? mapped.size - data_start : 0;
  check_placement(path, file.tensors_, file.alignment_, data_size);
  file.data_ = mapped.bytes() + std::min(data_start, mapped.size);
  return file;
}

const GGUFValue& GGUFFile::get(const std::string& key) const {
  const auto it = metadata_.find(key);
  NF_CHECK(it != metadata_.end(), file_context(path_), "no metadata key '", key, "'");
  return it->second;
}

std::string GGUFFile::get_string(const std::string& key) const {
  const GGUFValue& value = get(key);
  const auto* s = std::get_if<std::string>(&value);
  NF_CHECK(s != nullptr, file_context(path_), "key '", key, "' is ", gguf_value_type_name(value), ", not a string");
  return *s;
}

int64_t GGUFFile::get_int(const std::string& key) const {
  const GGUFValue& value = get(key);
  return std::visit(
      [&](const auto& v) -> int64_t {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
          if constexpr (std::is_same_v<T, uint64_t>) {
            NF_CHECK(v <= kInt64Max, file_context(path_), "key '", key, "' is ", v, ", beyond int64");
          }
          return static_cast<int64_t>(v);
        } else {
          NF_FAIL(file_context(path_), "key '", key, "' is ", gguf_value_type_name(value), ", not an integer");
        }
      },
      value);
}

double GGUFFile::get_float(const std::string& key) const {
  const GGUFValue& value = get(key);
  if (const auto* f = std::get_if<float>(&value)) return *f;
  if (const auto* d = std::get_if<double>(&value)) return *d;
  NF_FAIL(file_context(path_), "key '", key, "' is ", gguf_value_type_name(value), ", not f32 or f64");
}

bool GGUFFile::get_bool(const std::string& key) const {
  const GGUFValue& value = get(key);
  const auto* b = std::get_if<bool>(&value);
  NF_CHECK(b != nullptr, file_context(path_), "key '", key, "' is ", gguf_value_type_name(value), ", not a bool");
  return *b;
}

bool GGUFFile::contains(const std::string& name) const { return index_.count(name) != 0; }

const GGUFTensorInfo& GGUFFile::tensor(const std::string& name) const {
  const auto it = index_.find(name);
  if (it != index_.end()) return tensors_[it->second];
  std::string known;
  for (size_t i = 0; i < tensors_.size() && i < 8; ++i) known += (i ? ", " : "") + shown(tensors_[i].name);
  if (tensors_.size() > 8) known += ", ...";
  NF_FAIL(file_context(path_), "no tensor named '", name, "' (the file holds ", tensors_.size(), " tensors",
          tensors_.empty() ? "" : ": ", known, ")");
}

QuantizedTensor GGUFFile::quantized(const std::string& name) const {
  const GGUFTensorInfo& info = tensor(name);
  const int64_t cols = info.shape.empty() ? 1 : info.shape.back();
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < info.shape.size(); ++d) rows *= info.shape[d];
  const unsigned char* bytes = data_ + info.offset;
  std::shared_ptr<Storage> storage;
  if (reinterpret_cast<uintptr_t>(bytes) % view_alignment(info.type) == 0) {
    storage = std::make_shared<Storage>(const_cast<unsigned char*>(bytes), info.nbytes, mapping_);
  } else {
    storage = std::make_shared<Storage>(info.nbytes, Device{});
    if (info.nbytes > 0) std::memcpy(storage->data(), bytes, info.nbytes);
  }
  return QuantizedTensor::from_storage(std::move(storage), info.type, rows, cols);
}

void GGUFFile::release(const QuantizedTensor& view) const {
  if (!view.defined() || mapping_ == nullptr) return;
  const auto* begin = static_cast<const unsigned char*>(view.data());
  const auto* mapped = static_cast<const unsigned char*>(mapping_.get());
  if (begin >= mapped && begin + view.nbytes() <= mapped + mapped_bytes_) release_pages(begin, view.nbytes());
}

Tensor GGUFFile::dense(const std::string& name) const {
  const GGUFTensorInfo& info = tensor(name);
  const std::optional<DType> float_dtype = float_type_dtype(info.type);
  NF_CHECK(float_dtype, file_context(path_), "tensor '", shown(name), "' is ", quant_type_name(info.type),
           ", block-quantised, not f32, f16, bf16 or f64 (read it as a QuantizedTensor)");
  const DType dtype = *float_dtype;
  const unsigned char* bytes = data_ + info.offset;
  Tensor t;
  if (reinterpret_cast<uintptr_t>(bytes) % dtype_size(dtype) == 0) {
    auto storage = std::make_shared<Storage>(const_cast<unsigned char*>(bytes), info.nbytes, mapping_);
    t = Tensor::from_storage(std::move(storage), info.shape, contiguous_strides(info.shape), 0, dtype);
  } else {
    t = Tensor::empty(info.shape, dtype);
    if (info.nbytes > 0) std::memcpy(t.raw_data(), bytes, info.nbytes);
  }
  t.set_name(info.name);
  return t;
}

}  // namespace nf::io
