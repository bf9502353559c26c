// extend_context: a trained model run past its max_seq_len (and with RoPE scaling at evaluation
// time) keeps its weights and its outputs on the positions it had; learned tables are refused.
#include "nanoformer/models/context_extension.h"

#include <cmath>

#include "support/testing.h"

namespace nf::models {
namespace {

std::shared_ptr<DecoderLM> tiny_model(nn::PositionKind position, int64_t max_seq_len = 8) {
  DecoderLMConfig c;
  c.vocab_size = 19;
  c.dim = 16;
  c.n_layers = 2;
  c.n_heads = 2;
  c.max_seq_len = max_seq_len;
  c.position = position;
  c.init_std = 0.3;
  Generator gen(3);
  auto model = std::make_shared<DecoderLM>(c, gen);
  model->eval();
  return model;
}

Tensor ids(int64_t T) {
  std::vector<int64_t> v;
  for (int64_t t = 0; t < T; ++t) v.push_back((t * 5 + 2) % 19);
  return Tensor::from_vector(v, {1, T});
}

class ExtendEachScheme : public ::testing::TestWithParam<nn::PositionKind> {};

// A causal model's logits on a prefix do not depend on later tokens: the extended model on 32
// tokens gives, on the first 8, the original model's logits on those 8.
TEST_P(ExtendEachScheme, KeepsWeightsAndOutputsOnTheOriginalPositions) {
  const auto model = tiny_model(GetParam());
  EXPECT_THROW_WITH(model->forward(ids(32)), "exceeds max_seq_len 8");
  const auto extended = extend_context(model, {.max_seq_len = 32});
  ASSERT_NE(extended.get(), model.get());
  EXPECT_EQ(extended->config().max_seq_len, 32);
  EXPECT_FALSE(extended->is_training());
  const nn::StateDict before = model->state_dict(), after = extended->state_dict();
  for (const auto& [name, tensor] : before) {
    if (name == "pos_embeddings.pe") continue;  // the sinusoidal table, longer now
    EXPECT_TENSOR_CLOSE(after.at(name), tensor, 0.0, 0.0) << name;
  }
  NoGradGuard no_grad;
  const Tensor full = extended->forward(ids(32)).logits;
  EXPECT_TENSOR_CLOSE(narrow(full, 1, 0, 8), model->forward(ids(8)).logits, 1e-5, 1e-5);
}

INSTANTIATE_TEST_SUITE_P(Schemes, ExtendEachScheme,
                         ::testing::Values(nn::PositionKind::sinusoidal, nn::PositionKind::rope,
                                           nn::PositionKind::alibi, nn::PositionKind::t5_bias,
                                           nn::PositionKind::none),
                         [](const auto& info) { return std::string(nn::position_kind_name(info.param)); });

TEST(ContextExtension, SinusoidalTableContinuesTheFormula) {
  const auto extended = extend_context(tiny_model(nn::PositionKind::sinusoidal), {.max_seq_len = 32});
  const auto pe = std::dynamic_pointer_cast<nn::SinusoidalPosition>(extended->pos_embeddings);
  ASSERT_TRUE(pe);
  ASSERT_EQ(pe->pe.shape(), Shape({1, 32, 16}));
  const float* table = pe->pe.contiguous().data<float>();
  for (int64_t t : {8, 20, 31})
    for (int64_t i = 0; i < 8; ++i) {
      const double angle = static_cast<double>(t) / std::pow(10000.0, 2.0 * static_cast<double>(i) / 16.0);
      EXPECT_NEAR(table[t * 16 + 2 * i], std::sin(angle), 1e-6);
      EXPECT_NEAR(table[t * 16 + 2 * i + 1], std::cos(angle), 1e-6);
    }
}

// Position interpolation: the angle at position t uses t / s, so row 2t of the scaled table is row
// t of the unscaled one; NTK-aware scaling raises theta to theta s^(D / (D - 2)).
TEST(ContextExtension, RopeScalingAtEvaluationTime) {
  const auto model = tiny_model(nn::PositionKind::rope);
  const auto plain = std::dynamic_pointer_cast<nn::RotaryPosition>(model->attention_position);
  const auto linear = std::dynamic_pointer_cast<nn::RotaryPosition>(
      extend_context(model, {.max_seq_len = 16, .rope_scaling = nn::RopeScaling::linear, .rope_factor = 2.0})
          ->attention_position);
  ASSERT_TRUE(plain && linear);
  EXPECT_EQ(linear->position_divisor(), 2.0);
  const RopeTables scaled = linear->tables(DType::f32, 16), unscaled = plain->tables(DType::f32, 8);
  for (int64_t t = 0; t < 8; ++t)
    EXPECT_TENSOR_CLOSE(select(scaled.cos, 0, 2 * t), select(unscaled.cos, 0, t), 1e-6, 0.0);
  const auto ntk = std::dynamic_pointer_cast<nn::RotaryPosition>(
      extend_context(model, {.max_seq_len = 16, .rope_scaling = nn::RopeScaling::ntk, .rope_factor = 4.0})
          ->attention_position);
  ASSERT_TRUE(ntk);
  EXPECT_NEAR(ntk->effective_theta(), 10000.0 * std::pow(4.0, 8.0 / 6.0), 1e-6);  // head_dim 8
  EXPECT_EQ(ntk->position_divisor(), 1.0);
  // YaRN: its ramp is set by the context trained at (the model's max_seq_len 8), cos / sin carry 0.1 ln s + 1
  const auto yarn_model = extend_context(model, {.max_seq_len = 32, .rope_scaling = nn::RopeScaling::yarn, .rope_factor = 4.0});
  EXPECT_EQ(yarn_model->config().rope_original_max_seq_len, 8);
  const auto yarn = std::dynamic_pointer_cast<nn::RotaryPosition>(yarn_model->attention_position);
  ASSERT_TRUE(yarn);
  EXPECT_NEAR(yarn->attention_factor(), 0.1 * std::log(4.0) + 1.0, 1e-12);
  const std::vector<double> expected = nn::rope_inverse_frequencies(
      {.head_dim = 8, .max_len = 32, .theta = 10000.0, .scaling = nn::RopeScaling::yarn, .scale_factor = 4.0, .original_max_len = 8});
  EXPECT_EQ(yarn->inverse_frequencies(), expected);
  EXPECT_LT(expected.back(), plain->inverse_frequencies().back());  // the slowest pair is interpolated
}

TEST(ContextExtension, NothingToChangeGivesTheModelItself) {
  const auto model = tiny_model(nn::PositionKind::rope);
  EXPECT_EQ(extend_context(model, {.max_seq_len = 4}).get(), model.get());
  EXPECT_EQ(extend_context(model, {.max_seq_len = 8, .rope_scaling = nn::RopeScaling::none}).get(), model.get());
  EXPECT_EQ(extend_context(model, {}).get(), model.get());
}

TEST(ContextExtension, LearnedPositionsStopAtTheirTable) {
  const auto model = tiny_model(nn::PositionKind::learned);
  EXPECT_EQ(extend_context(model, {.max_seq_len = 8}).get(), model.get());
  EXPECT_THROW_WITH(extend_context(model, {.max_seq_len = 9}), "context 9", "learned position table",
                    "max_seq_len 8");
}

TEST(ContextExtension, RopeScalingNeedsRopeAndAFactorOfAtLeastOne) {
  EXPECT_THROW_WITH(extend_context(tiny_model(nn::PositionKind::alibi),
                                   {.max_seq_len = 16, .rope_scaling = nn::RopeScaling::linear, .rope_factor = 2.0}),
                    "needs a RoPE model", "alibi");
  EXPECT_THROW_WITH(extend_context(tiny_model(nn::PositionKind::rope),
                                   {.max_seq_len = 16, .rope_scaling = nn::RopeScaling::ntk, .rope_factor = 0.5}),
                    "factor 0.5", ">= 1");
}

}  // namespace
}  // namespace nf::models
