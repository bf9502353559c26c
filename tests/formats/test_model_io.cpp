// load_model / save_model: every format round-trips through the dispatcher with identical logits,
// formats are recognised from the path, presets and config files build fresh models, and unknown
// paths and formats are refused by name.
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "nanoformer/nanoformer.h"
#include "support/interop_test_support.h"
#include "support/testing.h"

namespace nf::formats {
namespace {

namespace fs = std::filesystem;

using ModelIoTest = testing::TempDirTest;

Tensor logits_of(models::DecoderLM& model) {
  model.eval();
  return model.forward(Tensor::of({3, 1, 4, 1, 5, 9, 2, 6}, {1, 8}, DType::i64)).logits;
}

TEST_F(ModelIoTest, EveryFormatRoundTripsThroughTheDispatcher) {
  const std::string fixture = std::string(NF_TEST_DATA_DIR) + "/hf/llama_gqa";
  EXPECT_EQ(detect_model_format(fixture), ModelFormat::hf);
  const auto model = load_decoder_lm(fixture);
  const Tensor expected = logits_of(*model);
  const std::pair<std::string, std::string> targets[] = {{"nanoformer", "m.safetensors"}, {"hf", "m_hf"}};
  for (const auto& [format, name] : targets) {
    save_model(*model, path(name), format);
    EXPECT_EQ(model_format_name(detect_model_format(path(name))), format);
    EXPECT_TENSOR_CLOSE(logits_of(*load_decoder_lm(path(name))), expected, 0.0, 0.0) << format;
  }
  models::DecoderLMConfig interleaved = model->config();  // what llama2.c expresses: interleaved RoPE, eps 1e-5
  interleaved.rope_layout = RopeLayout::interleaved;
  interleaved.norm_eps = 1e-5;
  models::DecoderLM llama2c(interleaved);
  save_model(llama2c, path("m.bin"), "llama2c");
  EXPECT_EQ(detect_model_format(path("m.bin")), ModelFormat::llama2c);
  EXPECT_TENSOR_CLOSE(logits_of(*load_decoder_lm(path("m.bin"))), logits_of(llama2c), 0.0, 0.0);
}

// Position tables are built for the positions used (issue 39): a file that claims 2^24 positions
// (or 1,010,000, as Qwen's 1M-context models do) loads, runs a forward and generates in the
// memory of the same weights claiming 256; before, the RoPE tables alone took 1.6 GB at 2^22.
TEST_F(ModelIoTest, AClaimedContextCostsWhatTheSequencesUse) {
  const std::string fixture = std::string(NF_TEST_DATA_DIR) + "/hf/llama_gqa";
  const auto base = load_decoder_lm(fixture);
  save_model(*base, path("hf"), "hf");
  const auto peak_of = [&](int64_t claimed) {
    const std::string config_path = path("hf") + "/config.json";
    nlohmann::json config = nlohmann::json::parse(std::ifstream(config_path));
    config["max_position_embeddings"] = claimed;
    std::ofstream(config_path, std::ios::trunc) << config.dump();
    memory::empty_cache();
    const size_t before = memory::current_bytes();
    memory::reset_peak();
    const auto model = load_decoder_lm(path("hf"));
    EXPECT_EQ(model->config().max_seq_len, claimed);
    model->eval();
    const Tensor logits = model->forward(Tensor::of({3, 1, 4}, {1, 3}, DType::i64)).logits;
    EXPECT_TENSOR_CLOSE(logits, base->forward(Tensor::of({3, 1, 4}, {1, 3}, DType::i64)).logits, 0.0, 0.0) << claimed;
    nn::KVCache cache = model->make_cache();  // as generate makes it: the claimed context
    Tensor next = Tensor::of({3, 1, 4}, {1, 3}, DType::i64);
    for (int step = 0; step < 4; ++step)
      next = argmax(model->forward_cached(next, cache, /*last_only=*/true), -1).reshape({1, 1});
    EXPECT_EQ(cache.length(), 6);
    return memory::peak_bytes() - before;
  };
  const size_t small = peak_of(256);
  for (const int64_t claimed : {int64_t{1} << 22, int64_t{1'010'000}, int64_t{1} << 24})
    EXPECT_LE(peak_of(claimed), small + (size_t{1} << 20)) << claimed << " positions claimed; " << small << " bytes at 256";
  // our own checkpoint holds the config: the model it builds costs the same
  models::DecoderLMConfig c = base->config();
  memory::empty_cache();
  size_t before = memory::current_bytes();
  { models::DecoderLM m(c); before = memory::current_bytes() - before; }
  c.max_seq_len = int64_t{1} << 24;
  const size_t at_small = before;
  before = memory::current_bytes();
  models::DecoderLM claimed(c);
  EXPECT_EQ(memory::current_bytes() - before, at_small);
}

TEST_F(ModelIoTest, MiniMindAndNanochatFoldersAreRecognised) {
  const std::string data = NF_TEST_DATA_DIR;
  EXPECT_EQ(detect_model_format(data + "/minimind/moe"), ModelFormat::minimind);
  EXPECT_EQ(detect_model_format(data + "/minimind_hf/moe"), ModelFormat::minimind_hf);
  EXPECT_EQ(model_format_name(ModelFormat::minimind_hf), "minimind-hf");
  EXPECT_EQ(detect_model_format(data + "/nanochat/d2"), ModelFormat::nanochat);
  const auto minimind = load_decoder_lm(data + "/minimind/dense");
  save_model(*minimind, path("mm"), "minimind");
  EXPECT_TENSOR_CLOSE(logits_of(*load_decoder_lm(path("mm"))), logits_of(*minimind), 0.0, 0.0);
  save_model(*minimind, path("mm_hf"), "minimind-hf");  // 002's form -> the Hugging Face form
  EXPECT_EQ(detect_model_format(path("mm_hf")), ModelFormat::minimind_hf);
  EXPECT_TENSOR_CLOSE(logits_of(*load_decoder_lm(path("mm_hf"))), logits_of(*minimind), 1e-5, 1e-5);
  const auto minimind_hf = load_decoder_lm(data + "/minimind_hf/dense");
  save_model(*minimind_hf, path("mm_hf"), "minimind-hf", {.max_shard_bytes = 10000});
  EXPECT_TRUE(fs::exists(path("mm_hf") + "/model.safetensors.index.json"));
  EXPECT_FALSE(fs::exists(path("mm_hf") + "/model.safetensors"));
  EXPECT_TENSOR_CLOSE(logits_of(*load_decoder_lm(path("mm_hf"))), logits_of(*minimind_hf), 0.0, 0.0);
  const auto nanochat = load_decoder_lm(data + "/nanochat/d2");
  save_model(*nanochat, path("nc"), "nanochat");
  EXPECT_TENSOR_CLOSE(logits_of(*load_decoder_lm(path("nc"))), logits_of(*nanochat), 0.0, 0.0);
}

// nanochat's own model_<step>.pt (torch.save of the compiled model's state dict, names prefixed
// "_orig_mod."), read without Python: the same model as its safetensors form, to the bit.
TEST_F(ModelIoTest, ANanochatFolderWithItsTorchCheckpointLoads) {
  const std::string data = NF_TEST_DATA_DIR;
  EXPECT_EQ(detect_model_format(data + "/nanochat/d2_pt"), ModelFormat::nanochat);
  EXPECT_TENSOR_CLOSE(logits_of(*load_decoder_lm(data + "/nanochat/d2_pt")), logits_of(*load_decoder_lm(data + "/nanochat/d2")),
                      0.0, 0.0);
}

// A Hugging Face folder with only transformers' older pytorch_model.bin, and a MiniMind folder with
// its weights as MiniMind publishes them (a .pth beside config.json): the same models as their
// safetensors forms, to the bit. Two .pth files are ambiguous and refused by name.
TEST_F(ModelIoTest, FoldersWithTorchCheckpointsLoad) {
  const std::string data = NF_TEST_DATA_DIR;
  EXPECT_EQ(detect_model_format(data + "/hf/gpt2_bin"), ModelFormat::hf);
  EXPECT_TENSOR_CLOSE(logits_of(*load_decoder_lm(data + "/hf/gpt2_bin")), logits_of(*load_decoder_lm(data + "/hf/gpt2")), 0.0, 0.0);
  EXPECT_EQ(detect_model_format(data + "/minimind_hf/dense_pth"), ModelFormat::minimind_hf);
  EXPECT_TENSOR_CLOSE(logits_of(*load_decoder_lm(data + "/minimind_hf/dense_pth")),
                      logits_of(*load_decoder_lm(data + "/minimind_hf/dense")), 0.0, 0.0);
  fs::create_directories(path("two"));
  for (const char* name : {"config.json", "full_sft_512.pth"})
    fs::copy_file(data + "/minimind_hf/dense_pth/" + name, path("two/") + name);
  fs::copy_file(data + "/minimind_hf/dense_pth/full_sft_512.pth", path("two/rlhf_512.pth"));
  EXPECT_THROW_WITH(load_decoder_lm(path("two")), "2 .pth files", "keep the one to load");
}

TEST_F(ModelIoTest, PresetsAndConfigFilesBuildFreshModels) {
  EXPECT_EQ(detect_model_format("llama2c-stories260k"), ModelFormat::preset);
  EXPECT_EQ(load_decoder_lm("llama2c-stories260k")->num_parameters(), 260032);
  const std::string config = models::configs_directory() + "/llama2c-stories260k.json";
  EXPECT_EQ(detect_model_format(config), ModelFormat::config);
  EXPECT_EQ(load_decoder_lm(config)->config().name, "llama2c-stories260k");
}

TEST_F(ModelIoTest, UnknownPathsAndFormatsAreNamed) {
  EXPECT_THROW_WITH(load_decoder_lm("gpt3-175b"), "preset 'gpt3-175b' is unknown");
  fs::create_directories(path("empty"));
  EXPECT_THROW_WITH(load_decoder_lm(path("empty")), "a folder, but not a model folder");
  models::DecoderLM model(models::preset_config("llama2c-stories260k"));
  EXPECT_THROW_WITH(save_model(model, path("x"), "onnx"), "format 'onnx' is unknown",
                    "nanoformer, hf, minimind, minimind-hf, nanochat, llama2c");
  EXPECT_THROW_WITH(save_model(model, path("x.bin"), "llama2c", {.max_shard_bytes = 1 << 20}),
                    "format 'llama2c' is not written in shards");
}

}  // namespace
}  // namespace nf::formats
