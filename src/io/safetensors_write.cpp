// Writing safetensors atomically (io/temporary_file.h): the whole file goes to a temporary that is
// fsynced and renamed over `path`, so readers see the old file or the new one, never a partial one.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <set>

#include "nanoformer/autograd/grad_mode.h"
#include "nanoformer/core/error.h"
#include "nanoformer/io/safetensors.h"
#include "nanoformer/ops/view.h"
#include "io/safetensors_internal.h"
#include "io/temporary_file.h"

namespace nf::io {
namespace {

using ordered_json = nlohmann::ordered_json;

// The bytes of `t` in row-major order: itself when contiguous, else a contiguous copy.
Tensor contiguous_bytes(const Tensor& t) {
  if (t.is_contiguous()) return t;
  Tensor out = Tensor::empty(t.shape(), t.dtype(), t.device());
  copy_into(out, t);
  return out;
}

void check_tensors(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors) {
  std::set<std::string> seen;
  for (const auto& [name, t] : tensors) {
    NF_CHECK(!name.empty(), file_context(path), "a tensor has an empty name");
    NF_CHECK(name != "__metadata__", file_context(path), "'__metadata__' is reserved and cannot name a tensor");
    NF_CHECK(seen.insert(name).second, file_context(path), "tensor '", name, "' is given twice");
    NF_CHECK(t.defined(), file_context(path), "tensor '", name, "' is undefined");
    NF_CHECK(t.device().type == DeviceType::cpu, file_context(path), "tensor '", name, "' is on ",
             t.device().str(), "; move it to the CPU first");
  }
}

// The JSON header, padded with spaces to a multiple of 8 bytes so the data section is aligned.
std::string make_header(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
                        const std::map<std::string, std::string>& metadata) {
  ordered_json header = ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    const uint64_t nbytes = static_cast<uint64_t>(t.numel()) * t.itemsize();
    header[name] = {{"dtype", safetensors_dtype_name(t.dtype())},
                    {"shape", t.shape()},
                    {"data_offsets", {offset, offset + nbytes}}};
    offset += nbytes;
  }
  std::string text;
  try {
    text = header.dump();
  } catch (const nlohmann::json::exception& e) {
    NF_FAIL(file_context(path), "cannot encode the header (names and metadata must be valid UTF-8): ", e.what());
  }
  text.append((8 - text.size() % 8) % 8, ' ');
  return text;
}

}  // namespace

void save_safetensors(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
                      const std::map<std::string, std::string>& metadata) {
  check_tensors(path, tensors);
  const std::string header = make_header(path, tensors, metadata);
  NoGradGuard no_grad;
  TemporaryFile file(path, file_context(path));
  unsigned char length[8];
  for (int i = 0; i < 8; ++i) length[i] = static_cast<unsigned char>(static_cast<uint64_t>(header.size()) >> (8 * i));
  file.write(length, sizeof length);
  file.write(header.data(), header.size());
  for (const auto& [name, t] : tensors) {
    const Tensor bytes = contiguous_bytes(t);
    file.write(bytes.raw_data(), static_cast<size_t>(bytes.numel()) * bytes.itemsize());
  }
  file.commit();
}

void save_safetensors(const std::string& path, const std::map<std::string, Tensor>& tensors,
                      const std::map<std::string, std::string>& metadata) {
  save_safetensors(path, std::vector<std::pair<std::string, Tensor>>(tensors.begin(), tensors.end()), metadata);
}

void save_safetensors(const std::string& path, std::initializer_list<std::pair<std::string, Tensor>> tensors,
                      const std::map<std::string, std::string>& metadata) {
  save_safetensors(path, std::vector<std::pair<std::string, Tensor>>(tensors), metadata);
}

}  // namespace nf::io
