// Parameter groups: nanoGPT's decay rule (matrices and embeddings decay; biases and norm gains do
// not), frozen parameters left out and empty groups dropped, the Muon split, and nanochat's preset
// (learning rates scaled by (d/768)^-0.5, its table on an untied nanochat model and on a tied GPT).
#include <cmath>
#include <set>

#include "nanoformer/nanoformer.h"
#include "nanoformer/optim/param_groups.h"
#include "support/testing.h"

namespace nf::optim {
namespace {

constexpr const char* kGpt = R"({"vocab_size": 32, "dim": 16, "n_layers": 2, "n_heads": 4, "max_seq_len": 8})";
constexpr const char* kNanochat =
    R"({"vocab_size": 32, "dim": 192, "n_layers": 2, "n_heads": 2, "max_seq_len": 8, "norm": "rmsnorm_no_weight",
        "position": "rope", "qk_norm": true, "mlp": "relu2", "attention_bias": false, "mlp_bias": false,
        "tie_embeddings": false, "embedding_norm": true, "logit_softcap": 15, "init": "nanochat"})";

models::DecoderLM make_model(const char* config) { return models::DecoderLM(models::parse_model_config(config)); }

// The dotted names of a group's parameters.
std::set<std::string> names_of(const nn::Module& model, const ParamGroup& group) {
  std::set<std::string> names;
  for (const auto& [name, p] : model.named_parameters())
    for (const Tensor& q : group.params)
      if (q.impl() == p.impl()) names.insert(name);
  return names;
}

std::set<std::string> names_where(const nn::Module& model, bool (*keep)(const std::string&, const Tensor&)) {
  std::set<std::string> names;
  for (const auto& [name, p] : model.named_parameters())
    if (keep(name, p)) names.insert(name);
  return names;
}

TEST(ParamGroups, DefaultGroupsDecayMatricesAndEmbeddingsOnly) {
  const models::DecoderLM model = make_model(kGpt);
  const std::vector<ParamGroup> groups = default_param_groups(model, 3e-4, 0.1);
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].name, "decay");
  EXPECT_EQ(groups[0].weight_decay, 0.1);
  EXPECT_EQ(groups[1].name, "no_decay");
  EXPECT_EQ(groups[1].weight_decay, 0.0);
  for (const ParamGroup& g : groups) {
    EXPECT_EQ(g.lr, 3e-4);
    EXPECT_EQ(g.initial_lr, 3e-4);
  }
  const std::set<std::string> decay = names_of(model, groups[0]), no_decay = names_of(model, groups[1]);
  EXPECT_EQ(decay, names_where(model, [](const std::string&, const Tensor& p) { return p.dim() >= 2; }));
  EXPECT_EQ(no_decay, names_where(model, [](const std::string&, const Tensor& p) { return p.dim() < 2; }));
  EXPECT_TRUE(decay.count("tok_embeddings.weight") && decay.count("pos_embeddings.weight"));
  EXPECT_TRUE(no_decay.count("layers.0.attn.q_proj.bias") && no_decay.count("norm.weight"));
  EXPECT_EQ(decay.size() + no_decay.size(), model.named_parameters().size());
}

TEST(ParamGroups, FrozenParametersStayOutAndEmptyGroupsAreDropped) {
  models::DecoderLM model = make_model(kGpt);
  model.requires_grad_(false);
  model.tok_embeddings->weight.set_requires_grad(true);
  const std::vector<ParamGroup> groups = default_param_groups(model, 1e-3, 0.0);
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0].name, "decay");
  EXPECT_EQ(names_of(model, groups[0]), std::set<std::string>{"tok_embeddings.weight"});
  model.requires_grad_(false);
  EXPECT_TRUE(default_param_groups(model, 1e-3, 0.0).empty());
}

TEST(ParamGroups, MuonTakesTheBlockMatricesAndAdamWTheRest) {
  const models::DecoderLM model = make_model(kGpt);
  const HybridParamGroups groups = muon_param_groups(model, 1e-3, 0.02, 0.05);
  ASSERT_EQ(groups.muon.size(), 1u);
  EXPECT_EQ(groups.muon[0].lr, 0.02);
  EXPECT_EQ(groups.muon[0].weight_decay, 0.05);
  EXPECT_EQ(names_of(model, groups.muon[0]), names_where(model, [](const std::string& n, const Tensor& p) {
              return n.starts_with("layers.") && p.dim() == 2;
            }));
  ASSERT_EQ(groups.adamw.size(), 2u);
  EXPECT_EQ(names_of(model, groups.adamw[0]), (std::set<std::string>{"tok_embeddings.weight", "pos_embeddings.weight"}));
  EXPECT_EQ(groups.adamw[0].weight_decay, 0.05);
  EXPECT_EQ(groups.adamw[1].name, "no_decay");
  EXPECT_EQ(groups.adamw[1].lr, 1e-3);
}

TEST(ParamGroups, NanochatPresetOnANanochatModel) {
  const models::DecoderLM model = make_model(kNanochat);  // d = 192: the AdamW rates scale by (192/768)^-0.5 = 2
  EXPECT_DOUBLE_EQ(nanochat_lr_scale(192), 2.0);
  EXPECT_DOUBLE_EQ(nanochat_lr_scale(768), 1.0);
  const HybridParamGroups groups = nanochat_param_groups(model, {});
  ASSERT_EQ(groups.adamw.size(), 2u);  // nanochat's GPT has no 1-D parameters: no "vectors" group
  EXPECT_EQ(groups.adamw[0].name, "unembedding");
  EXPECT_EQ(names_of(model, groups.adamw[0]), std::set<std::string>{"output.weight"});
  EXPECT_DOUBLE_EQ(groups.adamw[0].lr, 0.004 * 2.0);
  EXPECT_EQ(groups.adamw[1].name, "embedding");
  EXPECT_EQ(names_of(model, groups.adamw[1]), std::set<std::string>{"tok_embeddings.weight"});
  EXPECT_DOUBLE_EQ(groups.adamw[1].lr, 0.2 * 2.0);
  ASSERT_EQ(groups.muon.size(), 1u);
  EXPECT_EQ(groups.muon[0].lr, 0.02);
  EXPECT_EQ(names_of(model, groups.muon[0]).size(), 12u);  // 6 matrices per block
  for (const ParamGroup& g : groups.adamw) EXPECT_EQ(g.weight_decay, 0.0);
}

TEST(ParamGroups, NanochatPresetOnATiedGptGivesTheSharedMatrixTheHeadRate) {
  const models::DecoderLM model = make_model(kGpt);  // tied, LayerNorm with biases, learned positions
  const NanochatLearningRates rates{.embedding_lr = 0.3, .unembedding_lr = 0.01, .matrix_lr = 0.05,
                                    .vector_lr = 0.002, .weight_decay = 0.0};
  const HybridParamGroups groups = nanochat_param_groups(model, rates);
  const double scale = std::pow(16.0 / 768.0, -0.5);
  ASSERT_EQ(groups.adamw.size(), 3u);
  EXPECT_EQ(names_of(model, groups.adamw[0]), std::set<std::string>{"tok_embeddings.weight"});
  EXPECT_DOUBLE_EQ(groups.adamw[0].lr, 0.01 * scale);
  EXPECT_EQ(names_of(model, groups.adamw[1]), std::set<std::string>{"pos_embeddings.weight"});
  EXPECT_DOUBLE_EQ(groups.adamw[1].lr, 0.3 * scale);
  EXPECT_EQ(groups.adamw[2].name, "vectors");
  EXPECT_EQ(groups.adamw[2].lr, 0.002);
  EXPECT_EQ(names_of(model, groups.adamw[2]),
            names_where(model, [](const std::string&, const Tensor& p) { return p.dim() == 1; }));
  EXPECT_EQ(names_of(model, groups.muon[0]).size(), 12u);
}

TEST(ParamGroups, NanochatPresetNeedsADecoderLM) {
  nn::Linear linear(4, 3, true);
  EXPECT_THROW_WITH(nanochat_param_groups(linear, {}), "no 2-D tok_embeddings.weight");
}

}  // namespace
}  // namespace nf::optim
