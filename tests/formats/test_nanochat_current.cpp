// nanochat's current GPT: tests/fixtures/nanochat/current_92d63d4, written by
// tools/golden/nanochat_92d63d4_fixtures.py with nanochat's own gpt.py at karpathy/nanochat@92d63d4
// (random weights; value embeddings, residual scalars, smear, backout, SSSL sliding windows, padded
// vocabulary), loads from its model_000000.pt with nanochat's logits and gradients; a cached decode
// equals the full forward; save -> load is identical; missing meta keys take the writer's defaults.
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <nlohmann/json.hpp>

#include "nanoformer/formats/gguf_checkpoint.h"
#include "nanoformer/nanoformer.h"
#include "support/interop_test_support.h"
#include "support/testing.h"

namespace nf::formats {
namespace {

namespace fs = std::filesystem;

const std::string kFolder = std::string(NF_TEST_DATA_DIR) + "/nanochat/current_92d63d4";
const std::string kGolden = std::string(NF_TEST_DATA_DIR) + "/nanochat/current_92d63d4.golden.safetensors";

using NanochatCurrentTest = testing::TempDirTest;

Tensor eval_logits(models::DecoderLM& model, const Tensor& ids) {
  model.eval();
  return model.forward(ids).logits;
}

TEST_F(NanochatCurrentTest, ReadsTheCurrentFormAsOneConfiguration) {
  const models::DecoderLMConfig c = load_nanochat(kFolder)->config();
  EXPECT_TRUE(c.value_embeddings && c.residual_scalars && c.smear && c.backout);
  EXPECT_EQ(c.vocab_size, 50);  // the 64 rows of the file's tables are its padding
  EXPECT_EQ(c.sliding_window, 129);  // flash-attn's (128, 0): 128 keys before and the query's own
  EXPECT_EQ(c.window_pattern, "SSSL");
  EXPECT_EQ(c.rope_theta, 100000.0);
  EXPECT_DOUBLE_EQ(c.attention_scale, 1.44 / std::sqrt(8.0));
}

TEST_F(NanochatCurrentTest, LogitsEqualNanochats) {
  const auto golden = io::load_safetensors(kGolden);
  const auto model = load_nanochat(kFolder);
  const Tensor logits = eval_logits(*model, golden.at("ids"));
  EXPECT_TENSOR_CLOSE(logits, golden.at("logits"), 1e-4, 0.0);
  std::cout << "nanochat@92d63d4: max abs logit error " << testing::max_abs_diff(logits, golden.at("logits")) << "\n";
}

TEST_F(NanochatCurrentTest, GradientsEqualNanochats) {
  const auto golden = io::load_safetensors(kGolden);
  const auto model = load_nanochat(kFolder);
  model->train();
  const models::LMOutput out = model->forward(golden.at("ids"), golden.at("targets"));
  EXPECT_NEAR(out.loss.item(), golden.at("loss").item(), 1e-5);
  out.loss.backward();
  // nanochat's gradients under our names: written as a checkpoint of the same folder and read back
  // (the reader's name map, padding rows dropped)
  std::vector<nn::NamedTensor> grads;
  for (const auto& [name, t] : testing::with_prefix(golden, "grad.")) grads.emplace_back(name, t);
  fs::create_directories(path("grads"));
  fs::copy_file(kFolder + "/meta_000000.json", path("grads/meta_000000.json"));
  io::save_safetensors(path("grads/model_000000.safetensors"), grads);
  const nn::StateDict expected = load_nanochat(path("grads"))->state_dict();
  const double worst = testing::expect_gradients(*model, expected, 1e-4, 1e-4);
  std::cout << "nanochat@92d63d4: max abs gradient error " << worst << " over " << expected.size() << " parameters\n";
  for (const char* kind : {"value_embeds.1.weight", "layers.3.attn.ve_gate.weight", "residual_scalars.resid_lambdas",
                           "residual_scalars.x0_lambdas", "smear.gate_weight", "smear.lambda", "backout.lambda"})
    EXPECT_TRUE(expected.count(kind)) << kind;
}

TEST_F(NanochatCurrentTest, CachedDecodeEqualsTheFullForwardPastTheWindow) {
  const auto golden = io::load_safetensors(kGolden);
  const auto model = load_nanochat(kFolder);
  const Tensor ids = narrow(golden.at("ids"), 0, 0, 1);  // (1, 160): past the window of 129
  const Tensor full = eval_logits(*model, ids);
  nn::KVCache cache = model->make_cache();
  std::vector<Tensor> steps{model->forward_cached(narrow(ids, 1, 0, 100), cache)};
  for (int64_t t = 100; t < ids.size(1); ++t) steps.push_back(model->forward_cached(narrow(ids, 1, t, 1), cache));
  EXPECT_TENSOR_CLOSE(cat(steps, 1), full, 1e-4, 1e-4);
  EXPECT_FALSE(cache.can_truncate(50));  // the smear's carried embedding belongs to the last position
}

TEST_F(NanochatCurrentTest, SaveThenLoadIsIdentical) {
  const auto golden = io::load_safetensors(kGolden);
  const auto model = load_nanochat(kFolder);
  save_nanochat(*model, path("out"));
  const auto written = io::load_safetensors(path("out/model_000000.safetensors"));
  EXPECT_EQ(written.at("lm_head.weight").shape(), (Shape{64, 32}));  // padded as nanochat holds it
  EXPECT_EQ(written.at("value_embeds.3.weight").shape(), (Shape{64, 16}));
  const auto loaded = load_nanochat(path("out"));
  models::DecoderLMConfig config = loaded->config();
  config.name = model->config().name;
  EXPECT_EQ(models::model_config_to_json(config), model_config_to_json(model->config()));
  EXPECT_TENSOR_CLOSE(eval_logits(*loaded, golden.at("ids")), eval_logits(*model, golden.at("ids")), 0.0, 0.0);
}

TEST_F(NanochatCurrentTest, MissingMetaKeysTakeTheWritersDefaults) {
  const std::string folder = copy_folder(kFolder);
  auto meta = nlohmann::json::parse(std::ifstream(folder + "/meta_000000.json"));
  meta["model_config"].erase("window_pattern");  // checkpoint_manager: "L", full context
  meta["model_config"].erase("sequence_len");    // GPTConfig: 2048
  std::ofstream(folder + "/meta_000000.json") << meta.dump();
  const models::DecoderLMConfig c = load_nanochat(folder)->config();
  EXPECT_EQ(c.sliding_window, 0);
  EXPECT_EQ(c.window_pattern, "");
  EXPECT_EQ(c.max_seq_len, 2048);
  meta["model_config"].erase("n_embd");  // GPTConfig: 768, which the tensors are not
  std::ofstream(folder + "/meta_000000.json") << meta.dump();
  EXPECT_THROW_WITH(load_nanochat(folder), "model_000000.pt", "transformer.wte.weight");
  meta["model_config"]["n_embd"] = 32;
  meta["model_config"]["window_pattern"] = "SXL";
  std::ofstream(folder + "/meta_000000.json") << meta.dump();
  EXPECT_THROW_WITH(load_nanochat(folder), "meta_000000.json", "window_pattern", "SXL");
}

TEST_F(NanochatCurrentTest, ModelsOutsideTheFormAreRefusedByOption) {
  models::DecoderLMConfig c = load_nanochat(kFolder)->config();
  c.backout = false;
  EXPECT_THROW_WITH(save_nanochat(models::DecoderLM(c), path("n")), "save_nanochat", "value_embeddings / residual_scalars");
  c = load_nanochat(kFolder)->config();
  c.sliding_window = 64;
  EXPECT_THROW_WITH(save_nanochat(models::DecoderLM(c), path("n")), "save_nanochat", "sliding_window 64");
}

// The other writers cannot hold the current GPT's options: a LLaMA they all write is refused, naming
// the option, once it sets one (before, save_hf and the rest wrote it without them).
TEST_F(NanochatCurrentTest, OtherFormatsRefuseTheCurrentGPTsOptionsByName) {
  const models::DecoderLMConfig llama = models::preset_config("llama2c-stories260k");
  const std::pair<const char*, std::function<void(const models::DecoderLM&, const std::string&)>> writers[] = {
      {"save_hf", [](const models::DecoderLM& m, const std::string& d) { save_hf(m, d); }},
      {"save_gguf", [](const models::DecoderLM& m, const std::string& d) { save_gguf(m, d + ".gguf"); }},
      {"save_minimind", [](const models::DecoderLM& m, const std::string& d) { save_minimind(m, d); }},
      {"save_llama2c", [](const models::DecoderLM& m, const std::string& d) { save_llama2c(m, d + ".bin"); }}};
  for (const char* option : {"attention_scale", "value_embeddings", "residual_scalars", "smear", "backout"}) {
    models::DecoderLMConfig c = llama;
    c.attention_scale = std::string(option) == "attention_scale" ? 0.5 : 0.0;
    c.value_embeddings = std::string(option) == "value_embeddings";
    c.residual_scalars = std::string(option) == "residual_scalars";
    c.smear = std::string(option) == "smear";
    c.backout = std::string(option) == "backout";
    const models::DecoderLM model(c);
    for (const auto& [writer, save] : writers) {
      EXPECT_THROW_WITH(save(model, path(std::string(writer) + option)), writer, option) << writer << " " << option;
    }
  }
  for (const auto& [writer, save] : writers) EXPECT_NO_THROW(save(models::DecoderLM(llama), path(writer))) << writer;
}

}  // namespace
}  // namespace nf::formats
