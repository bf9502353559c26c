// nanoformer checkpoint: the input is a .safetensors file whose header metadata holds our format
// fields and a model config. Loading must succeed or end in an nf::Error naming the file, and a
// config describing far more parameters than the file holds is refused before any model is built
// (no allocation sized by the header); every tensor it loads is verified against the file's
// checksums (format version 2). A checkpoint that loads saves and loads back to the same config.
// A training checkpoint's run state and config (train_state, train_config) parse or end in an
// nf::Error naming the file.
#include "fuzz_support.h"
#include "nanoformer/formats/checkpoint.h"
#include "nanoformer/train/train_checkpoint.h"

using namespace nf;
using namespace nf::models;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = fuzz::scratch_file(data, size);
  fuzz::expect_nf_error_naming(path, [&] { (void)formats::read_checkpoint_config_json(path); });
  fuzz::expect_nf_error_naming(path, [&] { (void)train::read_train_checkpoint(path); });
  fuzz::expect_nf_error_naming(path, [&] {
    const auto model = formats::load_checkpoint(path);
    const std::string again = path + ".again.safetensors";
    formats::save_checkpoint(*model, again);
    const std::string config = model->config_json();
    const bool same = formats::load_checkpoint(again)->config_json() == config;
    std::remove(again.c_str());
    NF_FUZZ_CHECK(same, "save, load changes the config of ", path);
  });
  return 0;
}
