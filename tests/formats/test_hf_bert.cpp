// Hugging Face BertModel folders: the fixtures of tools/golden/hf_bert_fixtures.py (BertModel with
// a pooler and gelu; without a pooler, gelu_new and 3 token types; saved by transformers'
// save_pretrained) give transformers' last_hidden_state and pooler_output for a padded batch with
// token types, and every parameter's gradient; padding changes nothing for the real tokens;
// load_model dispatches on model_type; export -> load is identical; a BertFor* checkpoint loads its
// BertModel; bad tensors, configs and inexpressible models are refused by name.
// NF_HF_EXPORT_DIR=DIR keeps the exported folders and our outputs for
// `tools/golden/hf_bert_fixtures.py check DIR` (transformers loading what we wrote).
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "nanoformer/nanoformer.h"
#include "support/interop_test_support.h"
#include "support/testing.h"

namespace nf::formats {
namespace {

namespace fs = std::filesystem;

const char* kCases[] = {"bert", "bert_gelu_new"};

std::string fixture(const std::string& name) { return std::string(NF_TEST_DATA_DIR) + "/hf/" + name; }
std::map<std::string, Tensor> outputs_of(const std::string& name) {
  return io::load_safetensors(fixture(name + ".outputs.safetensors"));
}

void write_text(const fs::path& path, const std::string& text) { std::ofstream(path, std::ios::trunc) << text; }

// The fixture's padded batch through `model` in eval mode.
models::EncoderOutput run(models::EncoderModel& model, const std::map<std::string, Tensor>& x) {
  model.eval();
  return model.forward(x.at("ids"), x.at("token_type_ids"), x.at("attention_mask"));
}

using HfBertTest = testing::TempDirTest;

TEST_F(HfBertTest, TransformersFoldersGiveTransformersOutputs) {
  for (const std::string name : kCases) {
    const auto model = load_hf_bert(fixture(name));
    const auto expected = outputs_of(name);
    const models::EncoderOutput out = run(*model, expected);
    EXPECT_TENSOR_CLOSE(out.last_hidden_state, expected.at("last_hidden_state"), 1e-5, 1e-5) << name;
    std::cout << name << ": max abs last_hidden_state error vs transformers "
              << testing::max_abs_diff(out.last_hidden_state, expected.at("last_hidden_state"));
    EXPECT_EQ(out.pooler_output.defined(), expected.count("pooler_output") > 0) << name;
    if (out.pooler_output.defined()) {
      EXPECT_TENSOR_CLOSE(out.pooler_output, expected.at("pooler_output"), 1e-5, 1e-5) << name;
      std::cout << ", pooler_output " << testing::max_abs_diff(out.pooler_output, expected.at("pooler_output"));
    }
    std::cout << "\n";
  }
  const models::EncoderConfig c = load_hf_bert(fixture("bert_gelu_new"))->config();
  EXPECT_EQ(c.mlp, nn::MLPKind::gelu_tanh);
  EXPECT_EQ(c.type_vocab_size, 3);
  EXPECT_EQ(c.mlp_hidden, 48);
  EXPECT_EQ(c.norm_eps, 1e-12);
  EXPECT_EQ(c.pad_token_id, 0);
}

// loss = sum(last_hidden_state * weight) + sum(pooler_output * pooler_weight); the gradients are
// named by Hugging Face's names through the export name map (a second model holding our gradients
// as its weights, saved as a BertModel folder).
TEST_F(HfBertTest, EveryParameterGradientMatchesTransformers) {
  const auto model = load_hf_bert(fixture("bert"));
  const auto x = outputs_of("bert");
  const auto expected = io::load_safetensors(fixture("bert.grads.safetensors"));
  const models::EncoderOutput out = run(*model, x);
  (sum(out.last_hidden_state * expected.at("weight")) + sum(out.pooler_output * expected.at("pooler_weight"))).backward();
  const auto grads = load_hf_bert(fixture("bert"));
  nn::StateDict state;
  for (const auto& [name, p] : model->named_parameters()) {
    ASSERT_TRUE(p.grad().defined()) << name;
    state[name] = p.grad();
  }
  grads->load_state_dict(state);
  save_hf_bert(*grads, path("grads"));
  const auto ours = io::load_safetensors(path("grads/model.safetensors"));
  double worst = 0;
  size_t compared = 0;
  for (const auto& [name, grad] : expected) {
    if (name.rfind("grad.", 0) != 0) continue;
    const std::string hf_name = name.substr(5);
    ASSERT_TRUE(ours.count(hf_name)) << hf_name;
    EXPECT_TENSOR_CLOSE(ours.at(hf_name), grad, 1e-4, 1e-4) << hf_name;
    worst = std::max(worst, testing::max_abs_diff(ours.at(hf_name), grad));
    ++compared;
  }
  EXPECT_EQ(compared, ours.size());
  std::cout << "bert: " << compared << " parameter gradients, max abs error vs transformers " << worst << "\n";
}

// The second row's real tokens give the same outputs padded (mask 0 on the padding) as alone, as in
// transformers.
TEST_F(HfBertTest, PaddingChangesNothingForTheRealTokens) {
  const auto model = load_hf_bert(fixture("bert"));
  const auto x = outputs_of("bert");
  const Tensor padded = run(*model, x).last_hidden_state.narrow(0, 1, 1).narrow(1, 0, x.at("short_ids").size(1));
  const Tensor alone = model->forward(x.at("short_ids"), x.at("short_token_type_ids")).last_hidden_state;
  EXPECT_TENSOR_CLOSE(padded, alone, 1e-5, 1e-5);
  EXPECT_TENSOR_CLOSE(alone, x.at("short_last_hidden_state"), 1e-5, 1e-5);
  std::cout << "bert: real tokens padded vs alone, max abs difference " << testing::max_abs_diff(padded, alone)
            << " (transformers' own: "
            << testing::max_abs_diff(x.at("last_hidden_state").narrow(0, 1, 1).narrow(1, 0, padded.size(1)),
                            x.at("short_last_hidden_state"))
            << ")\n";
  // without the mask the padding is attended to, and the real tokens' outputs change
  const Tensor unmasked = model->forward(x.at("ids"), x.at("token_type_ids")).last_hidden_state;
  EXPECT_GT(testing::max_abs_diff(unmasked.narrow(0, 1, 1).narrow(1, 0, padded.size(1)), alone), 1e-2);
}

// The fixtures, and a fresh ReLU encoder (intermediate.dense / output.dense <- the FeedForward's
// linear1 / linear2) run on the fixture `bert`'s inputs.
TEST_F(HfBertTest, ExportThenLoadIsIdentical) {
  const char* keep = std::getenv("NF_HF_EXPORT_DIR");
  const fs::path out_dir = keep ? fs::path(keep) : dir_;
  Generator gen(5);
  const auto relu = std::make_shared<models::EncoderModel>(models::parse_encoder_config(R"({"architecture": "encoder",
      "name": "bert_relu", "vocab_size": 64, "dim": 32, "n_layers": 2, "n_heads": 4, "mlp": "relu", "mlp_hidden": 40,
      "max_seq_len": 16,
      "type_vocab_size": 2, "pooler": true, "init_std": 0.3})"), gen);
  const std::pair<std::string, std::shared_ptr<models::EncoderModel>> cases[] = {
      {"bert", load_hf_bert(fixture("bert"))}, {"bert_gelu_new", load_hf_bert(fixture("bert_gelu_new"))},
      {"bert_relu", relu}};
  for (const auto& [name, model] : cases) {
    const auto x = outputs_of(name == "bert_relu" ? "bert" : name);
    const models::EncoderOutput out = run(*model, x);
    save_model(*model, (out_dir / name).string(), "hf");
    const auto loaded = models::model_as<models::EncoderModel>(load_model((out_dir / name).string()), name);
    EXPECT_EQ(loaded->config_json(), model->config_json()) << name;
    const models::EncoderOutput again = run(*loaded, x);
    EXPECT_TENSOR_CLOSE(again.last_hidden_state, out.last_hidden_state, 0.0, 0.0) << name;
    if (!keep) continue;
    std::vector<nn::NamedTensor> ours = {{"ids", x.at("ids")}, {"token_type_ids", x.at("token_type_ids")},
                                         {"attention_mask", x.at("attention_mask")},
                                         {"last_hidden_state", out.last_hidden_state}};
    if (out.pooler_output.defined()) ours.emplace_back("pooler_output", out.pooler_output);
    io::save_safetensors((out_dir / (name + ".outputs.safetensors")).string(), ours);
  }
}

TEST_F(HfBertTest, NanoformerCheckpointOfABertRoundTrips) {
  const auto model = load_hf_bert(fixture("bert"));
  const auto x = outputs_of("bert");
  save_model(*model, path("bert.safetensors"), "nanoformer");
  const auto loaded = models::model_as<models::EncoderModel>(load_model(path("bert.safetensors")), "bert.safetensors");
  EXPECT_TRUE(loaded->pooler);
  EXPECT_TENSOR_CLOSE(run(*loaded, x).pooler_output, run(*model, x).pooler_output, 0.0, 0.0);
}

// Rewrites folder/model.safetensors through `edit`.
void edit_weights(const std::string& folder, const std::function<void(std::map<std::string, Tensor>&)>& edit) {
  const std::string weights = folder + "/model.safetensors";
  std::map<std::string, Tensor> tensors = io::load_safetensors(weights);
  edit(tensors);
  io::save_safetensors(weights, std::vector<nn::NamedTensor>(tensors.begin(), tensors.end()));
}

TEST_F(HfBertTest, ABertForCheckpointLoadsItsBertModel) {
  const std::string folder = copy_folder(fixture("bert"));
  edit_weights(folder, [](std::map<std::string, Tensor>& tensors) {
    std::map<std::string, Tensor> prefixed = {{"cls.predictions.bias", zeros({64})}};
    for (const auto& [name, t] : tensors) prefixed["bert." + name] = t;
    tensors = prefixed;
  });
  const auto x = outputs_of("bert");
  const auto model = model_as<models::EncoderModel>(load_model(folder), folder);
  EXPECT_TENSOR_CLOSE(run(*model, x).last_hidden_state, x.at("last_hidden_state"), 1e-5, 1e-5);
}

TEST_F(HfBertTest, BadTensorsAreAllNamedInOneError) {
  const std::string folder = copy_folder(fixture("bert"));
  edit_weights(folder, [](std::map<std::string, Tensor>& tensors) {
    tensors.erase("encoder.layer.1.attention.self.key.weight");
    tensors["encoder.layer.2.output.dense.weight"] = zeros({2, 2});
    tensors["embeddings.LayerNorm.weight"] = zeros({33});
    tensors["pooler.dense.bias"] = tensors["pooler.dense.bias"].to(DType::i32);
  });
  EXPECT_THROW_WITH(load_model(folder), folder, "missing (1): encoder.layer.1.attention.self.key.weight",
                    "unexpected (1): encoder.layer.2.output.dense.weight",
                    "mis-shaped (1): embeddings.LayerNorm.weight (33), expected (32)",
                    "wrong dtype (1): pooler.dense.bias (i32");
}

TEST_F(HfBertTest, BadConfigsAreNamed) {
  const std::string folder = copy_folder(fixture("bert"));
  const std::string config = folder + "/config.json";
  auto with = [&](const std::string& extra) {
    write_text(config, R"({"model_type": "bert", "vocab_size": 64, "hidden_size": 32, "num_hidden_layers": 2,
        "num_attention_heads": 4, "intermediate_size": 64, "max_position_embeddings": 16, "type_vocab_size": 2)" +
                           extra + "}");
    return folder;
  };
  EXPECT_NO_THROW(load_model(with("")));
  EXPECT_THROW_WITH(load_model(with(R"(, "hidden_sise": 32)")), config, "unknown BERT config key 'hidden_sise'");
  EXPECT_THROW_WITH(load_model(with(R"(, "position_embedding_type": "relative_key")")),
                    "position_embedding_type 'relative_key' is not supported");
  EXPECT_THROW_WITH(load_model(with(R"(, "hidden_act": "swish")")), "hidden_act 'swish' is not supported");
  EXPECT_THROW_WITH(load_model(with(R"(, "is_decoder": true)")), "is_decoder true is not supported");
  EXPECT_THROW_WITH(load_model(with(R"(, "add_cross_attention": true)")), "'add_cross_attention' is true",
                    "changes the architecture");
  EXPECT_THROW_WITH(load_model(with(R"(, "layer_norm_eps": "small")")), config, "'layer_norm_eps'");
  write_text(config, R"({"model_type": "bert", "hidden_size": 32})");
  EXPECT_THROW_WITH(load_model(folder), "missing key 'vocab_size'");
  write_text(config, R"({"model_type": "roberta"})");
  EXPECT_THROW_WITH(load_model(folder), "model_type 'roberta' is not supported (gpt2, llama, mistral, qwen2, qwen3, bert, vit)");
}

TEST_F(HfBertTest, ModelsBertModelCannotExpressAreRefused) {
  models::EncoderModel sinusoidal(models::parse_encoder_config(R"({"architecture": "encoder", "vocab_size": 32, "dim": 16,
      "n_layers": 1, "n_heads": 2, "max_seq_len": 8, "position": "sinusoidal", "type_vocab_size": 2})"));
  EXPECT_THROW_WITH(save_model(sinusoidal, path("out"), "hf"), "position sinusoidal cannot be expressed by BertModel");
  models::EncoderModel pre_norm(models::parse_encoder_config(R"({"architecture": "encoder", "vocab_size": 32, "dim": 16,
      "n_layers": 1, "n_heads": 2, "max_seq_len": 8, "norm_placement": "pre", "type_vocab_size": 2})"));
  EXPECT_THROW_WITH(save_hf_bert(pre_norm, path("out")), "norm_placement pre");
  models::EncoderModel no_types(models::parse_encoder_config(R"({"architecture": "encoder", "vocab_size": 32, "dim": 16,
      "n_layers": 1, "n_heads": 2, "max_seq_len": 8})"));
  EXPECT_THROW_WITH(save_hf_bert(no_types, path("out")), "type_vocab_size 0");
  EXPECT_FALSE(fs::exists(path("out")));
}

}  // namespace
}  // namespace nf::formats
