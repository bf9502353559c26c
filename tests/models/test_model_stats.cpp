// model_stats: the parts sum to count_parameters and match the built model's parameters grouped by
// name for every preset; MoE activates fewer parameters than it holds; FLOPs, KV-cache bytes and
// memory of one small config equal a hand computation.
#include "nanoformer/nanoformer.h"
#include "support/testing.h"

namespace nf::models {
namespace {

// The part a parameter of DecoderLM belongs to, from its dotted name.
int64_t& part_of(ParameterCounts& p, const std::string& name) {
  auto has = [&](const char* s) { return name.find(s) != std::string::npos; };
  if (name.rfind("tok_embeddings.", 0) == 0) return p.embedding;
  if (name.rfind("pos_embeddings.", 0) == 0 || name.rfind("attention_position.", 0) == 0) return p.positions;
  if (name.rfind("output.", 0) == 0) return p.head;
  if (has("norm.")) return p.norms;
  if (has(".attn.")) return p.attention;
  if (has(".mlp.shared_experts.")) return p.shared_experts;
  if (has(".mlp.experts.")) return p.routed_experts;
  if (has(".mlp.gate.")) return p.router;
  if (has(".mlp.")) return p.mlp;
  ADD_FAILURE() << "no part for parameter " << name;
  return p.total;
}

void expect_parts_equal(const ParameterCounts& a, const ParameterCounts& b, const std::string& name) {
  EXPECT_EQ(a.embedding, b.embedding) << name;
  EXPECT_EQ(a.positions, b.positions) << name;
  EXPECT_EQ(a.attention, b.attention) << name;
  EXPECT_EQ(a.mlp, b.mlp) << name;
  EXPECT_EQ(a.routed_experts, b.routed_experts) << name;
  EXPECT_EQ(a.shared_experts, b.shared_experts) << name;
  EXPECT_EQ(a.router, b.router) << name;
  EXPECT_EQ(a.norms, b.norms) << name;
  EXPECT_EQ(a.head, b.head) << name;
}

TEST(ModelStats, PartsSumToCountParametersForEveryPreset) {
  for (const std::string& name : preset_names_of(DecoderLMConfig::kArchitecture)) {
    const DecoderLMConfig c = preset_config(name);
    const ParameterCounts p = model_stats(c).parameters;
    EXPECT_EQ(p.embedding + p.positions + p.attention + p.mlp + p.routed_experts + p.shared_experts + p.router +
                  p.norms + p.head,
              p.total)
        << name;
    EXPECT_EQ(p.total, count_parameters(c)) << name;
  }
}

// Every preset at reduced size (every choice kept), the small ones at full size, and configs that
// set what no preset does (GQA with an explicit head_dim, dense and shared-expert MoE, gate biases,
// untied heads, T5 bias, sandwich and deepnorm placement): the parts equal the built model's
// parameters grouped by name, and the total its num_parameters().
TEST(ModelStats, PartsEqualTheBuiltModelsParametersByName) {
  const std::string base = R"("vocab_size": 96, "dim": 32, "n_layers": 2, "n_heads": 4, "max_seq_len": 16, )";
  std::vector<DecoderLMConfig> configs;
  for (const char* extra : {
           R"("name": "gqa-head-dim", "n_kv_heads": 2, "head_dim": 12, "position": "rope", "norm": "rmsnorm",
              "mlp": "swiglu", "attention_bias": false, "mlp_bias": false, "tie_embeddings": false)",
           R"("name": "dense-moe", "position": "alibi", "mlp": "gelu", "mlp_hidden": 24,
              "moe": {"n_experts": 3, "top_k": 1, "routing": "dense", "aux_loss_alpha": 0, "gate_bias": true})",
           R"("name": "mqa-shared-moe", "n_kv_heads": 1, "norm_placement": "deepnorm", "tie_embeddings": false,
              "moe": {"n_experts": 4, "top_k": 2, "n_shared_experts": 2})",
           R"("name": "t5-sandwich", "position": "t5_bias", "norm_placement": "sandwich", "embedding_norm": true,
              "norm_bias": false, "qk_norm": true, "mlp_bias": false, "tie_embeddings": false)",
           R"("name": "qwen3-qwen2", "n_kv_heads": 2, "head_dim": 12, "position": "rope", "norm": "rmsnorm",
              "mlp": "swiglu", "qk_norm": true, "qk_norm_weight": true, "attention_output_bias": false,
              "mlp_bias": false)"})
    configs.push_back(parse_model_config("{" + base + extra + "}", extra));
  for (const std::string& name : preset_names_of(DecoderLMConfig::kArchitecture)) {
    DecoderLMConfig c = preset_config(name);
    c.vocab_size = 96;
    c.dim = 2 * c.n_heads * 8;
    c.n_layers = 2;
    c.max_seq_len = 16;
    if (c.moe) c.moe->n_experts = 3;
    configs.push_back(c);
  }
  for (const char* name : {"llama2c-stories260k", "gpt-mini"}) configs.push_back(preset_config(name));
  for (const DecoderLMConfig& c : configs) {
    const DecoderLM model(c);
    ParameterCounts built;
    for (const auto& [name, tensor] : model.named_parameters()) part_of(built, name) += tensor.numel();
    const ModelStats stats = model_stats(c);
    expect_parts_equal(stats.parameters, built, c.name);
    EXPECT_EQ(stats.parameters.total, model.num_parameters()) << c.name;
  }
}

TEST(ModelStats, MoEActivatesFewerParametersThanItHolds) {
  const ModelStats moe = model_stats(preset_config("minimind2-moe"));
  EXPECT_LT(moe.active_parameters, moe.parameters.total);
  EXPECT_GT(moe.active_parameters, moe.parameters.total - moe.parameters.routed_experts);
  // top-2 of 4 routed experts: half of them are skipped
  EXPECT_EQ(moe.parameters.total - moe.active_parameters, moe.parameters.routed_experts / 2);
  const ModelStats dense = model_stats(preset_config("minimind2-small"));
  EXPECT_EQ(dense.active_parameters, dense.parameters.total);
}

// vocab 32, dim 16, 2 layers, 4 heads of 4, 2 kv heads, SwiGLU 32, no biases, tied; context 8, batch 2.
TEST(ModelStats, SmallConfigMatchesAHandComputation) {
  const DecoderLMConfig c = parse_model_config(
      R"({"vocab_size": 32, "dim": 16, "n_layers": 2, "n_heads": 4, "n_kv_heads": 2, "max_seq_len": 64,
          "norm": "rmsnorm", "position": "rope", "mlp": "swiglu", "mlp_hidden": 32,
          "attention_bias": false, "mlp_bias": false})");
  const ModelStats s = model_stats(c, {.context = 8, .batch = 2});
  // per layer: q 16x16 + k 16x8 + v 16x8 + o 16x16 = 768, SwiGLU 3 x 16 x 32 = 1536; head 32 x 16
  EXPECT_EQ(s.active_matmul_weights, 2 * (768 + 1536) + 512);
  // 2 N + 2 x 2 x L x T x H x hd = 2 x 5120 + 4 x 2 x 8 x 4 x 4
  EXPECT_EQ(s.forward_flops_per_token, 10240 + 1024);
  EXPECT_EQ(s.training_flops_per_token, 3 * 11264);
  // 2 x L x kv_heads x head_dim x bytes
  EXPECT_EQ(s.kv_cache_bytes_per_token_fp32, 2 * 2 * 2 * 4 * 4);
  EXPECT_EQ(s.kv_cache_bytes_per_token_bf16, 2 * 2 * 2 * 4 * 2);
  // parameters: embedding 512 + 2 x (768 + 1536 + 2 x 16) + final norm 16
  EXPECT_EQ(s.parameters.total, 512 + 2 * (768 + 1536 + 32) + 16);
  const int64_t P = s.parameters.total;
  EXPECT_EQ(s.fp32.weights, 4 * P);
  EXPECT_EQ(s.bf16.weights, 2 * P);
  EXPECT_EQ(s.fp32.kv_cache, 128 * 2 * 8);
  EXPECT_EQ(s.fp32.inference, 4 * P + 128 * 2 * 8);
  // per token, per layer 4 x 16 + q 16 + k, v 16 + attention out 16 + weights 4 x 8 + 3 x 32 = 240;
  // 2 layers + embedding 16 + logits and softmax 2 x 32 = 560 elements
  EXPECT_EQ(s.fp32.activations, 560 * 2 * 8 * 4);
  EXPECT_EQ(s.fp32.training, 4 * 4 * P + 560 * 2 * 8 * 4);
  EXPECT_EQ(s.bf16.training, 4 * 2 * P + 560 * 2 * 8 * 2);
  EXPECT_EQ(model_stats(c).context, 64);  // default: max_seq_len
}

// built_model_stats reads the same quantities off a built model's modules: on decoder LMs it must
// agree with the analytic model_stats (whose activations also count the logits and their softmax).
TEST(ModelStats, BuiltModelStatsAgreeWithTheAnalyticOnDecoderLMs) {
  for (const char* extra : {R"("tie_embeddings": true)", R"("n_kv_heads": 2, "mlp": "swiglu", "tie_embeddings": false)"}) {
    const DecoderLMConfig c = parse_model_config(
        R"({"vocab_size": 96, "dim": 32, "n_layers": 2, "n_heads": 4, "max_seq_len": 16, )" + std::string(extra) + "}");
    const ModelStats analytic = model_stats(c, {.context = 12, .batch = 3});
    const ModelStats built = built_model_stats(DecoderLM(c), {.context = 12, .batch = 3});
    EXPECT_EQ(built.active_matmul_weights, analytic.active_matmul_weights) << extra;
    EXPECT_EQ(built.forward_flops_per_token, analytic.forward_flops_per_token) << extra;
    EXPECT_EQ(built.kv_cache_bytes_per_token_fp32, analytic.kv_cache_bytes_per_token_fp32) << extra;
    EXPECT_EQ(built.fp32.activations + 2 * 96 * 4 * 3 * 12, analytic.fp32.activations) << extra;
    EXPECT_EQ(built.fp32.training + 2 * 96 * 4 * 3 * 12, analytic.fp32.training) << extra;
  }
}

// vit-tiny: N = patch projection 768 x 192 + 12 x (4 x 192^2 + 2 x 192 x 768) + head 192 x 1000, at
// its 197 tokens; no KV cache (nothing generates).
TEST(ModelStats, BuiltModelStatsOfVitTiny) {
  Generator gen(0);
  const ModelStats s = built_model_stats(*build_model_from("vit-tiny", gen));
  EXPECT_EQ(s.context, 197);
  EXPECT_EQ(s.active_matmul_weights, 768 * 192 + 12 * (4 * 192 * 192 + 2 * 192 * 768) + 192 * 1000);
  EXPECT_EQ(s.forward_flops_per_token, 2 * s.active_matmul_weights + 12 * 2 * 2 * 197 * 192);
  EXPECT_EQ(s.kv_cache_bytes_per_token_fp32, 0);
}

TEST(ModelStats, BadOptionsNameTheirValue) {
  const DecoderLMConfig c = preset_config("gpt-mini");
  EXPECT_THROW_WITH(model_stats(c, {.context = 256, .batch = 0}), "batch 0");
  EXPECT_THROW_WITH(model_stats(c, {.context = -3}), "context -3");
  EXPECT_THROW_WITH(model_stats(c, {.context = 1 << 30, .batch = 1 << 30}),
                    "batch 1073741824 x context 1073741824 makes the estimates overflow");
}

}  // namespace
}  // namespace nf::models
