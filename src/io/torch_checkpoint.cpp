// torch.save's zip checkpoints (io/torch_checkpoint.h).
#include "nanoformer/io/torch_checkpoint.h"

#include <cstring>

#include "mapped_file.h"
#include "nanoformer/core/error.h"
#include "torch_pickle.h"
#include "zip_archive.h"

namespace nf::io {
namespace {

// Checks t against its storage: the elements its shape and strides reach lie inside it. Returns
// its element count.
int64_t check_in_storage(const PickledTensor& t, const std::string& name, const std::string& path) {
  const auto fail = [&](const std::string& why) { NF_FAIL("torch checkpoint: ", path, ": tensor '", name, "': ", why); };
  if (t.offset < 0) fail("a negative storage offset " + std::to_string(t.offset));
  int64_t numel = 1, last = t.offset;  // the farthest element reached
  for (size_t d = 0; d < t.shape.size(); ++d) {
    if (t.shape[d] < 0 || t.strides[d] < 0) fail("a negative size or stride");
    if (t.shape[d] == 0) return 0;
    if (numel > INT64_MAX / t.shape[d]) fail("more elements than fit in 64 bits");
    numel *= t.shape[d];
    if (t.strides[d] > 0 && t.shape[d] - 1 > (INT64_MAX - last) / t.strides[d]) fail("strides past 64 bits");
    last += (t.shape[d] - 1) * t.strides[d];
  }
  if (last >= t.storage_numel)
    fail("reaches element " + std::to_string(last) + " of a storage of " + std::to_string(t.storage_numel));
  return numel;
}

// Copies the elements of t (any strides) from its storage's bytes into out, in row-major order.
void gather(const PickledTensor& t, const unsigned char* storage, unsigned char* out, size_t item) {
  const size_t dims = t.shape.size();
  std::vector<int64_t> index(dims, 0);
  bool contiguous = true;
  for (int64_t d = static_cast<int64_t>(dims) - 1, expected = 1; d >= 0; expected *= t.shape[static_cast<size_t>(d)], --d)
    contiguous = contiguous && (t.shape[static_cast<size_t>(d)] == 1 || t.strides[static_cast<size_t>(d)] == expected);
  int64_t numel = 1;
  for (const int64_t s : t.shape) numel *= s;
  if (contiguous) {
    std::memcpy(out, storage + static_cast<size_t>(t.offset) * item, static_cast<size_t>(numel) * item);
    return;
  }
  for (int64_t n = 0; n < numel; ++n) {
    int64_t at = t.offset;
    for (size_t d = 0; d < dims; ++d) at += index[d] * t.strides[d];
    std::memcpy(out + static_cast<size_t>(n) * item, storage + static_cast<size_t>(at) * item, item);
    for (size_t d = dims; d-- > 0;) {
      if (++index[d] < t.shape[d]) break;
      index[d] = 0;
    }
  }
}

}  // namespace

std::map<std::string, Tensor> load_torch_checkpoint(const std::string& path) {
  const MappedFile file = map_file(path, "torch checkpoint: " + path + ": ");
  NF_CHECK(file.size >= 4 && std::memcmp(file.bytes(), "PK\x03\x04", 4) == 0, "torch checkpoint: ", path,
           ": not a zip archive: the legacy torch.save format (PyTorch < 1.6, or _use_new_zipfile_serialization=False) ",
           "is not read; load it in Python and torch.save it again");
  const std::vector<ZipEntry> members = read_stored_zip(file.bytes(), file.size, path);
  std::map<std::string, const ZipEntry*> by_name;
  const ZipEntry* pickle = nullptr;
  for (const ZipEntry& m : members) {
    by_name[m.name] = &m;
    const size_t slash = m.name.find('/');
    if (slash != std::string::npos && m.name.substr(slash) == "/data.pkl") {
      NF_CHECK(pickle == nullptr, "torch checkpoint: ", path, ": two pickles (", pickle ? pickle->name : "", " and ", m.name, ")");
      pickle = &m;
    }
  }
  NF_CHECK(pickle != nullptr, "torch checkpoint: ", path, ": no <archive>/data.pkl member: not a torch.save file");
  const std::string prefix = pickle->name.substr(0, pickle->name.size() - std::strlen("data.pkl"));
  if (const auto order = by_name.find(prefix + "byteorder"); order != by_name.end()) {
    const std::string value(reinterpret_cast<const char*>(file.bytes() + order->second->offset), order->second->size);
    NF_CHECK(value == "little", "torch checkpoint: ", path, ": byte order '", value, "' is not little-endian");
  }
  const auto tensors = read_pickled_state_dict(file.bytes() + pickle->offset, pickle->size, path);
  // everything checked before anything is allocated
  std::vector<const ZipEntry*> storages;
  for (const auto& [name, t] : tensors) {
    const auto member = by_name.find(prefix + "data/" + t.storage_key);
    NF_CHECK(member != by_name.end(), "torch checkpoint: ", path, ": tensor '", name, "': its storage ", prefix, "data/",
             t.storage_key, " is not in the archive");
    const uint64_t item = dtype_size(t.dtype);
    NF_CHECK(static_cast<uint64_t>(t.storage_numel) <= UINT64_MAX / item &&
                 member->second->size == static_cast<uint64_t>(t.storage_numel) * item,
             "torch checkpoint: ", path, ": tensor '", name, "': its storage of ", t.storage_numel, " ", dtype_name(t.dtype),
             " elements should be ", static_cast<uint64_t>(t.storage_numel) * item, " bytes, the member holds ",
             member->second->size);
    check_in_storage(t, name, path);
    storages.push_back(member->second);
  }
  std::map<std::string, Tensor> out;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const auto& [name, t] = tensors[i];
    NF_CHECK(!out.count(name), "torch checkpoint: ", path, ": tensor '", name, "' is in the state dict twice");
    Tensor tensor = Tensor::empty(Shape(t.shape.begin(), t.shape.end()), t.dtype);
    if (tensor.numel() > 0)
      gather(t, file.bytes() + storages[i]->offset, static_cast<unsigned char*>(tensor.raw_data()), dtype_size(t.dtype));
    if (t.dtype == DType::boolean)
      for (int64_t k = 0; k < tensor.numel(); ++k)
        NF_CHECK(static_cast<const unsigned char*>(tensor.raw_data())[k] <= 1, "torch checkpoint: ", path, ": tensor '",
                 name, "': a bool that is not 0 or 1");
    tensor.set_name(name);
    out.emplace(name, std::move(tensor));
  }
  return out;
}

}  // namespace nf::io
