// The config files of other implementations' model folders: the input is parsed as a Hugging Face
// config.json (GPT-2 / LLaMA, BERT, ViT), a MiniMind config.json (002's form, the Hugging Face
// form and the current form) and a nanochat meta_<step>.json. Each parse succeeds or ends in an nf::Error naming the
// file; a config that parses and can be written back gives the same model config when that is
// parsed again (and, for MiniMind's Hugging Face form, the same file when written again, with a
// short decimal aux_loss_alpha as it was read).
#include <charconv>
#include <nlohmann/json.hpp>

#include "fuzz_support.h"
#include "nanoformer/formats/hf_bert.h"
#include "nanoformer/formats/hf_checkpoint.h"
#include "nanoformer/formats/hf_vit.h"
#include "nanoformer/formats/minimind_checkpoint.h"
#include "nanoformer/formats/nanochat_checkpoint.h"
#include "nanoformer/nn/mlp.h"

using namespace nf;
using namespace nf::models;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(fuzz::as_text(data, size));
  fuzz::expect_nf_error_naming("config.json", [&] {
    const DecoderLMConfig c = formats::config_from_hf_json(text, "config.json");
    const std::string written = formats::hf_json_from_config(c, nn::mlp_hidden_dim(block_config(c).mlp));
    NF_FUZZ_CHECK(model_config_to_json(formats::config_from_hf_json(written, "config.json")) == model_config_to_json(c),
                  "Hugging Face config: parse, write, parse");
  });
  fuzz::expect_nf_error_naming("config.json", [&] {
    const DecoderLMConfig c = formats::config_from_minimind_json(text, "config.json");
    const std::string written = formats::minimind_json_from_config(c);
    NF_FUZZ_CHECK(model_config_to_json(formats::config_from_minimind_json(written, "config.json")) == model_config_to_json(c),
                  "MiniMind config: parse, write, parse");
  });
  fuzz::expect_nf_error_naming("config.json", [&] {
    const DecoderLMConfig c = formats::config_from_minimind_hf_json(text, "config.json");
    const std::string written = formats::minimind_hf_json_from_config(c, nn::mlp_hidden_dim(block_config(c).mlp));
    const DecoderLMConfig again = formats::config_from_minimind_hf_json(written, "config.json");
    NF_FUZZ_CHECK(model_config_to_json(again) == model_config_to_json(c),
                  "MiniMind Hugging Face config: parse, write, parse");
    NF_FUZZ_CHECK(formats::minimind_hf_json_from_config(again, nn::mlp_hidden_dim(block_config(again).mlp)) == written,
                  "MiniMind Hugging Face config: parse, write, parse, write (aux_loss_alpha / top_k)");
    // a short decimal aux_loss_alpha (read as alpha / top_k) is written back as it was
    const nlohmann::json input = nlohmann::json::parse(text, nullptr, false);
    if (c.moe && input.is_object() && input.contains("aux_loss_alpha") && input.at("aux_loss_alpha").is_number()) {
      const double alpha = input.at("aux_loss_alpha").get<double>();
      char shortest[64];
      const char* end = std::to_chars(shortest, shortest + sizeof shortest, alpha).ptr;
      const size_t length = static_cast<size_t>(end - shortest);
      const double out = nlohmann::json::parse(written).at("aux_loss_alpha").get<double>();
      NF_FUZZ_CHECK(!(length <= 12 && alpha >= 1e-300 && alpha <= 1e300) || out == alpha,
                    "MiniMind Hugging Face config: aux_loss_alpha ", nlohmann::json(alpha).dump(), " written back as ",
                    nlohmann::json(out).dump());
    }
  });
  fuzz::expect_nf_error_naming("config.json", [&] {
    const DecoderLMConfig c = formats::config_from_minimind_current_json(text, "config.json");
    const std::string written = formats::minimind_current_json_from_config(c, nn::mlp_hidden_dim(block_config(c).mlp));
    NF_FUZZ_CHECK(model_config_to_json(formats::config_from_minimind_current_json(written, "config.json")) == model_config_to_json(c),
                  "MiniMind current config: parse, write, parse");
  });
  fuzz::expect_nf_error_naming("config.json", [&] {
    const EncoderConfig c = formats::encoder_config_from_bert_json(text, "config.json");
    const std::string written = formats::bert_json_from_config(c, nn::mlp_hidden_dim(encoder_block_config(c).mlp));
    NF_FUZZ_CHECK(encoder_config_to_json(formats::encoder_config_from_bert_json(written, "config.json")) ==
                      encoder_config_to_json(c),
                  "BERT config: parse, write, parse");
  });
  fuzz::expect_nf_error_naming("config.json", [&] {
    const ViTConfig c = formats::vit_config_from_hf_json(text, "config.json");
    NF_FUZZ_CHECK(vit_config_to_json(formats::vit_config_from_hf_json(formats::hf_json_from_vit_config(c), "config.json")) ==
                      vit_config_to_json(c),
                  "ViT config: parse, write, parse");
  });
  for (const bool current : {false, true})
    fuzz::expect_nf_error_naming("meta_000100.json", [&] { (void)formats::config_from_nanochat_meta(text, "meta_000100.json", current); });
  return 0;
}
