// The config files of other implementations' model folders: the input is parsed as a Hugging Face
// config.json, a MiniMind config.json and a nanochat meta_<step>.json. Each parse succeeds or ends
// in an nf::Error naming the file; a Hugging Face or MiniMind config that parses and can be written
// back gives the same model config when that is parsed again.
#include "fuzz_support.h"
#include "nanoformer/models/hf_checkpoint.h"
#include "nanoformer/models/minimind_checkpoint.h"
#include "nanoformer/models/nanochat_checkpoint.h"
#include "nanoformer/nn/mlp.h"

using namespace nf;
using namespace nf::models;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(fuzz::as_text(data, size));
  fuzz::expect_nf_error_naming("config.json", [&] {
    const DecoderLMConfig c = config_from_hf_json(text, "config.json");
    const std::string written = hf_json_from_config(c, nn::mlp_hidden_dim(block_config(c).mlp));
    NF_FUZZ_CHECK(model_config_to_json(config_from_hf_json(written, "config.json")) == model_config_to_json(c),
                  "Hugging Face config: parse, write, parse");
  });
  fuzz::expect_nf_error_naming("config.json", [&] {
    const DecoderLMConfig c = config_from_minimind_json(text, "config.json");
    const std::string written = minimind_json_from_config(c);
    NF_FUZZ_CHECK(model_config_to_json(config_from_minimind_json(written, "config.json")) == model_config_to_json(c),
                  "MiniMind config: parse, write, parse");
  });
  fuzz::expect_nf_error_naming("meta_000100.json", [&] { (void)config_from_nanochat_meta(text, "meta_000100.json"); });
  return 0;
}
