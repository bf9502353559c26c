// model_stats: parameter counts by part, FLOPs, KV-cache bytes and memory, from the config alone.
#include "nanoformer/models/model_stats.h"

#include "nanoformer/core/error.h"
#include "nanoformer/nn/block.h"
#include "nanoformer/nn/linear.h"
#include "nanoformer/nn/mlp.h"
#include "nanoformer/nn/norm.h"

namespace nf::models {
namespace {

// The shapes every count below is made of.
struct Shapes {
  int64_t dim, vocab, layers, heads, head_dim, q_width, kv_width, hidden, up_projections;
  int64_t routed = 0, shared = 0, active_routed = 0;  // experts per layer (MoE only)
};

Shapes shapes_of(const DecoderLMConfig& c) {
  Shapes s{};
  s.dim = c.dim;
  s.vocab = c.vocab_size;
  s.layers = c.n_layers;
  s.heads = c.n_heads;
  s.head_dim = c.head_dim > 0 ? c.head_dim : c.dim / c.n_heads;
  s.q_width = c.n_heads * s.head_dim;
  s.kv_width = (c.n_kv_heads > 0 ? c.n_kv_heads : c.n_heads) * s.head_dim;
  s.hidden = nn::mlp_hidden_dim(block_config(c).mlp);
  s.up_projections = c.mlp == nn::MLPKind::swiglu ? 2 : 1;  // SwiGLU's w1 and w3
  if (c.moe) {
    s.routed = c.moe->n_experts;
    s.shared = c.moe->n_shared_experts;
    s.active_routed = c.moe->routing == nn::MoERouting::dense ? c.moe->n_experts : c.moe->top_k;
  }
  return s;
}

// One norm's parameters: 0, dim or 2 dim.
int64_t norm_parameters(const DecoderLMConfig& c) { return nn::norm_parameter_count(block_config(c).norm); }

ParameterCounts count_parts(const DecoderLMConfig& c, const Shapes& s) {
  auto bias = [](bool on, int64_t n) { return on ? n : 0; };
  const int64_t D = s.dim, L = s.layers;
  // one MLP (or one expert): up projection(s) (D -> hidden) and down projection (hidden -> D)
  const int64_t expert = s.up_projections * (D * s.hidden + bias(c.mlp_bias, s.hidden)) + s.hidden * D + bias(c.mlp_bias, D);
  const int64_t norms_per_layer = c.norm_placement == nn::NormPlacement::sandwich ? 4 : 2;
  ParameterCounts p;
  p.embedding = s.vocab * D;
  p.positions = c.position == nn::PositionKind::learned   ? c.max_seq_len * D
                : c.position == nn::PositionKind::t5_bias ? positional_config(c).num_buckets * c.n_heads
                                                          : 0;
  p.attention = L * (2 * D * s.q_width + 2 * D * s.kv_width +
                     bias(c.attention_bias, s.q_width + 2 * s.kv_width + D));
  if (c.moe) {
    p.routed_experts = L * s.routed * expert;
    p.shared_experts = L * s.shared * expert;
    p.router = L * (D * s.routed + bias(c.moe->gate_bias, s.routed));
  } else {
    p.mlp = L * expert;
  }
  p.norms = ((c.embedding_norm ? 1 : 0) + L * norms_per_layer + 1) * norm_parameters(c);
  p.head = c.tie_embeddings ? 0 : s.vocab * D;
  p.total = p.embedding + p.positions + p.attention + p.mlp + p.routed_experts + p.shared_experts + p.router +
            p.norms + p.head;
  return p;
}

// What autograd keeps per token for the backward, in elements (see model_stats.h).
int64_t activation_elements_per_token(const Shapes& s, int64_t context) {
  const int64_t experts_per_token = s.routed > 0 ? s.active_routed + s.shared : 1;
  const int64_t layer = 4 * s.dim + s.q_width + 2 * s.kv_width + s.q_width + s.heads * context +
                        experts_per_token * (s.up_projections + 1) * s.hidden;
  return s.layers * layer + s.dim + 2 * s.vocab;
}

// Everything stored in one dtype of `bytes` bytes per element.
MemoryEstimate memory(const ModelStats& m, int64_t kv_bytes_per_token, int64_t activation_elements, int64_t bytes) {
  MemoryEstimate e;
  e.weights = m.parameters.total * bytes;
  e.kv_cache = kv_bytes_per_token * m.batch * m.context;
  e.inference = e.weights + e.kv_cache;
  e.gradients = e.weights;
  e.optimizer = 2 * e.weights;
  e.activations = activation_elements * bytes * m.batch * m.context;
  e.training = e.weights + e.gradients + e.optimizer + e.activations;
  return e;
}

}  // namespace

ModelStats model_stats(const DecoderLMConfig& c, const StatsOptions& options) {
  validate_model_config(c, c.name.empty() ? "model_stats" : c.name);
  NF_CHECK(options.context >= 0, "model_stats: context ", options.context, " must be positive (0 = max_seq_len)");
  NF_CHECK(options.batch > 0, "model_stats: batch ", options.batch, " must be positive");
  const Shapes s = shapes_of(c);
  // The estimates below are int64 products; bound them in floating point first, so that a huge
  // batch x context is an error rather than an overflow.
  const long double context = options.context > 0 ? options.context : c.max_seq_len;
  const long double per_token = s.layers * (8.0L * s.dim + s.heads * context + 4.0L * s.hidden * (s.routed + s.shared + 1)) +
                                4.0L * s.vocab;  // more than activation_elements_per_token
  NF_CHECK(per_token * options.batch * context * 4 < 1e18L && 12.0L * s.layers * context * s.heads * s.head_dim < 1e18L,
           "model_stats: batch ", options.batch, " x context ", static_cast<int64_t>(context),
           " makes the estimates overflow; give a smaller batch or context");
  ModelStats m;
  m.parameters = count_parts(c, s);
  m.context = options.context > 0 ? options.context : c.max_seq_len;
  m.batch = options.batch;
  const int64_t expert = m.parameters.routed_experts / (s.layers * (s.routed > 0 ? s.routed : 1));
  m.active_parameters = m.parameters.total - s.layers * (s.routed - s.active_routed) * expert;
  const int64_t experts_per_token = s.routed > 0 ? s.active_routed + s.shared : 1;
  const int64_t attention_weights = 2 * s.dim * s.q_width + 2 * s.dim * s.kv_width;
  const int64_t expert_weights = (s.up_projections + 1) * s.dim * s.hidden;
  m.active_matmul_weights = s.layers * (attention_weights + experts_per_token * expert_weights + s.dim * s.routed) +
                            s.vocab * s.dim;
  // 2 N + 2 x 2 x L x T x H x hd  (QK^T and AV: 2 FLOPs per multiply-add)
  m.forward_flops_per_token = 2 * m.active_matmul_weights + 2 * 2 * s.layers * m.context * s.heads * s.head_dim;
  m.training_flops_per_token = 3 * m.forward_flops_per_token;
  // 2 (k, v) x L x kv_heads x head_dim x bytes
  m.kv_cache_bytes_per_token_fp32 = 2 * s.layers * s.kv_width * 4;
  m.kv_cache_bytes_per_token_bf16 = 2 * s.layers * s.kv_width * 2;
  const int64_t activations = activation_elements_per_token(s, m.context);
  m.fp32 = memory(m, m.kv_cache_bytes_per_token_fp32, activations, 4);
  m.bf16 = memory(m, m.kv_cache_bytes_per_token_bf16, activations, 2);
  return m;
}

ModelStats built_model_stats(const Model& model, const StatsOptions& options) {
  NF_CHECK(options.context >= 0, "model_stats: context ", options.context, " must be positive (0 = the model's)");
  NF_CHECK(options.batch > 0, "model_stats: batch ", options.batch, " must be positive");
  ModelStats m;
  m.context = options.context > 0 ? options.context : model.max_context();
  m.batch = options.batch;
  m.parameters.total = model.num_parameters();
  m.active_parameters = m.parameters.total;
  int64_t attention_flops = 0, activations = 0, kv_elements = 0, width = 0;
  for (const auto& [name, module] : model.named_modules()) {
    if (const auto* linear = dynamic_cast<const nn::Linear*>(module))
      m.active_matmul_weights += linear->in_features() * linear->out_features();
    if (const auto* attention = dynamic_cast<const nn::MultiHeadAttention*>(module)) {
      const nn::AttentionConfig& a = attention->config();
      attention_flops += 2 * 2 * m.context * a.n_heads * a.head_dim;  // QK^T and AV
    }
    const auto* block = dynamic_cast<const nn::TransformerBlock*>(module);
    if (!block) continue;
    const nn::BlockConfig& b = block->config();
    width = b.norm.dim;
    const int64_t up_projections = b.mlp.kind == nn::MLPKind::swiglu ? 2 : 1;
    // norms' inputs and outputs, q, k, v, the attention output and weights (see model_stats.h)
    const auto sublayer = [&](const nn::MultiHeadAttention& a) {
      const nn::AttentionConfig& c = a.config();
      return 2 * width + 2 * c.n_heads * c.head_dim + 2 * c.n_kv_heads * c.head_dim + c.n_heads * m.context;
    };
    activations += sublayer(*block->attn) + 2 * width + (up_projections + 1) * nn::mlp_hidden_dim(b.mlp);
    if (block->cross_attn) activations += sublayer(*block->cross_attn);
    if (b.attention.causal) {
      kv_elements += 2 * block->attn->config().n_kv_heads * block->attn->config().head_dim;
      if (block->cross_attn) kv_elements += 2 * block->cross_attn->config().n_kv_heads * block->cross_attn->config().head_dim;
    }
  }
  m.active_matmul_weights += model.tied_head_weights();
  activations += width;  // the embedding output
  NF_CHECK(static_cast<long double>(activations) * m.batch * m.context * 4 < 1e18L,
           "model_stats: batch ", m.batch, " x context ", m.context, " makes the estimates overflow; give a smaller batch or context");
  m.forward_flops_per_token = 2 * m.active_matmul_weights + attention_flops;
  m.training_flops_per_token = 3 * m.forward_flops_per_token;
  m.kv_cache_bytes_per_token_fp32 = 4 * kv_elements;
  m.kv_cache_bytes_per_token_bf16 = 2 * kv_elements;
  m.fp32 = memory(m, m.kv_cache_bytes_per_token_fp32, activations, 4);
  m.bf16 = memory(m, m.kv_cache_bytes_per_token_bf16, activations, 2);
  return m;
}

}  // namespace nf::models
