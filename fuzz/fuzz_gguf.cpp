// gguf: the input is a file. Open it; read every key through each typed accessor; read every
// tensor as a QuantizedTensor (and as a Tensor when dense), check both against its info and touch
// every byte; then write the file back with write_gguf and read that: the keys, types and tensor
// bytes must survive, and writing what was read back must give the same bytes again.
#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>

#include "fuzz_support.h"
#include "nanoformer/io/gguf.h"

namespace {

using namespace nf;

// Reads every byte (ASan checks the reads stay inside the mapping or the copy).
uint64_t touch(const void* data, size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint64_t sum = 0;
  for (size_t i = 0; i < n; ++i) sum = sum * 31 + p[i];
  return sum;
}

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// What the reader accepted the writer must write: a refusal is a finding.
void write_back(const std::string& out, const std::vector<std::pair<std::string, io::GGUFValue>>& metadata,
                const std::vector<io::GGUFTensorSource>& tensors) {
  try {
    io::write_gguf(out, metadata, tensors);
  } catch (const Error& e) {
    fuzz::finding(std::string("write_gguf refuses what GGUFFile read: ") + e.what());
  }
}

// What the writer wrote the reader must read: a refusal is a finding.
io::GGUFFile reopen(const std::string& out) {
  try {
    return io::GGUFFile::open(out);
  } catch (const Error& e) {
    fuzz::finding(std::string("GGUFFile refuses what write_gguf wrote: ") + e.what());
  }
}

// Reads every key and tensor of `file`; returns what write_gguf takes to write it again.
std::pair<std::vector<std::pair<std::string, io::GGUFValue>>, std::vector<io::GGUFTensorSource>> read_all(
    const io::GGUFFile& file) {
  NF_FUZZ_CHECK(file.keys().size() == file.metadata().size(), file.keys().size());
  std::vector<std::pair<std::string, io::GGUFValue>> metadata;
  for (const std::string& key : file.keys()) {
    NF_FUZZ_CHECK(file.has(key), key);
    (void)io::gguf_value_type_name(file.get(key));
    fuzz::expect_nf_error([&] { (void)file.get_int(key); });
    fuzz::expect_nf_error([&] { (void)file.get_float(key); });
    fuzz::expect_nf_error([&] { (void)file.get_string(key); });
    fuzz::expect_nf_error([&] { (void)file.get_bool(key); });
    metadata.emplace_back(key, file.get(key));
  }
  std::vector<io::GGUFTensorSource> tensors;
  uint64_t checksum = 0;
  for (const io::GGUFTensorInfo& info : file.tensors()) {
    NF_FUZZ_CHECK(&file.tensor(info.name) == &info, info.name);
    const QuantizedTensor q = file.quantized(info.name);
    NF_FUZZ_CHECK(q.type() == info.type && q.nbytes() == info.nbytes, info.name);
    NF_FUZZ_CHECK(info.shape.empty() || q.cols() == info.shape.back(), info.name);
    checksum += touch(q.data(), q.nbytes());
    io::GGUFTensorSource source{info.name, {}, {}};
    if (is_block_quantized(info.type)) {
      source.quantized = q;
    } else {
      const Tensor t = file.dense(info.name);
      NF_FUZZ_CHECK(t.shape() == info.shape && t.is_contiguous(), info.name);
      NF_FUZZ_CHECK(static_cast<size_t>(t.numel()) * t.itemsize() == info.nbytes, info.name);
      NF_FUZZ_CHECK(info.nbytes == 0 || std::memcmp(t.raw_data(), q.data(), info.nbytes) == 0, info.name);
      if (t.numel() <= 4096) (void)t.to_vector<double>();  // every bit pattern converts
      source.dense = t;
    }
    tensors.push_back(std::move(source));
  }
  (void)checksum;
  return {metadata, tensors};
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = fuzz::scratch_file(data, size);
  fuzz::expect_nf_error_naming(path, [&] {
    const io::GGUFFile file = io::GGUFFile::open(path);
    const auto [metadata, tensors] = read_all(file);
    // The round trip: refused only for names llama.cpp would not read (the reader takes any length).
    const std::string out = fuzz::scratch_directory("gguf") + "/out.gguf";
    const bool long_name = std::any_of(tensors.begin(), tensors.end(),
                                       [](const io::GGUFTensorSource& t) { return t.name.size() > 63; });
    if (long_name) return;
    write_back(out, metadata, tensors);
    const io::GGUFFile again = reopen(out);
    NF_FUZZ_CHECK(again.keys() == file.keys() && again.alignment() == file.alignment(), "keys");
    for (const std::string& key : file.keys())
      NF_FUZZ_CHECK(io::gguf_value_type_name(again.get(key)) == io::gguf_value_type_name(file.get(key)), key);
    NF_FUZZ_CHECK(again.tensors().size() == file.tensors().size(), again.tensors().size());
    for (size_t i = 0; i < file.tensors().size(); ++i) {
      const io::GGUFTensorInfo& a = file.tensors()[i];
      const io::GGUFTensorInfo& b = again.tensors()[i];
      NF_FUZZ_CHECK(a.name == b.name && a.type == b.type && a.nbytes == b.nbytes, a.name);
      const QuantizedTensor qa = file.quantized(a.name), qb = again.quantized(b.name);
      NF_FUZZ_CHECK(a.nbytes == 0 || std::memcmp(qa.data(), qb.data(), a.nbytes) == 0, a.name);
    }
    const std::string first = file_bytes(out);
    const auto [metadata2, tensors2] = read_all(again);
    write_back(out, metadata2, tensors2);
    NF_FUZZ_CHECK(file_bytes(out) == first, "writing what was read gives other bytes");
  });
  return 0;
}
