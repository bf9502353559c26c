// GGUF model file: the input is a .gguf. Its config and tensors are read or refused (an unsupported
// key or architecture, a size the file cannot back, a missing, unexpected or mis-shaped tensor) with
// an nf::Error naming the file, never an allocation sized by a key alone; its tokenizer loads or is
// refused the same way. A model that loads runs its first token, writes back as GGUF and loads
// again to the same config and the same logits, bit for bit.
#include <cstdio>
#include <cstring>

#include "fuzz_support.h"
#include "nanoformer/autograd/grad_mode.h"
#include "nanoformer/formats/gguf_checkpoint.h"

using namespace nf;
using namespace nf::models;

namespace {

Tensor first_logits(DecoderLM& model) {
  model.eval();
  NoGradGuard no_grad;
  return model.forward(Tensor::from_vector(std::vector<int64_t>{0}, {1, 1})).logits.contiguous();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = fuzz::scratch_file(data, size);
  fuzz::expect_nf_error_naming(path, [&] { (void)tokenizer::load_tokenizer(path); });
  fuzz::expect_nf_error_naming(path, [&] {
    const auto model = formats::load_gguf(path);
    const Tensor logits = first_logits(*model);
    const std::string again = path + ".again.gguf";
    formats::save_gguf(*model, again);
    const auto reloaded = formats::load_gguf(again);
    const Tensor logits_again = first_logits(*reloaded);
    const bool same_config = reloaded->config_json() == model->config_json();
    const size_t bytes = static_cast<size_t>(logits.numel()) * sizeof(float);
    const bool same_logits = std::memcmp(logits.raw_data(), logits_again.raw_data(), bytes) == 0;
    std::remove(again.c_str());
    NF_FUZZ_CHECK(same_config, "save, load changes the config of ", path);
    NF_FUZZ_CHECK(same_logits, "save, load changes the logits of ", path);
  });
  return 0;
}
