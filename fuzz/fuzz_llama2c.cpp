// llama2.c checkpoint: the input is a .bin file. Its config must be read or refused from the header
// alone, and the whole file loaded or refused (truncated, oversized, bad fields) with an nf::Error
// naming it; never an allocation sized by the header alone.
#include "fuzz_support.h"
#include "nanoformer/formats/llama2c.h"

using namespace nf;
using namespace nf::models;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = fuzz::scratch_file(data, size);
  fuzz::expect_nf_error_naming(path, [&] { (void)formats::read_llama2c_config(path); });
  fuzz::expect_nf_error_naming(path, [&] { (void)formats::load_llama2c(path); });
  return 0;
}
