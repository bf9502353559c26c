// Transformer blocks against PyTorch (tools/golden/fixtures_blocks.py): the GPT-2 (000), MiniMind
// (002) and nanochat (003) blocks as the documents write them, built as the presets' model configs
// build them (models::block_config), torch.nn.TransformerEncoderLayer and TransformerDecoderLayer
// (post-norm, padding masks, cross-attention), sandwich and DeepNorm placement (001); outputs and
// the gradients of the input and of every parameter. Then the placements' algebra, DeepNet's
// constants and initialisation, MoE blocks, the parameter counts by part and configuration errors.
#include <cmath>
#include <functional>
#include <map>

#include "nanoformer/models/model.h"
#include "nanoformer/models/config/model_config.h"
#include "nanoformer/nn/block.h"
#include "nanoformer/nn/positional.h"
#include "support/module_golden.h"
#include "support/testing.h"

namespace nf::nn {
namespace {

using testing::Golden;
using testing::ModuleCase;

constexpr int64_t D = 16, H = 4;

// The block models::block_config builds for `preset` at width `dim` with `heads` heads (every other
// choice the preset's), after `edit` changes the model config.
BlockConfig preset_block(const std::string& preset, const std::function<void(models::DecoderLMConfig&)>& edit = {},
                         int64_t dim = D, int64_t heads = H) {
  models::DecoderLMConfig c = models::preset_config(preset);
  c.dim = dim;
  c.n_heads = heads;
  if (edit) edit(c);
  return models::block_config(c);
}

// GPT-2's block with document 000's exact (erf) GELU, as the golden fixtures compute it.
BlockConfig gpt2_erf_block() {
  return preset_block("gpt2-124m", [](models::DecoderLMConfig& c) { c.mlp = MLPKind::gelu; });
}

// MiniMind's block with 2 kv heads and SwiGLU hidden rounded to multiples of 8 (48 for dim 16).
BlockConfig minimind_small_block(const std::string& preset = "minimind2-small") {
  return preset_block(preset, [](models::DecoderLMConfig& c) {
    c.n_kv_heads = 2;
    c.mlp_multiple_of = 8;
  });
}

std::shared_ptr<AttentionPosition> rope(RopeLayout layout, double theta) {
  return std::make_shared<RotaryPosition>(RopeOptions{.head_dim = D / H, .max_len = 16, .theta = theta, .layout = layout});
}

Tensor run_self(TransformerBlock& block, const std::vector<Tensor>& in) { return block.forward(in[0]); }

TEST(BlockGolden, Gpt2BlockOf000) {
  const Golden golden("blocks");
  TransformerBlock block(gpt2_erf_block());
  testing::check_module_case(block, golden, "gpt2", {{"x"}}, [&](auto& in) { return run_self(block, in); });
}

TEST(BlockGolden, MiniMindBlockOf002) {
  const Golden golden("blocks");
  BlockConfig c = minimind_small_block();
  EXPECT_EQ(mlp_hidden_dim(c.mlp), 48);
  TransformerBlock block(c, rope(RopeLayout::interleaved, 1e6));
  testing::check_module_case(block, golden, "minimind", {{"x"}}, [&](auto& in) { return run_self(block, in); });
}

TEST(BlockGolden, NanochatBlockOf003) {
  const Golden golden("blocks");
  TransformerBlock block(preset_block("nanochat-d6", [](models::DecoderLMConfig& c) { c.n_kv_heads = 1; }),
                         rope(RopeLayout::half_negative, 10000.0));
  EXPECT_EQ(block.num_parameters(), 2 * D * D + 2 * D * (D / H) + 2 * 4 * D * D);  // MQA: k, v are (D/H, D)
  testing::check_module_case(block, golden, "nanochat", {{"x"}}, [&](auto& in) { return run_self(block, in); });
}

TEST(BlockGolden, PostNormEncoderLayerEqualsTorchTransformerEncoderLayer) {
  const Golden golden("blocks");
  TransformerBlock block(encoder_layer(D, H, 2 * D, /*dropout=*/0.1));
  block.eval();
  testing::check_module_case(block, golden, "encoder", {{"x", "key_padding"}}, [&](auto& in) {
    return block.forward(in[0], {.self = {.masks = {.key_padding = in[1]}}});
  });
}

TEST(BlockGolden, DecoderLayerWithCrossAttentionEqualsTorchTransformerDecoderLayer) {
  const Golden golden("blocks");
  TransformerBlock block(decoder_layer(D, H, 2 * D, /*dropout=*/0.1));
  block.eval();
  testing::check_module_case(block, golden, "decoder", {{"x", "memory", "memory_padding"}}, [&](auto& in) {
    return block.forward(in[0], {.cross = {.context = in[1], .masks = {.key_padding = in[2]}}});
  });
}

TEST(BlockGolden, SandwichPlacementOf001) {
  const Golden golden("blocks");
  BlockConfig c = gpt2_erf_block();
  c.placement = NormPlacement::sandwich;
  TransformerBlock block(c);
  testing::check_module_case(block, golden, "sandwich", {{"x"}}, [&](auto& in) { return run_self(block, in); });
}

TEST(BlockGolden, DeepNormPlacementOf001) {
  const Golden golden("blocks");
  // a 6-layer deepnorm model: block_config gives its blocks deepnorm_constants(0, 6).decoder_alpha
  const BlockConfig c = preset_block("gpt2-124m", [](models::DecoderLMConfig& m) {
    m.mlp = MLPKind::gelu;
    m.norm_placement = NormPlacement::deepnorm;
    m.n_layers = 6;
  });
  EXPECT_EQ(c.placement, NormPlacement::deepnorm);
  EXPECT_NEAR(c.deepnorm_alpha, golden.cases()["deepnorm"]["alpha"].get<double>(), 1e-15);
  TransformerBlock block(c);
  testing::check_module_case(block, golden, "deepnorm", {{"x"}}, [&](auto& in) { return run_self(block, in); });
}

// With identity-like sublayers the four placements reduce to their formulas: zero the attention
// and MLP outputs (o_proj and the MLP's last Linear at 0), and each placement's algebra shows.
TEST(Block, PlacementsComposeAsTheirFormulas) {
  Generator gen(5);
  const Tensor x = randn({2, 3, D}, gen);
  for (NormPlacement p : {NormPlacement::pre, NormPlacement::post, NormPlacement::sandwich, NormPlacement::deepnorm}) {
    SCOPED_TRACE(norm_placement_name(p));
    BlockConfig c = preset_block("gpt2-124m");
    c.placement = p;
    if (p == NormPlacement::deepnorm) c.deepnorm_alpha = 2.0;
    TransformerBlock block(c, nullptr, gen);
    autograd::NoGradGuard no_grad;
    fill_(block.attn->o_proj->weight, 0.0);
    fill_(block.attn->o_proj->bias, 0.0);
    for (const auto& [name, t] : block.mlp->named_parameters())
      if (name.rfind("c_proj", 0) == 0) fill_(t, 0.0);
    const Tensor y = block.forward(x);
    LayerNorm ln(D);
    switch (p) {
      case NormPlacement::pre: EXPECT_TENSOR_CLOSE(y, x, 0, 0); break;            // x + 0
      case NormPlacement::post: EXPECT_TENSOR_CLOSE(y, ln(ln(x)), 1e-5, 1e-5); break;  // norm(norm(x + 0) + 0)
      case NormPlacement::sandwich: EXPECT_TENSOR_CLOSE(y, x, 1e-6, 0); break;   // x + norm(0) = x
      case NormPlacement::deepnorm: EXPECT_TENSOR_CLOSE(y, ln(mul(ln(mul(x, 2.0)), 2.0)), 1e-5, 1e-5); break;
    }
  }
}

TEST(Block, DeepNetConstantsFollowTheirTable) {
  const DeepNormConstants dec = deepnorm_constants(0, 12);
  EXPECT_DOUBLE_EQ(dec.decoder_alpha, std::pow(24.0, 0.25));
  EXPECT_DOUBLE_EQ(dec.decoder_beta, std::pow(96.0, -0.25));
  const DeepNormConstants enc = deepnorm_constants(18, 0);
  EXPECT_DOUBLE_EQ(enc.encoder_alpha, std::pow(36.0, 0.25));
  EXPECT_DOUBLE_EQ(enc.encoder_beta, std::pow(144.0, -0.25));
  // encoder-decoder 6 + 6: the paper's 0.81 (N^4 M)^(1/16) = 0.81 * 6^(5/16)
  const DeepNormConstants ed = deepnorm_constants(6, 6);
  EXPECT_NEAR(ed.encoder_alpha, 0.81 * std::pow(6.0, 5.0 / 16), 1e-12);
  EXPECT_NEAR(ed.encoder_beta, 0.87 * std::pow(6.0, -5.0 / 16), 1e-12);
  EXPECT_DOUBLE_EQ(ed.decoder_alpha, std::pow(18.0, 0.25));
  EXPECT_DOUBLE_EQ(ed.decoder_beta, std::pow(72.0, -0.25));
  EXPECT_THROW_WITH(deepnorm_constants(0, 0), "deepnorm_constants", "0 and 0");
}

double sample_std(const Tensor& w) {
  const std::vector<double> v = w.to_vector<double>();
  double s = 0;
  for (double x : v) s += x * x;
  return std::sqrt(s / static_cast<double>(v.size()));
}

TEST(Block, DeepNormInitScalesValueOutputAndMlpByBeta) {
  Generator gen(9);
  const int64_t d = 64;
  BlockConfig c = preset_block("gpt2-124m", {}, d, 4);
  c.placement = NormPlacement::deepnorm;
  TransformerBlock block(c, nullptr, gen);
  const double beta = 0.25;
  deepnorm_init(block, beta, gen);
  const double xavier_square = std::sqrt(2.0 / (2 * d));  // q, k, v, o are d x d
  EXPECT_NEAR(sample_std(block.attn->q_proj->weight), xavier_square, 0.05 * xavier_square);
  EXPECT_NEAR(sample_std(block.attn->k_proj->weight), xavier_square, 0.05 * xavier_square);
  EXPECT_NEAR(sample_std(block.attn->v_proj->weight), beta * xavier_square, 0.05 * beta * xavier_square);
  EXPECT_NEAR(sample_std(block.attn->o_proj->weight), beta * xavier_square, 0.05 * beta * xavier_square);
  const double xavier_mlp = beta * std::sqrt(2.0 / (d + 4 * d));
  for (const auto& [name, t] : block.mlp->named_parameters()) {
    SCOPED_TRACE(name);
    if (t.dim() == 2) EXPECT_NEAR(sample_std(t), xavier_mlp, 0.05 * xavier_mlp);
    else EXPECT_EQ(sample_std(t), 0.0);
  }
  EXPECT_EQ(sample_std(block.attn->q_proj->bias), 0.0);
}

TEST(Block, MoEBlockReportsItsAuxLossAndTrains) {
  Generator gen(3);
  // minimind2-moe's experts: 4 routed (top 2) and 1 shared, aux_loss_alpha 0.1
  const BlockConfig c = minimind_small_block("minimind2-moe");
  ASSERT_TRUE(c.moe.has_value());
  EXPECT_EQ(c.moe->n_experts, 4);
  EXPECT_EQ(c.moe->top_k, 2);
  EXPECT_EQ(c.moe->n_shared_experts, 1);
  EXPECT_EQ(c.moe->aux_loss_alpha, 0.1);
  TransformerBlock block(c, rope(RopeLayout::interleaved, 1e6), gen);
  EXPECT_TRUE(block.moe != nullptr);
  EXPECT_TRUE(block.state_dict().count("mlp.experts.3.w2.weight"));
  EXPECT_TRUE(block.state_dict().count("mlp.shared_experts.0.w1.weight"));
  const Tensor y = block.forward(randn({2, 5, D}, gen));
  ASSERT_TRUE(block.aux_loss().defined());
  EXPECT_GT(block.aux_loss().item(), 0.0);
  (sum(y) + block.aux_loss()).backward();
  EXPECT_TRUE(block.moe->gate->weight.grad().defined());
  int64_t routed = 0;
  for (int64_t n : block.moe->tokens_per_expert()) routed += n;
  EXPECT_EQ(routed, 2 * 5 * 2);  // every token goes to top_k = 2 experts
  TransformerBlock dense(minimind_small_block());
  EXPECT_FALSE(dense.aux_loss().defined());
}

// block_parameter_counts: each part equals the built block's parameters of that part, grouped by
// name, for every preset's block, MoE blocks (shared experts, a gate bias), sandwich placement, the
// encoder-decoder layers (cross-attention) and ViT's output-only attention bias; long double agrees.
TEST(Block, ParameterCountsByPartEqualTheBuiltBlock) {
  std::vector<std::pair<std::string, BlockConfig>> configs;
  for (const std::string& preset : models::preset_names_of(models::DecoderLMConfig::kArchitecture))
    configs.emplace_back(preset, preset_block(preset, [](models::DecoderLMConfig& c) { c.n_kv_heads = 0; }));
  configs.emplace_back("moe", minimind_small_block("minimind2-moe"));
  configs.back().second.moe->gate_bias = true;
  configs.emplace_back("sandwich", gpt2_erf_block());
  configs.back().second.placement = NormPlacement::sandwich;
  configs.emplace_back("encoder", encoder_layer(D, H, 2 * D));
  configs.emplace_back("decoder", decoder_layer(D, H, 2 * D));
  configs.emplace_back("vit", encoder_layer(D, H, 2 * D));
  configs.back().second.attention.bias = false;
  configs.back().second.attention.output_bias = true;
  for (const auto& [name, config] : configs) {
    SCOPED_TRACE(name);
    std::map<std::string, int64_t> built;  // by part
    const TransformerBlock block(config);
    for (const auto& [param, t] : block.named_parameters()) {
      const auto starts = [&](const char* prefix) { return param.rfind(prefix, 0) == 0; };
      const char* part = starts("attn.")                 ? "attention"
                         : starts("cross_attn.")         ? "cross_attention"
                         : starts("mlp.experts.")        ? "routed_experts"
                         : starts("mlp.shared_experts.") ? "shared_experts"
                         : starts("mlp.gate.")           ? "router"
                         : starts("mlp.")                ? "mlp"
                                                         : "norms";
      built[part] += t.numel();
    }
    const BlockParameterCounts p = block_parameter_counts(config);
    EXPECT_EQ(p.attention, built["attention"]);
    EXPECT_EQ(p.cross_attention, built["cross_attention"]);
    EXPECT_EQ(p.mlp, built["mlp"]);
    EXPECT_EQ(p.routed_experts, built["routed_experts"]);
    EXPECT_EQ(p.shared_experts, built["shared_experts"]);
    EXPECT_EQ(p.router, built["router"]);
    EXPECT_EQ(p.norms, built["norms"]);
    EXPECT_EQ(p.total, block.num_parameters());
    EXPECT_EQ(block_parameter_counts<long double>(config).total, static_cast<long double>(p.total));
  }
}

TEST(Block, ResidualDropoutActsOnlyInTraining) {
  Generator gen(4);
  TransformerBlock block(encoder_layer(D, H, 2 * D, 0.5), nullptr, gen);
  const Tensor x = randn({1, 4, D}, gen);
  const Tensor a = block.forward(x), b = block.forward(x);
  EXPECT_FALSE(testing::tensors_close(a, b, 1e-6, 0));  // different dropout masks
  block.eval();
  EXPECT_TENSOR_CLOSE(block.forward(x), block.forward(x), 0, 0);
}

TEST(Block, BadConfigurationNamesTheOption) {
  BlockConfig c = preset_block("gpt2-124m");
  c.mlp.dim = 8;
  EXPECT_THROW_WITH(TransformerBlock{c}, "TransformerBlock", "mlp.dim 8");
  c = preset_block("gpt2-124m");
  c.deepnorm_alpha = 2.0;
  EXPECT_THROW_WITH(TransformerBlock{c}, "deepnorm_alpha 2", "pre");
  c.placement = NormPlacement::deepnorm;
  c.deepnorm_alpha = -1.0;
  EXPECT_THROW_WITH(TransformerBlock{c}, "deepnorm_alpha -1");
  c = preset_block("gpt2-124m");
  c.residual_dropout = 1.0;
  EXPECT_THROW_WITH(TransformerBlock{c}, "residual_dropout 1");
  EXPECT_THROW_WITH(TransformerBlock{preset_block("gpt2-124m", {}, D, 5)}, "dim 16 is not divisible by n_heads 5");
  EXPECT_THROW_WITH(TransformerBlock{preset_block("minimind2-small", [](models::DecoderLMConfig& m) { m.n_kv_heads = 3; })},
                    "n_heads 4 is not divisible by n_kv_heads 3");
  c = minimind_small_block();
  c.moe = MoEConfig{.n_experts = 2, .top_k = 3};
  EXPECT_THROW_WITH(TransformerBlock{c}, "top_k", "3");
  EXPECT_THROW_WITH(norm_placement_from_name("middle"), "norm placement 'middle'", "sandwich");
  TransformerBlock decoder(decoder_layer(D, H, 2 * D));
  EXPECT_THROW_WITH(decoder.forward(zeros({1, 2, D})), "cross-attention", "context");
}

}  // namespace
}  // namespace nf::nn
