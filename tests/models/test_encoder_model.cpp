// EncoderModel: document 004's full encoder (post- and pre-norm, sinusoidal positions, sqrt(dim)
// embedding scale, a padding mask) matches the PyTorch oracle of tools/golden/encoder_004_fixtures.py
// output for output and gradient for gradient; the bert-base preset has BertModel's exact parameter
// count; configs round-trip through JSON and bad ones are refused by key; a nanoformer checkpoint
// round-trips; the pad token's embedding row gets no gradient.
#include <fstream>
#include <iostream>
#include <map>
#include <numeric>
#include <sstream>

#include "nanoformer/nanoformer.h"
#include "support/interop_test_support.h"
#include "support/testing.h"

namespace nf::models {
namespace {

std::string data(const std::string& name) { return std::string(NF_TEST_DATA_DIR) + "/" + name; }

// A small BERT-shaped config with every optional part.
const char* kTinyBert = R"({"architecture": "encoder", "vocab_size": 40, "dim": 16, "n_layers": 2, "n_heads": 4,
    "mlp_hidden": 24, "max_seq_len": 12, "type_vocab_size": 2, "pad_token_id": 0, "pooler": true})";

// Document 004's encoder with the fixture's shapes; placement "post" or "pre".
EncoderConfig config_004(const std::string& placement) {
  return parse_encoder_config(R"({"architecture": "encoder", "vocab_size": 32, "dim": 16, "n_layers": 2,
      "n_heads": 2, "mlp": "relu", "mlp_hidden": 32, "max_seq_len": 16, "position": "sinusoidal",
      "scale_embeddings": true, "embedding_norm": false, "norm_eps": 1e-5, "norm_placement": ")" +
                              placement + R"(", "dropout": 0.1, "attention_dropout": 0.1, "mlp_dropout": 0.1})",
                              "004_" + placement);
}

// 004's parameter names -> ours.
std::string ours_from_004(std::string name) {
  const std::pair<const char*, const char*> renames[] = {
      {"embedding.", "tok_embeddings."}, {"self_attention.W_q.", "attn.q_proj."}, {"self_attention.W_k.", "attn.k_proj."},
      {"self_attention.W_v.", "attn.v_proj."}, {"self_attention.W_o.", "attn.o_proj."}, {"feed_forward.", "mlp."},
      {"norm1.", "attn_norm."}, {"norm2.", "mlp_norm."}, {"final_norm.", "norm."}};
  for (const auto& [theirs, ours] : renames)
    if (auto at = name.find(theirs); at != std::string::npos) name.replace(at, std::string(theirs).size(), ours);
  return name;
}

TEST(EncoderModel, Document004EncoderMatchesPyTorchOutputsAndGradients) {
  for (const std::string placement : {"post", "pre"}) {
    const auto fixture = io::load_safetensors(data("encoder/004_" + placement + ".safetensors"));
    EncoderModel model(config_004(placement));
    nn::StateDict state = model.state_dict();  // keeps our sinusoidal table
    size_t loaded = 0;
    for (const auto& [name, t] : fixture)
      if (name.rfind("param.", 0) == 0) state[ours_from_004(name.substr(6))] = t, ++loaded;
    model.load_state_dict(state);
    EXPECT_EQ(loaded, model.named_parameters().size()) << placement;
    model.eval();
    const Tensor out = model.forward(fixture.at("ids"), {}, fixture.at("mask")).last_hidden_state;
    EXPECT_TENSOR_CLOSE(out, fixture.at("out"), 1e-5, 1e-5) << placement;
    std::cout << "004 " << placement << "-norm encoder: max abs error vs PyTorch " << testing::max_abs_diff(out, fixture.at("out"))
              << "\n";
    sum(out * fixture.at("weight")).backward();
    double worst = 0;
    for (const auto& [name, grad] : fixture) {
      if (name.rfind("grad.", 0) != 0) continue;
      const Tensor ours = model.state_dict().at(ours_from_004(name.substr(5))).grad();
      ASSERT_TRUE(ours.defined()) << name;
      EXPECT_TENSOR_CLOSE(ours, grad, 1e-4, 1e-4) << name;
      worst = std::max(worst, testing::max_abs_diff(ours, grad));
    }
    std::cout << "004 " << placement << "-norm encoder: max abs gradient error " << worst << "\n";
  }
}

int64_t count_of(const std::vector<ParameterPart>& parts, const std::string& name) {
  auto it = std::find_if(parts.begin(), parts.end(), [&](const ParameterPart& p) { return p.name == name; });
  return it == parts.end() ? -1 : it->count;
}

// bert-base-uncased's shapes; BertModel (with its pooler) has sum(p.numel()) = 109,482,240:
//   30522*768 + 512*768 + 2*768 + 2*768 (embeddings and their LayerNorm)
//   + 12 * (4*(768*768 + 768) + 768*3072 + 3072 + 3072*768 + 768 + 2*2*768) + 768*768 + 768 (pooler)
TEST(EncoderModel, BertBasePresetHasBertModelsParameterCount) {
  std::ifstream in(preset_path("bert-base"));
  std::ostringstream text;
  text << in.rdbuf();
  const EncoderConfig c = parse_encoder_config(text.str(), "bert-base");
  EXPECT_EQ(c.name, "bert-base");
  const std::vector<ParameterPart> parts = encoder_parameter_parts(c);
  EXPECT_EQ(std::accumulate(parts.begin(), parts.end(), int64_t{0},
                            [](int64_t n, const ParameterPart& p) { return n + p.count; }),
            109'482'240);
  const std::pair<const char*, int64_t> expected[] = {
      {"embedding", 30522 * 768}, {"positions", 512 * 768}, {"token types", 2 * 768},
      {"norms", 2 * 768 + 12 * 4 * 768}, {"attention", 12 * 4 * (768 * 768 + 768)},
      {"mlp", 12 * (2 * 768 * 3072 + 3072 + 768)}, {"pooler", 768 * 768 + 768}};
  for (const auto& [name, count] : expected) EXPECT_EQ(count_of(parts, name), count) << name;
}

// The part a parameter of EncoderModel belongs to, from its dotted name.
std::string part_of(const std::string& name) {
  auto has = [&](const char* s) { return name.find(s) != std::string::npos; };
  if (name.rfind("tok_embeddings.", 0) == 0) return "embedding";
  if (name.rfind("pos_embeddings.", 0) == 0) return "positions";
  if (name.rfind("token_type_embeddings.", 0) == 0) return "token types";
  if (name.rfind("pooler.", 0) == 0) return "pooler";
  if (has("norm.")) return "norms";
  if (has(".attn.")) return "attention";
  if (has(".mlp.")) return "mlp";
  return "?";
}

// The analytic parts equal the built model's parameters grouped by name, for every kind of option.
TEST(EncoderModel, PartsEqualTheBuiltModelsParametersByName) {
  const std::string swiglu = R"({"architecture": "encoder", "vocab_size": 40, "dim": 16, "n_layers": 3, "n_heads": 2,
      "max_seq_len": 8, "mlp": "swiglu", "norm": "rmsnorm", "norm_placement": "pre", "embedding_norm": false,
      "attention_bias": false, "mlp_bias": false})";
  for (const EncoderConfig& c : {parse_encoder_config(kTinyBert, "tiny"), config_004("post"), config_004("pre"),
                                 parse_encoder_config(swiglu, "swiglu")}) {
    const EncoderModel model(c);
    std::map<std::string, int64_t> built;
    for (const auto& [name, tensor] : model.named_parameters()) built[part_of(name)] += tensor.numel();
    int64_t total = 0;
    for (const ParameterPart& part : model.parameter_parts()) {
      EXPECT_EQ(part.count, built[part.name]) << part.name;
      total += part.count;
    }
    EXPECT_EQ(total, model.num_parameters());
    EXPECT_EQ(built.count("?"), 0u);
  }
}

TEST(EncoderModel, ConfigRoundTripsThroughJson) {
  const EncoderConfig c = parse_encoder_config(kTinyBert, "tiny");
  const std::string text = encoder_config_to_json(c);
  EXPECT_EQ(encoder_config_to_json(parse_encoder_config(text, "again")), text);
  EXPECT_EQ(config_architecture(text, "tiny"), "encoder");
  Generator gen(0);
  EXPECT_EQ(build_model(text, "tiny", gen)->architecture(), "encoder");
}

TEST(EncoderModel, BadConfigsAreNamedByKey) {
  const std::string base = R"("architecture": "encoder", "vocab_size": 40, "dim": 16, "n_layers": 1, "n_heads": 4,
                              "max_seq_len": 8)";
  EXPECT_THROW_WITH(parse_encoder_config("{" + base + R"(, "type_vocab": 2})", "e.json"), "e.json",
                    "unknown key 'type_vocab'");
  EXPECT_THROW_WITH(parse_encoder_config("{" + base + R"(, "pooler": 1})", "e.json"), "key 'pooler'", "true or false");
  EXPECT_THROW_WITH(parse_encoder_config("{" + base + R"(, "type_vocab_size": 1000000000})", "e.json"),
                    "key 'type_vocab_size' has value 1000000000", "at most 16777216");
  EXPECT_THROW_WITH(parse_encoder_config("{" + base + R"(, "position": "rope"})", "e.json"), "key 'position'",
                    "learned or sinusoidal");
  EXPECT_THROW_WITH(parse_encoder_config("{" + base + R"(, "norm_placement": "sandwich"})", "e.json"),
                    "key 'norm_placement'", "post or pre");
  EXPECT_THROW_WITH(parse_encoder_config("{" + base + R"(, "scale_embeddings": "sqrt"})", "e.json"),
                    "key 'scale_embeddings'", "true or false");
  EXPECT_THROW_WITH(parse_encoder_config("{" + base + R"(, "n_heads": 3})", "e.json"), "key 'n_heads'", "divide dim");
  EXPECT_THROW_WITH(parse_encoder_config("{" + base + R"(, "pad_token_id": 40})", "e.json"), "key 'pad_token_id'");
  EXPECT_THROW_WITH(parse_encoder_config(R"({"vocab_size": 40})", "e.json"), "key 'architecture'", "\"encoder\"");
}

TEST(EncoderModel, OutputsHaveTheirShapesAndInputsAreChecked) {
  EncoderModel model(parse_encoder_config(kTinyBert, "tiny"));
  model.eval();
  const Tensor ids = Tensor::of({3, 1, 4, 1, 5, 9, 2, 6}, {2, 4}, DType::i64);
  const EncoderOutput out = model.forward(ids, {}, {}, true);
  EXPECT_EQ(out.last_hidden_state.shape(), (Shape{2, 4, 16}));
  EXPECT_EQ(out.pooler_output.shape(), (Shape{2, 16}));
  ASSERT_EQ(out.hidden.size(), 2u);
  EXPECT_TENSOR_CLOSE(out.hidden.back(), out.last_hidden_state, 0.0, 0.0);  // post-norm: no final norm
  // absent token types are all type 0
  EXPECT_TENSOR_CLOSE(model.forward(ids, zeros({2, 4}, DType::i64)).last_hidden_state, out.last_hidden_state, 0.0, 0.0);
  EXPECT_THROW_WITH(model.forward(Tensor::of({1, 2, 3}, {3}, DType::i64)), "ids must be (B, T)");
  EXPECT_THROW_WITH(model.forward(zeros({1, 13}, DType::i64)), "exceeds max_seq_len 12");
  EXPECT_THROW_WITH(model.forward(ids, {}, ones({2, 3}, DType::i64)), "attention_mask (2, 3) must match ids (2, 4)");
  EncoderModel no_types(config_004("post"));
  EXPECT_THROW_WITH(no_types.forward(ids, zeros({2, 4}, DType::i64)), "no token types");
}

// torch's padding_idx: the pad token's row starts at zero and never receives a gradient.
TEST(EncoderModel, ThePadTokensEmbeddingRowGetsNoGradient) {
  EncoderModel model(parse_encoder_config(kTinyBert, "tiny"));
  const Tensor table = model.tok_embeddings->weight;
  EXPECT_EQ(sum(abs(table.narrow(0, 0, 1))).item(), 0.0);
  const Tensor ids = Tensor::of({0, 5, 0, 7}, {1, 4}, DType::i64);
  sum(model.forward(ids).last_hidden_state * randn({1, 4, 16}, default_generator())).backward();
  EXPECT_EQ(sum(abs(table.grad().narrow(0, 0, 1))).item(), 0.0);
  EXPECT_GT(sum(abs(table.grad().narrow(0, 5, 1))).item(), 0.0);
}

using EncoderModelFiles = testing::TempDirTest;

TEST_F(EncoderModelFiles, NanoformerCheckpointsRoundTrip) {
  for (const std::string placement : {"post", "pre"}) {
    Generator gen(3);
    EncoderModel model(config_004(placement), gen);
    model.eval();
    const Tensor ids = Tensor::of({3, 1, 4, 1, 5, 9}, {1, 6}, DType::i64);
    formats::save_model(model, path(placement + ".safetensors"), "nanoformer");
    const auto loaded = model_as<EncoderModel>(formats::load_model(path(placement + ".safetensors")), placement);
    loaded->eval();
    EXPECT_EQ(loaded->config_json(), model.config_json());
    EXPECT_TENSOR_CLOSE(loaded->forward(ids).last_hidden_state, model.forward(ids).last_hidden_state, 0.0, 0.0);
    EXPECT_EQ(loaded->norm != nullptr, placement == "pre");
  }
}

}  // namespace
}  // namespace nf::models
