// safetensors: the input is a file. Open it; for every tensor take view() and load(), check that
// both match the header and hold the same bytes, touch every byte; then load_safetensors() it all.
#include <cstring>

#include "fuzz_support.h"
#include "nanoformer/io/safetensors.h"

namespace {

using namespace nf;

// Reads every byte of a contiguous tensor (ASan checks the reads stay inside the buffer).
uint64_t touch(const Tensor& t) {
  const auto* p = static_cast<const unsigned char*>(t.raw_data());
  uint64_t sum = 0;
  for (size_t i = 0, n = static_cast<size_t>(t.numel()) * t.itemsize(); i < n; ++i) sum = sum * 31 + p[i];
  return sum;
}

void check_tensor(const io::TensorEntry& e, const Tensor& t) {
  NF_FUZZ_CHECK(t.shape() == e.shape && t.dtype() == e.dtype && t.is_contiguous(), e.name);
  NF_FUZZ_CHECK(static_cast<size_t>(t.numel()) * t.itemsize() == e.end - e.begin, e.name);
  if (t.numel() <= 4096) (void)t.to_vector<double>();  // every dtype's conversion of any bit pattern
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = fuzz::scratch_file(data, size);
  fuzz::expect_nf_error_naming(path, [&] {
    const io::SafetensorsFile file = io::SafetensorsFile::open(path);
    uint64_t checksum = 0;
    for (const io::TensorEntry& e : file.entries()) {
      NF_FUZZ_CHECK(&file.entry(e.name) == &e, e.name);
      Tensor view, owned;
      // BOOL bytes other than 0 and 1 are only refused here, on access.
      if (!fuzz::expect_nf_error([&] { view = file.view(e.name); })) continue;
      owned = file.load(e.name);
      check_tensor(e, view);
      check_tensor(e, owned);
      const size_t n = e.end - e.begin;
      NF_FUZZ_CHECK(n == 0 || std::memcmp(view.raw_data(), owned.raw_data(), n) == 0, e.name);
      checksum += touch(view) + touch(owned);
    }
    const auto all = io::load_safetensors(path);
    NF_FUZZ_CHECK(all.size() == file.entries().size(), all.size(), " vs ", file.entries().size());
    (void)checksum;
  });
  return 0;
}
