// OptimizerSet: the config and its JSON (round trip; unknown keys, wrong types and bad values
// named), the optimizers each name builds, lr = initial_lr x factor, and exact resumption: for every
// kind, 3 steps, the optimizer state saved to a safetensors file and loaded into a fresh model and
// set, then 3 more steps give bit-identical parameters and state to 6 uninterrupted steps. A state
// dict that does not fit is refused with every problem listed.
#include <unistd.h>

#include <filesystem>

#include "nanoformer/nanoformer.h"
#include "nanoformer/optim/optimizer_set.h"
#include "support/testing.h"

namespace nf::optim {
namespace {

// Untied, with RMSNorm gains: every group of every preset has members.
constexpr const char* kModel =
    R"({"vocab_size": 24, "dim": 16, "n_layers": 2, "n_heads": 2, "max_seq_len": 8, "norm": "rmsnorm",
        "position": "rope", "mlp": "swiglu", "attention_bias": false, "mlp_bias": false, "tie_embeddings": false})";

std::unique_ptr<models::DecoderLM> make_model(uint64_t seed) {
  Generator gen(seed);
  return std::make_unique<models::DecoderLM>(models::parse_model_config(kModel), gen);
}

// One training step on a fixed batch (drawn from `step`), with an lr factor that changes per step.
void train_step(models::DecoderLM& model, OptimizerSet& optimizers, int step) {
  Generator gen(1000 + static_cast<uint64_t>(step));
  const Tensor ids = randint(0, 24, {2, 8}, gen), targets = randint(0, 24, {2, 8}, gen);
  optimizers.set_lr_factor(1.0 - 0.1 * step);
  optimizers.zero_grad();
  model.forward(ids, targets).loss.backward();
  optimizers.step();
}

bool equal_bits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() && a.to_vector<double>() == b.to_vector<double>();
}

OptimizerConfig config_named(const std::string& name) {
  OptimizerConfig c;
  c.name = name;
  c.weight_decay = 0.01;
  c.nesterov = name == "sgd";
  return c;
}

class OptimizerSetResume : public ::testing::TestWithParam<std::string> {};

TEST_P(OptimizerSetResume, ResumingFromSavedStateIsBitIdentical) {
  const OptimizerConfig config = config_named(GetParam());
  auto uninterrupted = make_model(1);
  OptimizerSet all(config, *uninterrupted);
  for (int s = 0; s < 6; ++s) train_step(*uninterrupted, all, s);

  auto first = make_model(1);
  OptimizerSet first_half(config, *first);
  for (int s = 0; s < 3; ++s) train_step(*first, first_half, s);
  const auto dir = std::filesystem::temp_directory_path() / ("nf_optimizer_set_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string model_path = (dir / "model.safetensors").string(), state_path = (dir / "optimizer.safetensors").string();
  nn::save_module(*first, model_path);
  io::save_safetensors(state_path, first_half.state_dict());

  auto resumed = make_model(2);  // other weights, overwritten by the load
  OptimizerSet second_half(config, *resumed);
  nn::load_module(*resumed, model_path);
  second_half.load_state_dict(io::load_safetensors(state_path));
  std::filesystem::remove_all(dir);
  for (int s = 3; s < 6; ++s) train_step(*resumed, second_half, s);

  for (const auto& [name, p] : uninterrupted->state_dict())
    EXPECT_TRUE(equal_bits(p, resumed->state_dict().at(name))) << name;
  const nn::StateDict expected = all.state_dict(), actual = second_half.state_dict();
  ASSERT_EQ(expected.size(), actual.size());
  for (const auto& [name, t] : expected) EXPECT_TRUE(equal_bits(t, actual.at(name))) << name;
  EXPECT_FALSE(equal_bits(uninterrupted->tok_embeddings->weight, make_model(1)->tok_embeddings->weight));
}

INSTANTIATE_TEST_SUITE_P(EveryKind, OptimizerSetResume, ::testing::Values("sgd", "adam", "adamw", "muon", "nanochat"));

TEST(OptimizerSet, EachNameBuildsItsOptimizers) {
  auto model = make_model(1);
  const std::vector<std::pair<std::string, std::vector<std::string>>> expected = {
      {"sgd", {"sgd"}}, {"adam", {"adam"}}, {"adamw", {"adamw"}}, {"muon", {"adamw", "muon"}}, {"nanochat", {"adamw", "muon"}}};
  for (const auto& [name, kinds] : expected) {
    OptimizerSet set(config_named(name), *model);
    std::vector<std::string> built;
    for (const auto& o : set.optimizers()) built.push_back(o->kind());
    EXPECT_EQ(built, kinds) << name;
    EXPECT_EQ(set.parameters().size(), model->parameters().size()) << name;
  }
  OptimizerSet nanochat(config_named("nanochat"), *model);
  EXPECT_EQ(nanochat.describe(),
            "adamw unembedding: 1 tensors, 384 values, lr 0.0277128, weight_decay 0.01\n"
            "adamw embedding: 1 tensors, 384 values, lr 1.38564, weight_decay 0.01\n"
            "adamw vectors: 5 tensors, 80 values, lr 0.005, weight_decay 0\n"
            "muon matrices: 14 tensors, 8192 values, lr 0.02, weight_decay 0\n");
  const nn::StateDict state = nanochat.state_dict();
  EXPECT_TRUE(state.count("muon.matrices.layers.1.mlp.w2.weight.momentum_buffer"));
  EXPECT_TRUE(state.count("adamw.embedding.tok_embeddings.weight.exp_avg_sq"));
  EXPECT_TRUE(state.count("adamw.vectors.norm.weight.step"));
  EXPECT_TRUE(state.count("muon.steps"));
}

TEST(OptimizerSet, LrFactorScalesEveryGroupsInitialLr) {
  auto model = make_model(1);
  OptimizerSet set(config_named("nanochat"), *model);
  set.set_lr_factor(0.25);
  for (const auto& o : set.optimizers())
    for (const ParamGroup& g : o->groups()) EXPECT_DOUBLE_EQ(g.lr, 0.25 * g.initial_lr) << g.name;
  EXPECT_THROW_WITH(set.set_lr_factor(-1.0), "lr factor -1");
}

TEST(OptimizerSet, ConfigJsonRoundTripsAndNamesBadKeys) {
  OptimizerConfig c;
  c.name = "muon";
  c.lr = 3e-4;
  c.beta1 = 0.8;
  c.muon_nesterov = false;
  c.vector_lr = 0.125;
  const OptimizerConfig back = optimizer_config_from_json(optimizer_config_to_json(c));
  EXPECT_EQ(optimizer_config_to_json(back), optimizer_config_to_json(c));
  EXPECT_EQ(back.name, "muon");
  EXPECT_EQ(back.lr, 3e-4);
  EXPECT_FALSE(back.muon_nesterov);
  EXPECT_EQ(optimizer_config_from_json(R"({"name": "sgd"})").momentum, 0.9);  // absent keys keep defaults
  EXPECT_THROW_WITH(optimizer_config_from_json(R"({"lrr": 1})", "run.json"), "run.json", "unknown key 'lrr'",
                    "did you mean 'lr'");
  EXPECT_THROW_WITH(optimizer_config_from_json(R"({"lr": "fast"})"), "key 'lr'", "expected a number");
  EXPECT_THROW_WITH(optimizer_config_from_json(R"({"name": "adamax"})"), "key 'name'", "adamax",
                    "sgd, adam, adamw, muon, nanochat");
  EXPECT_THROW_WITH(optimizer_config_from_json(R"({"beta2": 1.0})"), "key 'beta2' has value 1");
  EXPECT_THROW_WITH(optimizer_config_from_json(R"({"name": "sgd", "momentum": 0, "nesterov": true})"),
                    "key 'nesterov'", "needs momentum > 0");
  EXPECT_THROW_WITH(optimizer_config_from_json(R"({"matrix_lr": -0.02})"), "key 'matrix_lr' has value -0.02");
  auto model = make_model(1);
  OptimizerConfig bad;
  bad.muon_momentum = 1.5;
  EXPECT_THROW_WITH(OptimizerSet(bad, *model), "muon_momentum");
}

TEST(OptimizerSet, NothingToTrainIsAnError) {
  auto model = make_model(1);
  model->requires_grad_(false);
  EXPECT_THROW_WITH(OptimizerSet(config_named("adamw"), *model), "no trainable parameters");
  EXPECT_THROW_WITH(OptimizerSet(config_named("muon"), *model), "no trainable parameters");
}

TEST(OptimizerSet, AStateThatDoesNotFitIsRefusedListingEveryProblem) {
  auto model = make_model(1);
  OptimizerSet set(config_named("nanochat"), *model);
  train_step(*model, set, 0);
  const nn::StateDict good = set.state_dict();
  nn::StateDict bad = good;
  bad.erase("muon.matrices.layers.0.attn.q_proj.weight.momentum_buffer");
  bad["adamw.vectors.norm.weight.exp_avg"] = zeros({3});
  bad["adamw.steps"] = Tensor::scalar(1.0, DType::f32);
  bad["adamw.unembedding.output.weight.step"] = Tensor::scalar(-2, DType::i64);
  bad["sgd.steps"] = Tensor::scalar(1, DType::i64);
  EXPECT_THROW_WITH(set.load_state_dict(bad), "optimizer state", "'nanochat'",
                    "missing (1): muon.matrices.layers.0.attn.q_proj.weight.momentum_buffer", "unexpected (1): sgd.steps",
                    "mis-shaped (1): adamw.vectors.norm.weight.exp_avg (expected (16), got (3))",
                    "wrong dtype (1): adamw.steps (f32, expected i64)",
                    "negative step count (1): adamw.unembedding.output.weight.step (-2)");
  for (const auto& [name, t] : set.state_dict()) EXPECT_TRUE(equal_bits(t, good.at(name))) << name;  // nothing changed
}

}  // namespace
}  // namespace nf::optim
