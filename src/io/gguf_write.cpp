// Writing GGUF byte for byte as the `gguf` Python package's GGUFWriter does: header, keys in the
// order given, tensor infos (offsets padded to the alignment), zeros to the alignment, then each
// tensor followed by zeros to the alignment. Everything is checked before the file is created; the
// file is written to a temporary and renamed into place (io/temporary_file.h).
#include <algorithm>
#include <cstring>
#include <set>

#include "nanoformer/autograd/grad_mode.h"
#include "nanoformer/core/error.h"
#include "nanoformer/io/gguf.h"
#include "nanoformer/ops/view.h"
#include "io/gguf_internal.h"
#include "io/temporary_file.h"

namespace nf::io {
namespace {

using gguf::file_context;

// Bytes up to the next multiple of `alignment`.
uint64_t padding(uint64_t n, uint32_t alignment) { return (alignment - n % alignment) % alignment; }

template <class T>
void append(std::string& out, T value) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  out.append(bytes, sizeof(T));
}

void append_string(std::string& out, const std::string& s) {
  append<uint64_t>(out, s.size());
  out += s;
}

template <class T>
void append_item(std::string& out, const T& item) {
  if constexpr (std::is_same_v<T, std::string>) {
    append_string(out, item);
  } else if constexpr (std::is_same_v<T, bool>) {
    append<uint8_t>(out, item ? 1 : 0);
  } else {
    append<T>(out, item);
  }
}

// Value type, then the value (an array: item type, count, items).
void append_value(std::string& out, const GGUFValue& value) {
  append<uint32_t>(out, gguf::value_type(value));
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (requires { typename T::value_type; } && !std::is_same_v<T, std::string>) {
          append<uint32_t>(out, gguf::array_item_type(value));
          append<uint64_t>(out, v.size());
          for (const auto& item : v) append_item<typename T::value_type>(out, item);
        } else {
          append_item<T>(out, v);
        }
      },
      value);
}

uint32_t alignment_of(const std::string& path, const std::vector<std::pair<std::string, GGUFValue>>& metadata) {
  for (const auto& [key, value] : metadata) {
    if (key != gguf::kAlignmentKey) continue;
    const auto* alignment = std::get_if<uint32_t>(&value);
    NF_CHECK(alignment != nullptr, file_context(path), gguf::kAlignmentKey, " is ", gguf_value_type_name(value),
             ", not u32");
    NF_CHECK(*alignment != 0 && (*alignment & (*alignment - 1)) == 0, file_context(path), gguf::kAlignmentKey,
             " is ", *alignment, ", not a power of two");
    return *alignment;
  }
  return gguf::kDefaultAlignment;
}

void write_zeros(TemporaryFile& file, uint64_t n) {
  static const char kZeros[4096] = {};
  for (; n > 0; n -= std::min<uint64_t>(n, sizeof kZeros)) file.write(kZeros, std::min<uint64_t>(n, sizeof kZeros));
}

// What goes into the file for one tensor.
struct Planned {
  QuantType type = QuantType::f32;
  std::vector<int64_t> shape;  // outermost first
  const void* bytes = nullptr;
  size_t nbytes = 0;
  Tensor contiguous;  // keeps a dense tensor's contiguous copy alive
};

Planned plan_tensor(const std::string& path, const GGUFTensorSource& source) {
  const std::string field = file_context(path) + "tensor '" + source.name + "'";
  NF_CHECK(source.dense.defined() != source.quantized.defined(), field,
           " must hold exactly one of a dense tensor and a quantised one");
  Planned p;
  if (source.quantized.defined()) {
    const QuantizedTensor& q = source.quantized;
    p.type = q.type();
    p.shape = {q.rows(), q.cols()};
    p.bytes = q.data();
    p.nbytes = q.nbytes();
    return p;
  }
  const Tensor& t = source.dense;
  switch (t.dtype()) {
    case DType::f32: p.type = QuantType::f32; break;
    case DType::f16: p.type = QuantType::f16; break;
    case DType::bf16: p.type = QuantType::bf16; break;
    default: NF_FAIL(field, " is ", dtype_name(t.dtype()), "; GGUF tensors here are f32, f16, bf16 or quantised");
  }
  NF_CHECK(t.device().type == DeviceType::cpu, field, " is on ", t.device().str(), "; move it to the CPU first");
  NF_CHECK(t.dim() <= static_cast<int64_t>(gguf::kMaxDims), field, " has ", t.dim(),
           " dimensions; GGUF allows at most ", gguf::kMaxDims);
  p.shape = t.shape();
  if (t.is_contiguous()) {
    p.contiguous = t;
  } else {
    p.contiguous = Tensor::empty(t.shape(), t.dtype(), t.device());
    copy_into(p.contiguous, t);
  }
  p.bytes = p.contiguous.raw_data();
  p.nbytes = static_cast<size_t>(t.numel()) * t.itemsize();
  return p;
}

}  // namespace

void write_gguf(const std::string& path, const std::vector<std::pair<std::string, GGUFValue>>& metadata,
                const std::vector<GGUFTensorSource>& tensors) {
  std::set<std::string> keys;
  for (const auto& [key, value] : metadata) {
    NF_CHECK(!key.empty(), file_context(path), "a metadata key is empty");
    NF_CHECK(keys.insert(key).second, file_context(path), "key '", key, "' is given twice");
  }
  const uint32_t alignment = alignment_of(path, metadata);
  std::set<std::string> names;
  for (const GGUFTensorSource& t : tensors) {
    NF_CHECK(!t.name.empty(), file_context(path), "a tensor has an empty name");
    NF_CHECK(t.name.size() <= gguf::kMaxTensorName, file_context(path), "tensor name '", t.name, "' has ",
             t.name.size(), " bytes; llama.cpp reads at most ", gguf::kMaxTensorName);
    NF_CHECK(names.insert(t.name).second, file_context(path), "tensor '", t.name, "' is given twice");
  }

  NoGradGuard no_grad;
  std::vector<Planned> planned;
  planned.reserve(tensors.size());
  for (const GGUFTensorSource& t : tensors) planned.push_back(plan_tensor(path, t));

  std::string header;
  append<uint32_t>(header, gguf::kMagic);
  append<uint32_t>(header, gguf::kVersion);
  append<uint64_t>(header, tensors.size());
  append<uint64_t>(header, metadata.size());
  for (const auto& [key, value] : metadata) {
    append_string(header, key);
    append_value(header, value);
  }
  uint64_t offset = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Planned& p = planned[i];
    append_string(header, tensors[i].name);
    append<uint32_t>(header, static_cast<uint32_t>(p.shape.size()));
    for (size_t d = p.shape.size(); d-- > 0;) append<uint64_t>(header, static_cast<uint64_t>(p.shape[d]));
    append<uint32_t>(header, static_cast<uint32_t>(p.type));
    append<uint64_t>(header, offset);
    offset += p.nbytes + padding(p.nbytes, alignment);
  }

  TemporaryFile file(path, file_context(path));
  file.write(header.data(), header.size());
  write_zeros(file, padding(header.size(), alignment));
  for (const Planned& p : planned) {
    file.write(p.bytes, p.nbytes);
    write_zeros(file, padding(p.nbytes, alignment));
  }
  file.commit();
}

}  // namespace nf::io
