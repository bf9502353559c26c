// torch_checkpoint: the input is a file. load_torch_checkpoint it; every tensor comes out
// contiguous, its every byte readable, and a second load gives the same names and bytes.
#include <cstring>

#include "fuzz_support.h"
#include "nanoformer/io/torch_checkpoint.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace nf;
  const std::string& path = fuzz::scratch_file(data, size);
  fuzz::expect_nf_error_naming(path, [&] {
    const auto first = io::load_torch_checkpoint(path);
    const auto second = io::load_torch_checkpoint(path);
    NF_FUZZ_CHECK(first.size() == second.size(), first.size(), " vs ", second.size());
    for (const auto& [name, t] : first) {
      NF_FUZZ_CHECK(t.is_contiguous() && second.count(name), name);
      const Tensor& again = second.at(name);
      const size_t n = static_cast<size_t>(t.numel()) * t.itemsize();
      NF_FUZZ_CHECK(again.shape() == t.shape() && again.dtype() == t.dtype(), name);
      NF_FUZZ_CHECK(n == 0 || std::memcmp(t.raw_data(), again.raw_data(), n) == 0, name);
      if (t.numel() <= 4096) (void)t.to_vector<double>();
    }
  });
  return 0;
}
