// model_stats: parameter counts by part, FLOPs, KV-cache bytes and memory, from the config alone.
#include "nanoformer/models/model_stats.h"

#include <algorithm>

#include "nanoformer/core/error.h"
#include "nanoformer/nn/block.h"
#include "nanoformer/nn/linear.h"
#include "nanoformer/nn/mlp.h"

namespace nf::models {
namespace {

// The shapes every estimate below is made of, read off the resolved block.
struct Shapes {
  int64_t dim, vocab, layers, heads, head_dim, q_width, kv_width, hidden, up_projections;
  int64_t routed = 0, shared = 0, active_routed = 0;  // experts per layer (MoE only)
};

Shapes shapes_of(const DecoderLMConfig& c) {
  const nn::BlockConfig b = block_config(c);
  Shapes s{};
  s.dim = c.dim;
  s.vocab = c.vocab_size;
  s.layers = c.n_layers;
  s.heads = b.attention.n_heads;
  s.head_dim = b.attention.head_dim;
  s.q_width = s.heads * s.head_dim;
  s.kv_width = b.attention.n_kv_heads * s.head_dim;
  s.hidden = b.mlp.hidden;
  s.up_projections = b.mlp.kind == nn::MLPKind::swiglu ? 2 : 1;  // SwiGLU's w1 and w3
  if (b.moe) {
    s.routed = b.moe->n_experts;
    s.shared = b.moe->n_shared_experts;
    s.active_routed = b.moe->routing == nn::MoERouting::dense ? b.moe->n_experts : b.moe->top_k;
  }
  return s;
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
  m.parameters = parameter_counts(c);
  m.context = options.context > 0 ? options.context : c.max_seq_len;
  m.batch = options.batch;
  const int64_t expert = nn::mlp_parameter_count(block_config(c).mlp);  // one routed expert
  m.active_parameters = m.parameters.total - s.layers * (s.routed - s.active_routed) * expert;
  const int64_t experts_per_token = s.routed > 0 ? s.active_routed + s.shared : 1;
  const int64_t attention_weights = 2 * s.dim * s.q_width + 2 * s.dim * s.kv_width;
  const int64_t expert_weights = (s.up_projections + 1) * s.dim * s.hidden;
  m.active_matmul_weights = s.layers * (attention_weights + experts_per_token * expert_weights + s.dim * s.routed) +
                            s.vocab * s.dim;
  // 2 N + 2 x 2 x (sum over layers of the keys attended: T, or min(W, T) with a window) x H x hd
  // (QK^T and AV: 2 FLOPs per multiply-add)
  int64_t attended = 0;
  for (int64_t i = 0; i < c.n_layers; ++i)
    attended += layer_window(c, i) > 0 ? std::min(layer_window(c, i), m.context) : m.context;
  m.forward_flops_per_token = 2 * m.active_matmul_weights + 2 * 2 * attended * s.heads * s.head_dim;
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
    const auto sublayer = [&](const nn::AttentionConfig& a) {
      return 2 * width + 2 * a.n_heads * a.head_dim + 2 * a.n_kv_heads * a.head_dim + a.n_heads * m.context;
    };
    activations += sublayer(b.attention) + 2 * width + (up_projections + 1) * b.mlp.hidden;
    if (b.cross) activations += sublayer(*b.cross);
    if (b.attention.causal) {
      kv_elements += 2 * b.attention.n_kv_heads * b.attention.head_dim;
      if (b.cross) kv_elements += 2 * b.cross->n_kv_heads * b.cross->head_dim;
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

std::vector<WeightTypeStats> weight_type_stats(const nn::Module& model) {
  std::vector<WeightTypeStats> out;
  auto add = [&](const std::string& type, int64_t parameters, int64_t bytes) {
    auto it = std::find_if(out.begin(), out.end(), [&](const WeightTypeStats& s) { return s.type == type; });
    if (it == out.end()) it = out.insert(out.end(), WeightTypeStats{.type = type});
    it->tensors += 1;
    it->parameters += parameters;
    it->bytes += bytes;
  };
  for (const auto& [name, p] : model.named_parameters())
    add(dtype_name(p.dtype()), p.numel(), p.numel() * static_cast<int64_t>(dtype_size(p.dtype())));
  for (const auto& [name, q] : model.named_quantized())
    add(quant_type_name(q.type()), q.rows() * q.cols(), static_cast<int64_t>(q.nbytes()));
  return out;
}

}  // namespace nf::models
