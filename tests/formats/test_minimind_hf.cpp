// MiniMind's Hugging Face form: the folders of tools/golden/minimind_hf_fixtures.py (a PyTorch
// MiniMindForCausalLM written from the form's description, dense and MoE, saved in float16 by
// save_pretrained) load with the oracle's logits, loss and gradient of every parameter (mapped onto
// our names by the loader's name map); save -> load is identical, in one file or in shards; the two
// MiniMind forms convert into each other with the same logits; bad folders are refused by name.
// NF_MINIMIND_HF_EXPORT_DIR=DIR keeps our exported folders and logits for
// `tools/golden/minimind_hf_fixtures.py check DIR` (the oracle loading what we wrote).
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "nanoformer/nanoformer.h"
#include "support/interop_test_support.h"
#include "support/testing.h"

namespace nf::formats {
namespace {

namespace fs = std::filesystem;

const char* kCases[] = {"dense", "moe"};

std::string fixture(const std::string& name) { return std::string(NF_TEST_DATA_DIR) + "/" + name; }
std::string hf_fixture(const std::string& name) { return fixture("minimind_hf/" + name); }

Tensor eval_logits(models::DecoderLM& model, const Tensor& ids) {
  model.eval();
  return model.forward(ids).logits;
}

// The model's config with `name` set (a loaded config is named after its folder).
std::string config_json_named(const models::DecoderLM& model, const std::string& name) {
  models::DecoderLMConfig c = model.config();
  c.name = name;
  return models::model_config_to_json(c);
}

using MiniMindHfTest = testing::TempDirTest;

TEST_F(MiniMindHfTest, FoldersGiveTheOracleLogitsLossAndGradients) {
  for (const std::string name : kCases) {
    ASSERT_EQ(detect_model_format(hf_fixture(name)), ModelFormat::minimind_hf) << name;
    const auto model = load_minimind(hf_fixture(name));
    const auto golden = io::load_safetensors(hf_fixture(name + ".golden.safetensors"));
    const Tensor logits = eval_logits(*model, golden.at("ids"));
    EXPECT_TENSOR_CLOSE(logits, golden.at("logits"), 1e-5, 1e-5) << name;

    model->train();  // the MoE's load-balancing loss is a training-mode loss
    const models::LMOutput out = model->forward(golden.at("ids"), golden.at("targets"));
    EXPECT_TENSOR_CLOSE(out.loss, golden.at("loss"), 1e-5, 1e-5) << name;
    if (model->config().moe) {
      EXPECT_TENSOR_CLOSE(out.aux_loss, golden.at("aux_loss"), 1e-6, 1e-5) << name;
    }
    out.loss.backward();
    const nn::StateDict expected =
        state_from_minimind(model->config(), MiniMindForm::hf, testing::with_prefix(golden, "grad."), name + ".golden");
    const double grad_err = testing::expect_gradients(*model, expected);
    std::cout << name << ": max abs logit error " << testing::max_abs_diff(logits, golden.at("logits")) << ", loss error "
              << testing::max_abs_diff(out.loss, golden.at("loss")) << ", max abs gradient error " << grad_err << " over "
              << expected.size() << " parameters\n";
  }
  const models::DecoderLMConfig moe = load_minimind(hf_fixture("moe"))->config();
  EXPECT_EQ(moe.moe->n_shared_experts, 1);
  EXPECT_EQ(moe.moe->aux_loss_alpha, 0.05);  // the file's 0.1 over top_k 2 (the pick fraction vs ours, the token fraction)
  EXPECT_EQ(moe.rope_layout, RopeLayout::half);
}

TEST_F(MiniMindHfTest, SaveThenLoadIsIdenticalInOneFileOrInShards) {
  const char* keep = std::getenv("NF_MINIMIND_HF_EXPORT_DIR");
  const fs::path out_dir = keep ? fs::path(keep) : dir_;
  for (const std::string name : kCases) {
    const auto model = load_minimind(hf_fixture(name));
    const Tensor ids = io::load_safetensors(hf_fixture(name + ".golden.safetensors")).at("ids");
    const Tensor logits = eval_logits(*model, ids);
    for (const int64_t max_shard_bytes : {int64_t{0}, int64_t{12000}}) {
      const std::string folder = name + (max_shard_bytes ? "_sharded" : "");
      save_model(*model, (out_dir / folder).string(), "minimind-hf", {.max_shard_bytes = max_shard_bytes});
      EXPECT_EQ(fs::exists(out_dir / folder / "model.safetensors.index.json"), max_shard_bytes > 0) << folder;
      const auto loaded = load_minimind((out_dir / folder).string());
      EXPECT_EQ(model_config_to_json(loaded->config()), config_json_named(*model, folder)) << folder;
      EXPECT_TENSOR_CLOSE(eval_logits(*loaded, ids), logits, 0.0, 0.0) << folder;
      if (keep)
        io::save_safetensors((out_dir / (folder + ".logits.safetensors")).string(), {{"ids", ids}, {"logits", logits}});
    }
  }
}

// 002's form rotates interleaved pairs, the HF form halves: the writers reorder the q / k rows.
TEST_F(MiniMindHfTest, TheTwoFormsConvertIntoEachOther) {
  for (const std::string name : kCases) {
    const auto hf = load_minimind(hf_fixture(name));
    const Tensor ids = io::load_safetensors(hf_fixture(name + ".golden.safetensors")).at("ids");
    save_model(*hf, path("002"), "minimind");
    ASSERT_EQ(detect_model_format(path("002")), ModelFormat::minimind);
    const auto lmconfig = load_minimind(path("002"));
    EXPECT_EQ(lmconfig->config().rope_layout, RopeLayout::interleaved);
    EXPECT_TENSOR_CLOSE(eval_logits(*lmconfig, ids), eval_logits(*hf, ids), 1e-5, 1e-5) << name;
    save_model(*lmconfig, path("back"), "minimind-hf");
    const auto back = load_minimind(path("back"));
    EXPECT_EQ(models::model_config_to_json(back->config()), config_json_named(*hf, "back")) << name;
    for (const auto& [tensor, value] : hf->state_dict())  // the row reorderings undo each other exactly
      EXPECT_TENSOR_CLOSE(back->state_dict().at(tensor), value, 0.0, 0.0) << tensor;
    fs::remove_all(path("002"));
    fs::remove_all(path("back"));
  }
  // and 002's fixtures (interleaved, the MoE one with 002's balance loss) into the HF form
  for (const std::string name : {"minimind/dense", "minimind/moe"}) {
    const auto lmconfig = load_minimind(fixture(name));
    const auto expected = io::load_safetensors(fixture(name + ".logits.safetensors"));
    save_model(*lmconfig, path("hf"), "minimind-hf");
    const auto hf = load_minimind(path("hf"));
    EXPECT_TENSOR_CLOSE(eval_logits(*hf, expected.at("ids")), expected.at("logits"), 1e-5, 1e-5) << name;
    if (hf->config().moe) {
      EXPECT_EQ(hf->config().moe->aux_loss_alpha, lmconfig->config().moe->aux_loss_alpha);
      hf->train();
      lmconfig->train();
      const Tensor ids = expected.at("ids");
      EXPECT_TENSOR_CLOSE(hf->forward(ids, ids).aux_loss, lmconfig->forward(ids, ids).aux_loss, 1e-6, 1e-5);
    }
    fs::remove_all(path("hf"));
  }
}

// A copy of the dense fixture whose tensors `edit` changes.
std::string edited_tensors(const std::string& folder, const std::function<void(std::vector<nn::NamedTensor>&)>& edit) {
  std::vector<nn::NamedTensor> tensors;
  {
    const io::SafetensorsFile file = io::SafetensorsFile::open(folder + "/model.safetensors");
    for (const auto& e : file.entries()) tensors.emplace_back(e.name, file.load(e.name));
  }
  edit(tensors);
  io::save_safetensors(folder + "/model.safetensors", tensors);
  return folder;
}

TEST_F(MiniMindHfTest, BadTensorsAreAllNamedInOneError) {
  const std::string folder = edited_tensors(copy_folder(hf_fixture("dense")), [](std::vector<nn::NamedTensor>& ts) {
    std::erase_if(ts, [](const nn::NamedTensor& t) { return t.first == "model.layers.1.mlp.up_proj.weight"; });
    for (auto& [name, t] : ts)
      if (name == "model.layers.0.self_attn.k_proj.weight") t = zeros({32, 32});
    ts.emplace_back("model.layers.0.self_attn.q_norm.weight", zeros({8}));  // MiniMind's newer form
  });
  EXPECT_THROW_WITH(load_minimind(folder), folder, "missing (1): model.layers.1.mlp.up_proj.weight",
                    "unexpected (1): model.layers.0.self_attn.q_norm.weight",
                    "mis-shaped (1): model.layers.0.self_attn.k_proj.weight (32, 32), expected (16, 32)");
}

TEST_F(MiniMindHfTest, ALoneLmHeadIsTheTiedEmbedding) {
  const Tensor ids = io::load_safetensors(hf_fixture("dense.golden.safetensors")).at("ids");
  const std::string folder = edited_tensors(copy_folder(hf_fixture("dense")), [](std::vector<nn::NamedTensor>& ts) {
    for (auto& [name, t] : ts)
      if (name == "model.embed_tokens.weight") name = "lm_head.weight";
  });
  EXPECT_TENSOR_CLOSE(eval_logits(*load_minimind(folder), ids), eval_logits(*load_minimind(hf_fixture("dense")), ids),
                      0.0, 0.0);
}

TEST_F(MiniMindHfTest, BadConfigsAreNamed) {
  const std::string folder = copy_folder(hf_fixture("dense"));
  const std::string config = folder + "/config.json";
  auto with = [&](const std::string& extra) {
    std::ofstream(config, std::ios::trunc) << R"({"model_type": "minimind", "hidden_size": 32, "num_hidden_layers": 2,
      "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 64, "intermediate_size": 32)" + extra + "}";
    return folder;
  };
  EXPECT_TENSOR_CLOSE(eval_logits(*load_minimind(with("")), Tensor::of({1, 2}, {1, 2}, DType::i64)),
                      eval_logits(*load_minimind(hf_fixture("dense")), Tensor::of({1, 2}, {1, 2}, DType::i64)), 0.0, 0.0);
  EXPECT_THROW_WITH(load_minimind(with(R"(, "num_hidden_layer": 2)")), config,
                    "unknown MiniMind (Hugging Face form) config key 'num_hidden_layer'");
  EXPECT_THROW_WITH(config_from_minimind_hf_json(R"({"hidden_size": 32, "num_experts": 4})", config), config,
                    "config key 'num_experts'", "MiniMind's current form");
  // a folder with a key of the current form is read as that form, whose tensors this folder lacks
  EXPECT_THROW_WITH(load_minimind(with(R"(, "head_dim": 8)")), "q_norm");
  EXPECT_THROW_WITH(load_minimind(with(R"(, "inference_rope_scaling": true, "rope_scaling": {"type": "yarn"})")),
                    config, "inference_rope_scaling true (YaRN rope scaling) is not supported");
  EXPECT_THROW_WITH(load_minimind(with(R"(, "rope_scaling": {"type": "yarn", "factor": 4})")), "rope_scaling",
                    "yarn", "(YaRN) is not supported");
  EXPECT_THROW_WITH(load_minimind(with(R"(, "tie_word_embeddings": false)")), "tie_word_embeddings false");
  EXPECT_THROW_WITH(load_minimind(with(R"(, "hidden_act": "gelu")")), "hidden_act 'gelu'");
  EXPECT_THROW_WITH(load_minimind(with(R"(, "use_moe": true, "scoring_func": "sigmoid")")), "scoring_func 'sigmoid'");
  EXPECT_THROW_WITH(load_minimind(with(R"(, "num_attention_heads": "4")")), config, "num_attention_heads");
}

// aux_loss_alpha reads as alpha / top_k; written back, the file's alpha comes out as it went in
// (0.11 with top-2..8, not 0.10999999999999999), and reading that again gives our config unchanged.
TEST_F(MiniMindHfTest, AuxLossAlphaSurvivesReadWriteRead) {
  nlohmann::json base = nlohmann::json::parse(std::ifstream(hf_fixture("moe") + "/config.json"));
  base["n_routed_experts"] = 8;
  int drifted = 0;
  for (int cents = 1; cents < 1000; ++cents)
    for (int64_t k = 1; k <= 8; ++k) {
      const double alpha = std::stod(std::to_string(cents / 100) + "." + std::to_string(100 + cents % 100).substr(1));
      nlohmann::json j = base;
      j["aux_loss_alpha"] = alpha;
      j["num_experts_per_tok"] = k;
      const models::DecoderLMConfig c = config_from_minimind_hf_json(j.dump(), "config.json");
      const std::string written = minimind_hf_json_from_config(c, nn::mlp_hidden_dim(models::block_config(c).mlp));
      const double written_alpha = nlohmann::json::parse(written).at("aux_loss_alpha").get<double>();
      if (written_alpha != alpha && ++drifted <= 3)
        ADD_FAILURE() << "aux_loss_alpha " << alpha << " with top_k " << k << " written back as "
                      << nlohmann::json(written_alpha).dump();
      EXPECT_EQ(model_config_to_json(config_from_minimind_hf_json(written, "config.json")), models::model_config_to_json(c));
    }
  EXPECT_EQ(drifted, 0);
}

// A config without intermediate_size (or with null) takes MiniMindConfig's 8/3 hidden_size rounded
// up to 64, spelled out, so that reading its written form gives the same config (a fuzz finding:
// it read as 0, "derived", and came back as 128).
TEST_F(MiniMindHfTest, AMissingIntermediateSizeIsDerivedAsMiniMindDoes) {
  for (const bool null : {false, true}) {
    nlohmann::json j = nlohmann::json::parse(std::ifstream(hf_fixture("moe") + "/config.json"));
    j.erase("intermediate_size");
    if (null) j["intermediate_size"] = nullptr;
    const models::DecoderLMConfig c = config_from_minimind_hf_json(j.dump(), "config.json");
    const int64_t dim = j.at("hidden_size").get<int64_t>();
    EXPECT_EQ(c.mlp_hidden, (dim * 8 / 3 + 63) / 64 * 64) << j.dump();
    const std::string written = minimind_hf_json_from_config(c, nn::mlp_hidden_dim(models::block_config(c).mlp));
    EXPECT_EQ(model_config_to_json(config_from_minimind_hf_json(written, "config.json")), models::model_config_to_json(c));
  }
}

TEST_F(MiniMindHfTest, ModelsTheFormCannotExpressAreRefused) {
  models::DecoderLMConfig untied = load_minimind(hf_fixture("dense"))->config();
  untied.tie_embeddings = false;
  EXPECT_THROW_WITH(save_minimind_hf(models::DecoderLM(untied), path("u")), "save_minimind_hf: tie_embeddings false");
  models::DecoderLM gpt(models::parse_model_config(R"({"vocab_size": 32, "dim": 16, "n_layers": 1, "n_heads": 4, "max_seq_len": 8})"));
  EXPECT_THROW_WITH(save_model(gpt, path("g"), "minimind-hf"), "save_minimind_hf: norm layernorm");
  EXPECT_THROW_WITH(save_model(gpt, path("n.safetensors"), "nanoformer", {.max_shard_bytes = 1000}),
                    "format 'nanoformer' is not written in shards");
}

}  // namespace
}  // namespace nf::formats
