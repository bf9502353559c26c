// Per-tensor XXH3-64 checksums in the safetensors metadata (io/tensor_checksums.h).
#include "nanoformer/io/tensor_checksums.h"

#include <xxhash.h>

#include <charconv>
#include <cinttypes>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "nanoformer/core/error.h"
#include "util/json_input.h"

namespace nf::io {
namespace {

using json = nlohmann::json;

// hash of a tensor's bytes in row-major order
uint64_t tensor_checksum(const Tensor& t) {
  const Tensor bytes = t.is_contiguous() ? t : t.contiguous();
  return bytes_checksum(bytes.raw_data(), static_cast<size_t>(bytes.numel()) * bytes.itemsize());
}

}  // namespace

uint64_t bytes_checksum(const void* data, size_t bytes, uint64_t seed) { return XXH3_64bits_withSeed(data, bytes, seed); }

std::string checksum_hex(uint64_t checksum) {
  char text[17];
  std::snprintf(text, sizeof text, "%016" PRIx64, checksum);
  return text;
}

uint64_t checksum_from_hex(const std::string& hex, const std::string& what) {
  uint64_t value = 0;
  const auto [end, error] = std::from_chars(hex.data(), hex.data() + hex.size(), value, 16);
  NF_CHECK(hex.size() == 16 && error == std::errc() && end == hex.data() + hex.size(), what, " '", hex,
           "' is not 16 hex digits");
  return value;
}

std::string tensor_checksums(const std::vector<std::pair<std::string, Tensor>>& tensors) {
  std::vector<uint64_t> hashes(tensors.size());
#pragma omp parallel for schedule(dynamic, 1)
  for (size_t i = 0; i < tensors.size(); ++i) hashes[i] = tensor_checksum(tensors[i].second);
  json out = json::object();
  for (size_t i = 0; i < tensors.size(); ++i) out[tensors[i].first] = checksum_hex(hashes[i]);
  return out.dump();
}

bool has_tensor_checksums(const SafetensorsFile& file) { return file.metadata().count(kChecksumsKey) > 0; }

void verify_tensor_checksums(const SafetensorsFile& file, const std::vector<std::string>& names) {
  const auto it = file.metadata().find(kChecksumsKey);
  NF_CHECK(it != file.metadata().end(), file.path(), ": the file carries no checksums");
  const json recorded = util::parse_json(it->second, file.path() + ": metadata 'checksums': ");
  NF_CHECK(recorded.is_object(), file.path(), ": metadata 'checksums' is not a JSON object");
  std::vector<std::string> checked = names;
  if (checked.empty())
    for (const TensorEntry& entry : file.entries()) checked.push_back(entry.name);
  std::vector<uint64_t> expected(checked.size());
  for (size_t i = 0; i < checked.size(); ++i) {
    const auto r = recorded.find(checked[i]);
    NF_CHECK(r != recorded.end() && r->is_string(), file.path(), ": tensor '", checked[i],
             "' has no checksum in the metadata: the file is damaged");
    expected[i] = checksum_from_hex(r->get<std::string>(), file.path() + ": the checksum of tensor '" + checked[i] + "'");
    (void)file.entry(checked[i]);  // throws naming a tensor the file lacks (before the parallel loop)
  }
  std::vector<char> damaged(checked.size(), 0);
#pragma omp parallel for schedule(dynamic, 1)
  for (size_t i = 0; i < checked.size(); ++i) damaged[i] = tensor_checksum(file.view(checked[i])) != expected[i];
  for (size_t i = 0; i < checked.size(); ++i)
    NF_CHECK(!damaged[i], file.path(), ": tensor '", checked[i], "' does not match its checksum: the file is damaged");
}

}  // namespace nf::io
