// MiniMind2 and nanochat checkpoints: the fixtures of tools/golden/name_map_fixtures.py (the
// document-derived models of fixtures_models.py under each implementation's tensor names) load
// with the reference's logits; save -> load is identical; unknown config keys, missing tensors and
// models the format cannot express are refused by name.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <unistd.h>

#include "nanoformer/nanoformer.h"
#include "support/interop_test_support.h"
#include "support/testing.h"

namespace nf::models {
namespace {

namespace fs = std::filesystem;

std::string fixture(const std::string& name) { return std::string(NF_TEST_DATA_DIR) + "/" + name; }

Tensor eval_logits(DecoderLM& model, const Tensor& ids) {
  model.eval();
  return model.forward(ids).logits;
}

using NameMapFormatsTest = TempDirTest;

struct Case {
  const char* folder;
  std::function<std::shared_ptr<DecoderLM>(const std::string&)> load;
  std::function<void(const DecoderLM&, const std::string&)> save;
};

void save_minimind_002(const DecoderLM& model, const std::string& dir) { save_minimind(model, dir); }

const Case kCases[] = {{"minimind/dense", load_minimind, save_minimind_002},
                       {"minimind/moe", load_minimind, save_minimind_002},
                       {"nanochat/d2", load_nanochat, save_nanochat}};

TEST_F(NameMapFormatsTest, FixturesGiveTheReferenceLogitsAndRoundTrip) {
  for (const Case& c : kCases) {
    const auto model = c.load(fixture(c.folder));
    const auto expected = io::load_safetensors(fixture(std::string(c.folder) + ".logits.safetensors"));
    const Tensor logits = eval_logits(*model, expected.at("ids"));
    EXPECT_TENSOR_CLOSE(logits, expected.at("logits"), 1e-5, 1e-5) << c.folder;
    std::cout << c.folder << ": max abs logit error " << max_abs_diff(logits, expected.at("logits")) << "\n";
    c.save(*model, path("out"));
    const auto loaded = c.load(path("out"));
    DecoderLMConfig config = loaded->config();
    config.name = model->config().name;  // the folder's name
    EXPECT_EQ(model_config_to_json(config), model_config_to_json(model->config())) << c.folder;
    EXPECT_TENSOR_CLOSE(eval_logits(*loaded, expected.at("ids")), logits, 0.0, 0.0) << c.folder;
    fs::remove_all(path("out"));
  }
  EXPECT_EQ(load_minimind(fixture("minimind/moe"))->config().moe->n_shared_experts, 1);
}

TEST_F(NameMapFormatsTest, UnknownKeysAndMissingTensorsAreNamed) {
  const std::string minimind = copy_folder(fixture("minimind/dense"));
  std::ofstream(minimind + "/config.json") << R"({"model_type": "minimind", "dim": 16, "n_layers": 2, "n_heads": 4,
    "vocab_size": 32, "max_seq_len": 8, "n_layer": 2})";
  EXPECT_THROW_WITH(load_minimind(minimind), "config.json", "unknown MiniMind config key 'n_layer'");

  const std::string nanochat = copy_folder(fixture("nanochat/d2"));
  std::ofstream(nanochat + "/meta_000000.json") << R"({"model_config": {"sequence_len": 8, "vocab_size": 32,
    "n_layer": 2, "n_head": 4, "n_kv_head": 2, "n_embd": 16, "window": 4}})";
  EXPECT_THROW_WITH(load_nanochat(nanochat), "meta_000000.json", "unknown nanochat model_config key 'window'");

  fs::copy_file(fixture("nanochat/d2/meta_000000.json"), nanochat + "/meta_000000.json",
                fs::copy_options::overwrite_existing);
  std::vector<nn::NamedTensor> tensors;
  {
    const io::SafetensorsFile file = io::SafetensorsFile::open(nanochat + "/model_000000.safetensors");
    for (const auto& e : file.entries())
      if (e.name != "lm_head.weight") tensors.emplace_back(e.name, file.load(e.name));
  }
  io::save_safetensors(nanochat + "/model_000000.safetensors", tensors);
  EXPECT_THROW_WITH(load_nanochat(nanochat), "model_000000.safetensors", "missing (1): lm_head.weight");
}

TEST_F(NameMapFormatsTest, ModelsTheFormatCannotExpressAreRefused) {
  DecoderLM gpt(parse_model_config(R"({"vocab_size": 32, "dim": 16, "n_layers": 1, "n_heads": 4, "max_seq_len": 8})"));
  EXPECT_THROW_WITH(save_minimind(gpt, path("m")), "save_minimind: norm layernorm");
  EXPECT_THROW_WITH(save_nanochat(gpt, path("n")), "save_nanochat: norm layernorm");
}

}  // namespace
}  // namespace nf::models
