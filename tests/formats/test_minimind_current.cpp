// MiniMind's current form (model/model_minimind.py at jingyaogong/minimind@d65ef2c): the folders of
// tools/golden/minimind_d65ef2c_fixtures.py, made by MiniMind's own code with random weights (dense:
// explicit head_dim 16, untied head, YaRN from inference_rope_scaling, safetensors; moe: 4 experts top-2,
// no shared expert, the weights a float16 torch.save .pth), load with MiniMind's logits, loss, load-
// balancing loss and gradient of every parameter; save -> load is identical; missing keys take
// MiniMindConfig's defaults (a config naming none of the form's own keys is told by its q_norm
// tensors); keys and values we cannot run are refused by name.
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

std::string fixture(const std::string& name) { return std::string(NF_TEST_DATA_DIR) + "/minimind_d65ef2c/" + name; }

Tensor eval_logits(models::DecoderLM& model, const Tensor& ids) {
  model.eval();
  return model.forward(ids).logits;
}

using MiniMindCurrentTest = testing::TempDirTest;

TEST_F(MiniMindCurrentTest, FoldersGiveMiniMindsLogitsLossAndGradients) {
  for (const std::string name : kCases) {
    ASSERT_EQ(detect_model_format(fixture(name)), ModelFormat::minimind_hf) << name;
    const auto model = load_minimind(fixture(name));
    const auto golden = io::load_safetensors(fixture(name + ".golden.safetensors"));
    const Tensor logits = eval_logits(*model, golden.at("ids"));
    EXPECT_TENSOR_CLOSE(logits, golden.at("logits"), 1e-4, 0.0) << name;

    model->train();  // the MoE's load-balancing loss is a training-mode loss
    const models::LMOutput out = model->forward(golden.at("ids"), golden.at("targets"));
    EXPECT_TENSOR_CLOSE(out.loss, golden.at("loss"), 1e-5, 1e-5) << name;
    if (model->config().moe) {
      EXPECT_TENSOR_CLOSE(out.aux_loss, golden.at("aux_loss"), 1e-6, 1e-5) << name;
    }
    out.loss.backward();
    const nn::StateDict expected =
        state_from_minimind(model->config(), MiniMindForm::current, testing::with_prefix(golden, "grad."), name + ".golden");
    const double grad_err = testing::expect_gradients(*model, expected);
    std::cout << name << ": max abs logit error " << testing::max_abs_diff(logits, golden.at("logits")) << ", loss error "
              << testing::max_abs_diff(out.loss, golden.at("loss")) << ", max abs gradient error " << grad_err << " over "
              << expected.size() << " parameters\n";
  }
  const models::DecoderLMConfig dense = load_minimind(fixture("dense"))->config();
  EXPECT_TRUE(dense.qk_norm && dense.qk_norm_weight && !dense.tie_embeddings);
  EXPECT_EQ(dense.head_dim, 16);
  EXPECT_EQ(dense.rope_scaling, nn::RopeScaling::yarn);
  EXPECT_EQ(dense.rope_scale_factor, 16.0);
  EXPECT_EQ(dense.rope_original_max_seq_len, 2048);
  const models::DecoderLMConfig moe = load_minimind(fixture("moe"))->config();
  EXPECT_EQ(moe.moe->n_experts, 4);
  EXPECT_EQ(moe.moe->top_k, 2);
  EXPECT_EQ(moe.moe->n_shared_experts, 0);
  EXPECT_EQ(moe.moe->aux_loss_alpha, 0.01);
  EXPECT_EQ(moe.mlp_hidden, 24);
}

TEST_F(MiniMindCurrentTest, SaveThenLoadIsIdentical) {
  for (const std::string name : kCases) {
    const auto model = load_minimind(fixture(name));
    const Tensor ids = io::load_safetensors(fixture(name + ".golden.safetensors")).at("ids");
    save_model(*model, path(name), "minimind-hf");
    const nlohmann::json written = nlohmann::json::parse(std::ifstream(path(name) + "/config.json"));
    EXPECT_TRUE(written.contains("head_dim") && written.contains("num_experts")) << written.dump();
    const auto loaded = load_minimind(path(name));
    EXPECT_TENSOR_CLOSE(eval_logits(*loaded, ids), eval_logits(*model, ids), 0.0, 0.0) << name;
    models::DecoderLMConfig config = loaded->config();
    config.name = model->config().name;
    EXPECT_EQ(models::model_config_to_json(config), model_config_to_json(model->config())) << name;
  }
}

// A model rotating interleaved pairs is written in the form's half layout with its q / k rows reordered
// head by head, and its per-head q / k norm weights with them: read back, the logits are the same.
TEST_F(MiniMindCurrentTest, AnInterleavedModelIsWrittenWithItsQKNormWeightsReordered) {
  const auto half = load_minimind(fixture("dense"));
  models::DecoderLMConfig c = half->config();
  c.rope_layout = RopeLayout::interleaved;
  models::DecoderLM interleaved(c);
  interleaved.load_state_dict(half->state_dict());  // the same weights, another (valid) model
  save_minimind_hf(interleaved, path("interleaved"));
  const Tensor ids = io::load_safetensors(fixture("dense.golden.safetensors")).at("ids");
  EXPECT_TENSOR_CLOSE(eval_logits(*load_minimind(path("interleaved")), ids), eval_logits(interleaved, ids), 1e-5, 1e-5);
}

// save_pretrained leaves out every key at MiniMindConfig's default: the moe fixture's model described by
// the sizes alone (head_dim 8 = 32 / 4, 4 experts, moe_intermediate_size = intermediate_size) gives the
// same logits, told from the 2025 form by its q_norm tensors; the defaults fill what is missing.
TEST_F(MiniMindCurrentTest, MissingKeysTakeMiniMindsDefaults) {
  const std::string folder = copy_folder(fixture("moe"));
  std::ofstream(folder + "/config.json", std::ios::trunc)
      << R"({"model_type": "minimind", "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4,
             "num_key_value_heads": 2, "vocab_size": 64, "intermediate_size": 24, "use_moe": true,
             "num_experts_per_tok": 2, "max_position_embeddings": 64})";
  const Tensor ids = io::load_safetensors(fixture("moe.golden.safetensors")).at("ids");
  EXPECT_TENSOR_CLOSE(eval_logits(*load_minimind(folder), ids), eval_logits(*load_minimind(fixture("moe")), ids), 0.0, 0.0);
  const models::DecoderLMConfig c = config_from_minimind_current_json(R"({"hidden_size": 64})", "config.json");
  EXPECT_EQ(c.n_layers, 8);
  EXPECT_EQ(c.n_heads, 8);
  EXPECT_EQ(c.n_kv_heads, 4);
  EXPECT_EQ(c.head_dim, 8);
  EXPECT_EQ(c.vocab_size, 6400);
  EXPECT_EQ(c.mlp_hidden, 256);  // ceil(64 pi / 64) 64
  EXPECT_EQ(c.max_seq_len, 32768);
  EXPECT_EQ(c.norm_eps, 1e-6);
  EXPECT_EQ(c.rope_theta, 1e6);
  EXPECT_TRUE(c.tie_embeddings && !c.moe && c.rope_scaling == nn::RopeScaling::none);
  // top-1 (the default) renormalised: weight 1, our topk_then_softmax; written back as it came
  const models::DecoderLMConfig top1 = config_from_minimind_current_json(R"({"hidden_size": 64, "use_moe": true})", "config.json");
  EXPECT_EQ(top1.moe->routing, nn::MoERouting::topk_then_softmax);
  EXPECT_EQ(top1.moe->aux_loss_alpha, 5e-4);
  const nlohmann::json back = nlohmann::json::parse(minimind_current_json_from_config(top1, top1.mlp_hidden));
  EXPECT_EQ(back.at("num_experts_per_tok"), 1);
  EXPECT_EQ(back.at("norm_topk_prob"), true);
  // YaRN acts only past the original 2048 positions
  EXPECT_EQ(config_from_minimind_current_json(R"({"hidden_size": 64, "inference_rope_scaling": true, "max_position_embeddings": 2048})",
                                              "config.json").rope_scaling, nn::RopeScaling::none);
}

TEST_F(MiniMindCurrentTest, KeysWeCannotRunAreNamed) {
  auto config = [](const std::string& extra) {
    return config_from_minimind_current_json(R"({"hidden_size": 32, "num_attention_heads": 4, "head_dim": 16)" + extra + "}",
                                             "dir/config.json");
  };
  EXPECT_THROW_WITH(config(R"(, "scoring_func": "softmax")"), "dir/config.json",
                    "unknown MiniMind (current form) config key 'scoring_func'");
  EXPECT_THROW_WITH(config(R"(, "hidden_act": "gelu")"), "hidden_act 'gelu'");
  // MiniMind's ramp ends at head_dim / 2 - 1, ours (transformers') at head_dim - 1: refused where they differ
  EXPECT_THROW_WITH(config(R"(, "inference_rope_scaling": true, "max_position_embeddings": 4096, "rope_theta": 100)"),
                    "inference_rope_scaling with rope_theta 100 and head_dim 16");
  models::DecoderLMConfig linear = load_minimind(fixture("dense"))->config();
  linear.rope_scaling = nn::RopeScaling::linear;
  EXPECT_THROW_WITH(save_minimind_hf(models::DecoderLM(linear), path("l")), "save_minimind_hf: rope_scaling linear / ntk");
  models::DecoderLMConfig shared = load_minimind(fixture("moe"))->config();
  shared.moe->n_shared_experts = 1;
  EXPECT_THROW_WITH(save_minimind_hf(models::DecoderLM(shared), path("s")), "save_minimind_hf: moe.n_shared_experts 1");
}

}  // namespace
}  // namespace nf::formats
