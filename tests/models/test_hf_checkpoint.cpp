// Hugging Face folders: the fixtures of tools/golden/hf_fixtures.py (GPT2LMHeadModel, LlamaForCausalLM
// with GQA, and with linear rope scaling, saved by transformers' save_pretrained) load with
// transformers' logits; export -> load is identical; sharded indexes load and a missing shard or a
// tensor listed twice is named; bad tensors, unknown config keys and inexpressible models are refused
// by name. NF_HF_EXPORT_DIR=DIR keeps the exported folders and our logits for
// `tools/golden/hf_fixtures.py check DIR` (transformers loading what we wrote).
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <unistd.h>

#include "nanoformer/nanoformer.h"
#include "models/interop_test_support.h"
#include "support/testing.h"

namespace nf::models {
namespace {

namespace fs = std::filesystem;

const char* kCases[] = {"gpt2", "llama_gqa", "llama_linear_rope"};

std::string fixture(const std::string& name) { return std::string(NF_TEST_DATA_DIR) + "/hf/" + name; }

void write_text(const fs::path& path, const std::string& text) { std::ofstream(path, std::ios::trunc) << text; }

using HfCheckpointTest = TempDirTest;

Tensor eval_logits(DecoderLM& model, const Tensor& ids) {
  model.eval();
  return model.forward(ids).logits;
}

TEST_F(HfCheckpointTest, TransformersFoldersGiveTransformersLogits) {
  for (const std::string name : kCases) {
    ASSERT_TRUE(is_hf_folder(fixture(name))) << name;
    const auto model = load_hf(fixture(name));
    const auto expected = io::load_safetensors(fixture(name + ".logits.safetensors"));
    const Tensor logits = eval_logits(*model, expected.at("ids"));
    EXPECT_TENSOR_CLOSE(logits, expected.at("logits"), 1e-5, 1e-5) << name;
    std::cout << name << ": max abs logit error vs transformers " << max_abs_diff(logits, expected.at("logits"))
              << "\n";
  }
  EXPECT_EQ(load_hf(fixture("llama_gqa"))->config().n_kv_heads, 2);
  EXPECT_EQ(load_hf(fixture("llama_linear_rope"))->config().rope_scaling, nn::RopeScaling::linear);
  EXPECT_EQ(load_hf(fixture("llama_linear_rope"))->config().rope_theta, 500.0);
}

TEST_F(HfCheckpointTest, ExportThenLoadIsIdentical) {
  const char* keep = std::getenv("NF_HF_EXPORT_DIR");
  const fs::path out_dir = keep ? fs::path(keep) : dir_;
  for (const std::string name : kCases) {
    const auto model = load_hf(fixture(name));
    const Tensor ids = io::load_safetensors(fixture(name + ".logits.safetensors")).at("ids");
    const Tensor logits = eval_logits(*model, ids);
    save_hf(*model, (out_dir / name).string());
    const auto loaded = load_hf((out_dir / name).string());
    EXPECT_EQ(model_config_to_json(loaded->config()), model_config_to_json(model->config())) << name;
    EXPECT_TENSOR_CLOSE(eval_logits(*loaded, ids), logits, 0.0, 0.0) << name;
    if (keep) io::save_safetensors((out_dir / (name + ".logits.safetensors")).string(), {{"ids", ids}, {"logits", logits}});
  }
}

// Splits gpt2's model.safetensors into two shards and an index; `edit` changes them before loading.
void write_shards(const std::string& folder, const std::string& index_json_extra, bool duplicate_in_shards) {
  const std::string weights = folder + "/model.safetensors";
  std::vector<nn::NamedTensor> first, second;
  std::string weight_map;
  {
    const io::SafetensorsFile file = io::SafetensorsFile::open(weights);
    for (const auto& e : file.entries()) {
      const bool in_first = e.name.find("transformer.h.1.") == std::string::npos;
      (in_first ? first : second).emplace_back(e.name, file.load(e.name));
      weight_map += (weight_map.empty() ? "" : ", ") + ("\"" + e.name + "\": \"") +
                    (in_first ? "model-00001-of-00002.safetensors" : "model-00002-of-00002.safetensors") + "\"";
    }
  }
  if (duplicate_in_shards) second.push_back(first.front());
  fs::remove(weights);
  io::save_safetensors(folder + "/model-00001-of-00002.safetensors", first);
  io::save_safetensors(folder + "/model-00002-of-00002.safetensors", second);
  write_text(folder + "/model.safetensors.index.json",
             R"({"metadata": {"total_size": 1}, "weight_map": {)" + weight_map + index_json_extra + "}}");
}

TEST_F(HfCheckpointTest, ShardedFoldersLoadAndBadIndexesAreNamed) {
  const auto expected = io::load_safetensors(fixture("gpt2.logits.safetensors"));
  const std::string folder = copy_folder(fixture("gpt2"));
  write_shards(folder, "", false);
  EXPECT_TENSOR_CLOSE(eval_logits(*load_hf(folder), expected.at("ids")), expected.at("logits"), 1e-5, 1e-5);

  fs::remove(folder + "/model-00002-of-00002.safetensors");
  EXPECT_THROW_WITH(load_hf(folder), "model.safetensors.index.json", "shard 'model-00002-of-00002.safetensors'",
                    "is missing");

  fs::remove_all(folder);
  copy_folder(fixture("gpt2"));
  write_shards(folder, "", true);
  EXPECT_THROW_WITH(load_hf(folder), "is in two shards", "model-00001-of-00002.safetensors");

  fs::remove_all(folder);
  copy_folder(fixture("gpt2"));
  write_shards(folder, R"(, "transformer.wte.weight": "model-00001-of-00002.safetensors")", false);
  EXPECT_THROW_WITH(load_hf(folder), "tensor 'transformer.wte.weight' is listed twice");
}

TEST_F(HfCheckpointTest, BadTensorsAreAllNamedInOneError) {
  const std::string folder = copy_folder(fixture("llama_gqa"));
  const std::string weights = folder + "/model.safetensors";
  std::vector<nn::NamedTensor> tensors;
  {
    const io::SafetensorsFile file = io::SafetensorsFile::open(weights);
    for (const auto& e : file.entries()) {
      if (e.name == "model.layers.1.self_attn.k_proj.weight") continue;
      Tensor t = file.load(e.name);
      if (e.name == "model.norm.weight") t = zeros({33});
      if (e.name == "model.layers.0.input_layernorm.weight") t = t.to(DType::i32);
      tensors.emplace_back(e.name, t);
    }
  }
  tensors.emplace_back("model.layers.7.mlp.gate_proj.weight", zeros({2, 2}));
  io::save_safetensors(weights, tensors);
  EXPECT_THROW_WITH(load_hf(folder), folder, "missing (1): model.layers.1.self_attn.k_proj.weight",
                    "unexpected (1): model.layers.7.mlp.gate_proj.weight",
                    "mis-shaped (1): model.norm.weight (33), expected (32)",
                    "wrong dtype (1): model.layers.0.input_layernorm.weight (i32");
}

TEST_F(HfCheckpointTest, BadConfigsAreNamed) {
  const std::string folder = copy_folder(fixture("gpt2"));
  const std::string config = folder + "/config.json";
  auto with = [&](const std::string& text) {
    write_text(config, text);
    return folder;
  };
  const std::string base = R"("model_type": "gpt2", "vocab_size": 64, "n_embd": 32, "n_layer": 2, "n_head": 4,
                              "n_positions": 16, "n_inner": 64)";
  EXPECT_THROW_WITH(load_hf(with("{" + base + R"(, "n_embdd": 32})")), config, "unknown GPT-2 config key 'n_embdd'");
  EXPECT_THROW_WITH(load_hf(with("{" + base + R"(, "activation_function": "swish"})")),
                    "activation_function 'swish' is not supported");
  EXPECT_THROW_WITH(load_hf(with("{" + base + R"(, "scale_attn_by_inverse_layer_idx": true})")),
                    "scale_attn_by_inverse_layer_idx true");
  EXPECT_THROW_WITH(load_hf(with(R"({"model_type": "roberta"})")), "model_type 'roberta' is not supported");
  EXPECT_THROW_WITH(load_hf(with(R"({"model_type": "gpt2", "n_embd": 32})")), "missing key 'vocab_size'");
  EXPECT_THROW_WITH(load_hf(path("nowhere")), "not a Hugging Face model folder");
}

// Keys of an unexpected JSON type are nf::Errors naming the file, never nlohmann exceptions.
TEST_F(HfCheckpointTest, ConfigKeysOfTheWrongTypeNameTheFile) {
  EXPECT_THROW_WITH(config_from_hf_json(R"({"model_type": "gpt2", "activation_function": 5})", "m/config.json"),
                    "m/config.json");
  EXPECT_THROW_WITH(config_from_hf_json(R"({"model_type": "llama", "hidden_act": [1]})", "l/config.json"),
                    "l/config.json");
}

TEST_F(HfCheckpointTest, ModelsNeitherClassExpressesAreRefused) {
  DecoderLM nanochat(parse_model_config(R"({"vocab_size": 32, "dim": 16, "n_layers": 1, "n_heads": 2,
    "max_seq_len": 8, "norm": "rmsnorm", "position": "rope", "mlp": "swiglu", "qk_norm": true})"));
  EXPECT_THROW_WITH(save_hf(nanochat, path("out")), "qk_norm true cannot be expressed by LlamaForCausalLM");
  DecoderLM alibi(parse_model_config(R"({"vocab_size": 32, "dim": 16, "n_layers": 1, "n_heads": 2,
    "max_seq_len": 8, "position": "alibi"})"));
  EXPECT_THROW_WITH(save_hf(alibi, path("out")), "position alibi");
}

}  // namespace
}  // namespace nf::models
