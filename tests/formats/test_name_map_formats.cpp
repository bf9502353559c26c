// MiniMind2 and nanochat checkpoints: the fixtures of tools/golden/name_map_fixtures.py (the
// document-derived models of fixtures_models.py under each implementation's tensor names) and of
// tools/golden/minimind_04b56ea_fixtures.py (MiniMind's own model.py at 04b56ea, MoE) load with the
// reference's logits; save -> load is identical; missing MiniMind keys take LMConfig's defaults;
// unknown config keys, missing tensors and models the format cannot express are refused by name.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>
#include <unistd.h>

#include "nanoformer/nanoformer.h"
#include "support/interop_test_support.h"
#include "support/testing.h"

namespace nf::formats {
namespace {

namespace fs = std::filesystem;

std::string fixture(const std::string& name) { return std::string(NF_TEST_DATA_DIR) + "/" + name; }

Tensor eval_logits(models::DecoderLM& model, const Tensor& ids) {
  model.eval();
  return model.forward(ids).logits;
}

using NameMapFormatsTest = testing::TempDirTest;

struct Case {
  const char* folder;
  std::function<std::shared_ptr<models::DecoderLM>(const std::string&)> load;
  std::function<void(const models::DecoderLM&, const std::string&)> save;
};

void save_minimind_002(const models::DecoderLM& model, const std::string& dir) { save_minimind(model, dir); }

const Case kCases[] = {{"minimind/dense", load_minimind, save_minimind_002},
                       {"minimind/moe", load_minimind, save_minimind_002},
                       {"nanochat/d2", load_nanochat, save_nanochat}};

TEST_F(NameMapFormatsTest, FixturesGiveTheReferenceLogitsAndRoundTrip) {
  for (const Case& c : kCases) {
    const auto model = c.load(fixture(c.folder));
    const auto expected = io::load_safetensors(fixture(std::string(c.folder) + ".logits.safetensors"));
    const Tensor logits = eval_logits(*model, expected.at("ids"));
    EXPECT_TENSOR_CLOSE(logits, expected.at("logits"), 1e-5, 1e-5) << c.folder;
    std::cout << c.folder << ": max abs logit error " << testing::max_abs_diff(logits, expected.at("logits")) << "\n";
    c.save(*model, path("out"));
    const auto loaded = c.load(path("out"));
    models::DecoderLMConfig config = loaded->config();
    config.name = model->config().name;  // the folder's name
    EXPECT_EQ(models::model_config_to_json(config), model_config_to_json(model->config())) << c.folder;
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
  models::DecoderLM gpt(models::parse_model_config(R"({"vocab_size": 32, "dim": 16, "n_layers": 1, "n_heads": 4, "max_seq_len": 8})"));
  EXPECT_THROW_WITH(save_minimind(gpt, path("m")), "save_minimind: norm layernorm");
  EXPECT_THROW_WITH(save_nanochat(gpt, path("n")), "save_nanochat: norm layernorm");
  models::DecoderLMConfig two_shared = load_minimind(fixture("minimind/moe"))->config();
  two_shared.moe->n_shared_experts = 2;  // 04b56ea's MOEFeedForward builds one shared FeedForward or none
  EXPECT_THROW_WITH(save_minimind(models::DecoderLM(two_shared), path("m")), "save_minimind: moe.n_shared_experts 2");
}

// tests/fixtures/minimind/moe_04b56ea: MiniMind's own model.py at jingyaogong/minimind@04b56ea
// (tools/golden/minimind_04b56ea_fixtures.py), whose one shared expert is a FeedForward named
// feed_forward.shared_experts.w1 (no list index).
TEST_F(NameMapFormatsTest, MiniMindsOwnMoEAt04b56eaLoadsWithItsLogitsAndRoundTrips) {
  const auto model = load_minimind(fixture("minimind/moe_04b56ea"));
  ASSERT_TRUE(model->config().moe);
  EXPECT_EQ(model->config().moe->n_shared_experts, 1);
  const auto expected = io::load_safetensors(fixture("minimind/moe_04b56ea.logits.safetensors"));
  const Tensor logits = eval_logits(*model, expected.at("ids"));
  EXPECT_TENSOR_CLOSE(logits, expected.at("logits"), 1e-5, 1e-5);
  std::cout << "minimind/moe_04b56ea: max abs logit error " << testing::max_abs_diff(logits, expected.at("logits")) << "\n";

  save_minimind(*model, path("out"));
  const io::SafetensorsFile written = io::SafetensorsFile::open(path("out") + "/model.safetensors");
  std::set<std::string> names;
  for (const auto& e : written.entries()) names.insert(e.name);
  EXPECT_TRUE(names.count("layers.1.feed_forward.shared_experts.w2.weight"));
  EXPECT_FALSE(names.count("layers.1.feed_forward.shared_experts.0.w2.weight"));
  const nlohmann::json config = nlohmann::json::parse(std::ifstream(path("out") + "/config.json"));
  EXPECT_EQ(config.at("n_shared_experts"), true);
  EXPECT_TENSOR_CLOSE(eval_logits(*load_minimind(path("out")), expected.at("ids")), logits, 0.0, 0.0);
}

// A key missing from 002's config.json takes LMConfig's default at 04b56ea (what MiniMind would build).
TEST_F(NameMapFormatsTest, MissingMiniMindKeysTakeLMConfigsDefaults) {
  // the 04b56ea folder with every key at LMConfig's default left out
  const std::string folder = copy_folder(fixture("minimind/moe_04b56ea"));
  {
    nlohmann::json config = nlohmann::json::parse(std::ifstream(folder + "/config.json"));
    for (const char* key : {"n_kv_heads", "norm_eps", "rope_theta", "dropout", "flash_attn", "num_experts_per_tok",
                            "n_routed_experts", "n_shared_experts", "scoring_func", "aux_loss_alpha", "seq_aux",
                            "norm_topk_prob"})
      ASSERT_EQ(config.erase(key), 1u) << key;
    std::ofstream(folder + "/config.json") << config.dump(2);
  }
  const auto expected = io::load_safetensors(fixture("minimind/moe_04b56ea.logits.safetensors"));
  EXPECT_TENSOR_CLOSE(eval_logits(*load_minimind(folder), expected.at("ids")), expected.at("logits"), 1e-5, 1e-5);

  const models::DecoderLMConfig d = config_from_minimind_json(R"({"model_type": "minimind"})", "config.json");
  EXPECT_EQ(std::make_tuple(d.dim, d.n_layers, d.n_heads, d.n_kv_heads, d.vocab_size, d.max_seq_len, d.mlp_hidden,
                            d.mlp_multiple_of),
            std::make_tuple(512, 8, 8, 2, 6400, 8192, 0, 64));
  EXPECT_EQ(d.rope_theta, 1e6);
  EXPECT_EQ(d.norm_eps, 1e-5);
  EXPECT_TRUE(d.tie_embeddings);
  EXPECT_FALSE(d.moe);
  const models::DecoderLMConfig m = config_from_minimind_json(R"({"model_type": "minimind", "use_moe": true})", "config.json");
  ASSERT_TRUE(m.moe);
  EXPECT_EQ(std::make_tuple(m.moe->n_experts, m.moe->top_k, m.moe->n_shared_experts, m.moe->aux_loss_alpha,
                            m.moe->seq_aux, m.moe->norm_topk_prob),
            std::make_tuple(4, 2, 1, 0.1, true, true));
  // n_kv_heads None: n_heads (Attention); n_shared_experts: one FeedForward unless None
  EXPECT_EQ(config_from_minimind_json(R"({"model_type": "minimind", "n_kv_heads": null})", "c").n_kv_heads, 8);
  const std::pair<const char*, int64_t> shared[] = {{"true", 1}, {"false", 1}, {"0", 1}, {"2", 1}, {"null", 0}};
  for (const auto& [value, count] : shared)
    EXPECT_EQ(config_from_minimind_json(std::string(R"({"model_type": "minimind", "use_moe": true, "n_shared_experts": )") +
                                            value + "}",
                                        "c")
                  .moe->n_shared_experts,
              count)
        << value;
  EXPECT_THROW_WITH(config_from_minimind_json(R"({"use_moe": true, "n_shared_experts": "one"})", "config.json"),
                    "config.json", "'n_shared_experts'");
}

}  // namespace
}  // namespace nf::formats
