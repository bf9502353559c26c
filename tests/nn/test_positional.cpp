// Positional modules beyond PyTorch parity (test_positional_golden.cpp): a decoder step at an
// offset equals the matching rows of the full sequence for every scheme; RoPE scores depend only
// on relative positions; scaling identities; names in state_dict; the factories and the parameter
// count; and the errors bad configurations raise at construction.
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "support/testing.h"

namespace nf::nn {
namespace {

Tensor randn_f32(const Shape& shape, uint64_t seed) {
  Generator gen(seed);
  return randn(shape, gen);
}

PositionalConfig config(PositionKind kind) {
  PositionalConfig cfg;
  cfg.kind = kind;
  cfg.max_len = 32;
  cfg.dim = 12;
  cfg.n_heads = 3;
  cfg.head_dim = 4;
  cfg.num_buckets = 8;
  cfg.max_distance = 16;
  return cfg;
}

// ---- decoding token by token ------------------------------------------------------------------

TEST(Positional, AbsoluteDecoderStepEqualsFullSequenceRow) {
  const Tensor x = randn_f32({2, 9, 12}, 1);
  for (PositionKind kind : {PositionKind::learned, PositionKind::sinusoidal}) {
    PositionalConfig cfg = config(kind);
    cfg.scale_input = true;
    auto pos = make_absolute_position(cfg);
    ASSERT_NE(pos, nullptr);
    const Tensor full = (*pos)(x);
    for (int64_t t : {0, 5, 8}) {
      EXPECT_TENSOR_CLOSE((*pos)(x.narrow(1, t, 1), t), full.narrow(1, t, 1), 0.0, 0.0);
    }
  }
}

TEST(Positional, AttentionSchemesDecoderStepEqualsFullSequenceRow) {
  const Tensor q = randn_f32({2, 3, 7, 4}, 2), k = randn_f32({2, 3, 7, 4}, 3);
  for (PositionKind kind : {PositionKind::rope, PositionKind::alibi, PositionKind::t5_bias, PositionKind::xl_relative}) {
    SCOPED_TRACE(position_kind_name(kind));
    PositionalConfig cfg = config(kind);
    cfg.bidirectional = false;
    auto pos = make_attention_position(cfg);
    const Tensor full_q = pos->rotate_queries(q, 0), full_k = pos->rotate_keys(k, 0);
    const Tensor full_bias = pos->score_bias(full_q, full_k, 0, 0);
    for (int64_t t : {0, 4, 6}) {
      // the step's query is position t; the cache holds keys 0 .. t
      const Tensor step_q = pos->rotate_queries(q.narrow(2, t, 1), t);
      EXPECT_TENSOR_CLOSE(step_q, full_q.narrow(2, t, 1), 0.0, 0.0);
      EXPECT_TENSOR_CLOSE(pos->rotate_keys(k.narrow(2, t, 1), t), full_k.narrow(2, t, 1), 0.0, 0.0);
      const Tensor cache = full_k.narrow(2, 0, t + 1);
      const Tensor bias = pos->score_bias(step_q, cache, t, 0);
      if (kind == PositionKind::rope) {
        EXPECT_FALSE(bias.defined());
        continue;
      }
      const Tensor want = full_bias.narrow(2, t, 1).narrow(3, 0, t + 1);
      EXPECT_TENSOR_CLOSE(bias.expand(want.shape()), want, 1e-6, 1e-5);
    }
  }
}

// ---- RoPE properties --------------------------------------------------------------------------

TEST(Positional, RopeScoresDependOnlyOnRelativePosition) {
  const Tensor q = randn_f32({1, 1, 1, 8}, 4), k = randn_f32({1, 1, 1, 8}, 5);
  for (RopeLayout layout : {RopeLayout::interleaved, RopeLayout::half, RopeLayout::half_negative}) {
    RotaryPosition rope({.head_dim = 8, .max_len = 64, .theta = 100.0, .layout = layout});
    const auto score = [&](int64_t i, int64_t j) { return sum(rope.rotate_queries(q, i) * rope.rotate_keys(k, j)).item(); };
    EXPECT_NEAR(score(9, 4), score(40, 35), 1e-5);
    EXPECT_NEAR(score(3, 10), score(50, 57), 1e-5);
    EXPECT_GT(std::fabs(score(9, 4) - score(9, 5)), 1e-3);  // and does depend on it
  }
}

TEST(Positional, RopeScalingIdentities) {
  const Tensor x = randn_f32({1, 2, 3, 8}, 6);
  RotaryPosition plain({.head_dim = 8, .max_len = 64, .theta = 1e4});
  // position interpolation: position 2t with factor 2 is position t unscaled
  RotaryPosition linear({.head_dim = 8, .max_len = 64, .theta = 1e4, .scaling = RopeScaling::linear, .scale_factor = 2.0});
  EXPECT_TENSOR_CLOSE(linear.rotate_queries(x.narrow(2, 0, 1), 10), plain.rotate_queries(x.narrow(2, 0, 1), 5), 1e-6, 1e-6);
  EXPECT_DOUBLE_EQ(linear.position_divisor(), 2.0);
  // NTK: theta' = theta s^(D / (D - 2))
  RotaryPosition ntk({.head_dim = 8, .max_len = 64, .theta = 1e4, .scaling = RopeScaling::ntk, .scale_factor = 4.0});
  EXPECT_DOUBLE_EQ(ntk.effective_theta(), 1e4 * std::pow(4.0, 8.0 / 6.0));
  RotaryPosition same({.head_dim = 8, .max_len = 64, .theta = 1e4 * std::pow(4.0, 8.0 / 6.0)});
  EXPECT_TENSOR_CLOSE(ntk.rotate_queries(x, 3), same.rotate_queries(x, 3), 0.0, 0.0);
}

// YaRN: the inverse frequencies and attention factor transformers' _compute_yarn_parameters gives
// (tools/golden/yarn_fixtures.py) for defaults, explicit betas and factor, MiniMind's values, bounds
// that meet and bounds clamped; the tables are cos / sin of t f'_i times the attention factor.
TEST(Positional, YarnMatchesTransformersInverseFrequencies) {
  const nlohmann::json doc = nlohmann::json::parse(std::ifstream(std::string(NF_TEST_DATA_DIR) + "/yarn/inverse_frequencies.json"));
  ASSERT_EQ(doc.at("cases").size(), 5u);
  for (const auto& c : doc.at("cases")) {
    const RopeOptions o{.head_dim = c.at("head_dim"), .max_len = 64, .theta = c.at("rope_theta"),
                        .scaling = RopeScaling::yarn, .scale_factor = c.at("factor"),
                        .original_max_len = c.at("original_max_position_embeddings"),
                        .beta_fast = c.value("beta_fast", 32.0), .beta_slow = c.value("beta_slow", 1.0),
                        .attention_factor = c.value("attention_factor", 0.0)};
    RotaryPosition rotary(o);
    const std::vector<double> expected = c.at("inv_freq");
    ASSERT_EQ(rotary.inverse_frequencies().size(), expected.size()) << c.at("head_dim");
    for (size_t i = 0; i < expected.size(); ++i)
      EXPECT_NEAR(rotary.inverse_frequencies()[i], expected[i], 1e-6) << "head_dim " << c.at("head_dim") << " pair " << i;
    EXPECT_NEAR(rotary.attention_factor(), c.at("attention_factor_out").get<double>(), 1e-6) << c.at("head_dim");
    const int64_t last = c.at("head_dim").get<int64_t>() / 2 - 1;
    const double angle = 7.0 * expected[static_cast<size_t>(last)];
    const RopeTables t = rotary.tables(DType::f32, 8);
    EXPECT_NEAR(narrow(narrow(t.cos, 0, 7, 1), 1, last, 1).item(), rotary.attention_factor() * std::cos(angle), 1e-6);
    EXPECT_NEAR(narrow(narrow(t.sin, 0, 7, 1), 1, last, 1).item(), rotary.attention_factor() * std::sin(angle), 1e-6);
  }
  // shifting cached keys stays a rotation: the attention factor is not applied twice
  RotaryPosition yarn({.head_dim = 8, .max_len = 64, .theta = 1e4, .scaling = RopeScaling::yarn, .scale_factor = 4.0,
                       .original_max_len = 16});
  const Tensor k = randn_f32({1, 2, 3, 8}, 9);
  EXPECT_TENSOR_CLOSE(yarn.reposition_keys(yarn.rotate_keys(k, 2), 5), yarn.rotate_keys(k, 7), 1e-5, 1e-5);
}

TEST(Positional, RopeF64InputsUseF64Tables) {
  RotaryPosition rotary({.head_dim = 6, .max_len = 16, .theta = 1e4, .layout = RopeLayout::interleaved});
  const Tensor x = testing::random_leaf({2, 2, 3, 6}, 7);
  const RopeTables exact = rope_tables(16, 6, 1e4, 1.0, DType::f64);
  EXPECT_TENSOR_CLOSE(rotary.rotate_keys(x, 4), rope(x, exact.cos, exact.sin, 4, RopeLayout::interleaved), 0.0, 0.0);
  EXPECT_GRAD_OK([&](const std::vector<Tensor>& in) { return rotary.rotate_queries(in[0], 2); }, {x});
}

// A continuous-batching step's rows, each at its own position: RoPE rotates them in one call, any
// other scheme row by row (AttentionPosition's default), both exactly as each row alone.
TEST(Positional, RowsAtTheirOwnPositionsEqualEachRowAlone) {
  RotaryPosition rotary({.head_dim = 8, .max_len = 64, .theta = 1e4});
  struct Shifted : AttentionPosition {  // a scheme of its own: k + offset
    Shifted() : AttentionPosition("Shifted") {}
    using AttentionPosition::rotate_keys;
    Tensor rotate_keys(const Tensor& k, int64_t k_offset) override { return k + static_cast<double>(k_offset); }
  } shifted;
  const std::vector<int64_t> offsets{3, 40, 0};
  const Tensor x = randn_f32({3, 2, 1, 8}, 10);
  for (AttentionPosition* scheme : std::initializer_list<AttentionPosition*>{&rotary, &shifted}) {
    const Tensor q = scheme->rotate_queries(x, offsets), k = scheme->rotate_keys(x, offsets);
    for (int64_t b = 0; b < 3; ++b) {
      const int64_t at = offsets[static_cast<size_t>(b)];
      EXPECT_TENSOR_CLOSE(q.narrow(0, b, 1), scheme->rotate_queries(x.narrow(0, b, 1), at), 0.0, 0.0) << scheme->type_name();
      EXPECT_TENSOR_CLOSE(k.narrow(0, b, 1), scheme->rotate_keys(x.narrow(0, b, 1), at), 0.0, 0.0) << scheme->type_name();
    }
  }
  EXPECT_THROW_WITH(shifted.rotate_keys(x, std::vector<int64_t>{1, 2}), "2 offsets", "one per batch row");
}

// ---- names, factories ------------------------------------------------------------------------

TEST(Positional, StateDictNames) {
  const auto names = [](const Module& m) {
    std::vector<std::string> out;
    for (const auto& [name, t] : m.state_dict()) out.push_back(name);
    return out;
  };
  using Names = std::vector<std::string>;
  auto rope = make_attention_position(config(PositionKind::rope));
  EXPECT_EQ(names(*rope), Names{});
  EXPECT_EQ(rope->named_buffers().size(), 0u);  // the tables are made for the positions used, not buffers
  EXPECT_EQ(names(*make_attention_position(config(PositionKind::alibi))), Names{});
  EXPECT_EQ(names(*make_attention_position(config(PositionKind::t5_bias))), Names{"relative_attention_bias.weight"});
  EXPECT_EQ(names(*make_attention_position(config(PositionKind::xl_relative))), (Names{"pos_proj.weight", "u", "v"}));
  EXPECT_EQ(names(*make_absolute_position(config(PositionKind::sinusoidal))), Names{"pe"});
  EXPECT_EQ(names(*make_absolute_position(config(PositionKind::learned))), Names{"weight"});
  EXPECT_EQ(make_absolute_position(config(PositionKind::learned))->parameters()[0].shape(), (Shape{32, 12}));
  auto t5 = std::dynamic_pointer_cast<T5RelativeBias>(make_attention_position(config(PositionKind::t5_bias)));
  ASSERT_NE(t5, nullptr);
  EXPECT_EQ(t5->relative_attention_bias->weight.shape(), (Shape{8, 3}));
}

TEST(Positional, FactoriesChooseTheScheme) {
  EXPECT_EQ(make_attention_position(config(PositionKind::rope))->type_name(), "RotaryPosition");
  EXPECT_EQ(make_attention_position(config(PositionKind::alibi))->type_name(), "AlibiBias");
  PositionalConfig xl_cfg = config(PositionKind::xl_relative);
  auto xl = std::dynamic_pointer_cast<XLRelativePosition>(make_attention_position(xl_cfg));
  ASSERT_NE(xl, nullptr);
  EXPECT_DOUBLE_EQ(xl->score_scale(), 0.5);  // 1 / sqrt(head_dim 4)
  xl_cfg.xl_score_scale = 1.0;
  EXPECT_DOUBLE_EQ(std::dynamic_pointer_cast<XLRelativePosition>(make_attention_position(xl_cfg))->score_scale(), 1.0);
  for (PositionKind kind : {PositionKind::none, PositionKind::learned, PositionKind::sinusoidal}) {
    auto identity = make_attention_position(config(kind));
    const Tensor q = randn_f32({1, 3, 2, 4}, 8);
    EXPECT_TRUE(identity->rotate_queries(q, 3).shares_storage_with(q));
    EXPECT_FALSE(identity->score_bias(q, q, 0, 0).defined());
  }
  for (PositionKind kind : {PositionKind::none, PositionKind::rope, PositionKind::alibi, PositionKind::t5_bias,
                            PositionKind::xl_relative}) {
    EXPECT_EQ(make_absolute_position(config(kind)), nullptr);
  }
  EXPECT_EQ(parse_position_kind("t5_bias"), PositionKind::t5_bias);
  EXPECT_EQ(parse_rope_layout("half_negative"), RopeLayout::half_negative);
  EXPECT_EQ(parse_rope_scaling("ntk"), RopeScaling::ntk);
  EXPECT_STREQ(position_kind_name(PositionKind::xl_relative), "xl_relative");
}

// positional_parameter_count equals what both factories build, for every scheme (0 for the
// buffers of sinusoidal and RoPE tables).
TEST(Positional, ParameterCountEqualsTheBuiltModules) {
  for (PositionKind kind : {PositionKind::none, PositionKind::learned, PositionKind::sinusoidal, PositionKind::rope,
                            PositionKind::alibi, PositionKind::t5_bias, PositionKind::xl_relative}) {
    SCOPED_TRACE(position_kind_name(kind));
    const PositionalConfig cfg = config(kind);
    const auto absolute = make_absolute_position(cfg);
    const int64_t built = make_attention_position(cfg)->num_parameters() + (absolute ? absolute->num_parameters() : 0);
    EXPECT_EQ(positional_parameter_count(cfg), built);
    EXPECT_EQ(positional_parameter_count<long double>(cfg), static_cast<long double>(built));
  }
}

TEST(Positional, SinusoidalInputScaleIsSqrtDim) {
  SinusoidalPosition plain(16, 8), scaled(16, 8, true);
  const Tensor x = randn_f32({2, 3, 16}, 9);
  EXPECT_TENSOR_CLOSE(scaled(x, 2), plain(x * 4.0, 2), 0.0, 0.0);
  EXPECT_TENSOR_CLOSE(plain(zeros({1, 1, 16}), 0).narrow(2, 0, 2).reshape({2}), Tensor::of({0, 1}, {2}), 0.0, 0.0);
}

TEST(Positional, AlibiSlopesFollowBloomsRule) {
  // 8 heads: 2^-1 .. 2^-8; 6 heads: 2^-2, 2^-4, 2^-6, 2^-8 then 2^-1, 2^-3 (odd powers of 2^-1)
  const std::vector<double> eight = alibi_slopes(8), six = alibi_slopes(6);
  for (int h = 0; h < 8; ++h) EXPECT_DOUBLE_EQ(eight[h], std::exp2(-(h + 1)));
  EXPECT_EQ(six, (std::vector<double>{0.25, 0.0625, 0.015625, 0.00390625, 0.5, 0.125}));
  EXPECT_EQ(alibi_slopes(1), std::vector<double>{std::exp2(-8)});
}

TEST(Positional, XLBiasDependsOnQueriesAndKeysAndSupportsGroupedKeys) {
  XLRelativePosition xl(12, 4, 4);
  xl.load_state_dict({{"u", randn_f32({4, 4}, 10)}, {"v", randn_f32({4, 4}, 11)}}, /*strict=*/false);
  const Tensor q = randn_f32({2, 4, 3, 4}, 12), k = randn_f32({2, 2, 5, 4}, 13);
  const Tensor grouped = xl.score_bias(q, k, 2, 0);
  EXPECT_EQ(grouped.shape(), (Shape{2, 4, 3, 5}));
  const Tensor repeated = k.unsqueeze(2).expand({2, 2, 2, 5, 4}).reshape({2, 4, 5, 4});
  EXPECT_TENSOR_CLOSE(grouped, xl.score_bias(q, repeated, 2, 0), 0.0, 0.0);
  EXPECT_GT(max(abs(xl.score_bias(q * 2.0, k, 2, 0) - grouped)).item(), 1e-3);
}

// ---- errors at construction ------------------------------------------------------------------

// One option set wrong in an otherwise valid config of `kind`, and what the error must name.
struct BadConfig {
  PositionKind kind;
  void (*spoil)(PositionalConfig&);
  std::vector<std::string> message;
};

TEST(Positional, BadConfigurationsFailAtConstructionNamingTheValue) {
  const std::vector<BadConfig> cases{
      {PositionKind::rope, [](PositionalConfig& c) { c.head_dim = 7; }, {"RotaryPosition", "head_dim 7"}},
      {PositionKind::rope, [](PositionalConfig& c) { c.theta = 0.0; }, {"theta 0"}},
      {PositionKind::rope, [](PositionalConfig& c) { c.theta = -5.0; }, {"theta -5"}},
      {PositionKind::rope, [](PositionalConfig& c) { c.scaling = RopeScaling::linear, c.scale_factor = 0.0; }, {"scale_factor 0"}},
      {PositionKind::rope, [](PositionalConfig& c) { c.scaling = RopeScaling::ntk, c.scale_factor = -2.0; }, {"scale_factor -2"}},
      {PositionKind::t5_bias, [](PositionalConfig& c) { c.num_buckets = 1; }, {"T5RelativeBias", "num_buckets 1"}},
      {PositionKind::t5_bias, [](PositionalConfig& c) { c.max_distance = 2; }, {"max_distance 2"}},
      {PositionKind::alibi, [](PositionalConfig& c) { c.n_heads = 0; }, {"alibi", "n_heads > 0, got 0"}},
      {PositionKind::xl_relative, [](PositionalConfig& c) { c.head_dim = 0; }, {"xl_relative", "head_dim > 0, got 0"}},
      {PositionKind::xl_relative, [](PositionalConfig& c) { c.xl_score_scale = -1.0; }, {"score_scale -1"}},
      {PositionKind::sinusoidal, [](PositionalConfig& c) { c.dim = 7; }, {"SinusoidalPosition", "dim 7"}},
      {PositionKind::learned, [](PositionalConfig& c) { c.max_len = 0; }, {"learned", "max_len > 0, got 0"}},
  };
  for (const BadConfig& bad : cases) {
    PositionalConfig cfg = config(bad.kind);
    bad.spoil(cfg);
    const bool absolute = bad.kind == PositionKind::learned || bad.kind == PositionKind::sinusoidal;
    EXPECT_TRUE(testing::throws_with(
        [&] { absolute ? (void)make_absolute_position(cfg) : (void)make_attention_position(cfg); }, bad.message));
  }
  EXPECT_THROW_WITH(parse_position_kind("relative"), "unknown kind 'relative'", "xl_relative");
  EXPECT_THROW_WITH(parse_rope_layout("halves"), "rope_layout 'halves'", "half_negative");
  EXPECT_EQ(parse_rope_scaling("yarn"), RopeScaling::yarn);
  EXPECT_THROW_WITH(parse_rope_scaling("yarm"), "scaling 'yarm'", "ntk, yarn");
}

TEST(Positional, UseErrorsNameShapesAndPositions) {
  LearnedPosition learned(8, 4);
  EXPECT_THROW_WITH(learned(zeros({1, 3, 4}), 6), "LearnedPosition", "positions 6 .. 8", "max_len 8");
  EXPECT_THROW_WITH(learned(zeros({1, 3, 5}), 0), "LearnedPosition", "(1, 3, 5)");
  RotaryPosition rope({.head_dim = 4, .max_len = 8});
  EXPECT_THROW_WITH(rope.rotate_queries(zeros({1, 1, 2, 4}), 7), "rope", "positions 7 .. 8", "8 rows");
  EXPECT_THROW_WITH(rope.rotate_keys(zeros({1, 1, 2, 6}), 0), "RotaryPosition", "head_dim 4");
  AlibiBias alibi(4);
  EXPECT_THROW_WITH(alibi.score_bias(zeros({1, 3, 2, 4}), zeros({1, 3, 2, 4}), 0, 0), "AlibiBias", "(1, 3, 2, 4)");
}

}  // namespace
}  // namespace nf::nn
