// MultiHeadAttention: projections, positional hook, QK-norm, scaled_dot_product_attention, output.
#include "nanoformer/nn/attention.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <optional>

#include "nanoformer/autograd/grad_mode.h"
#include "nanoformer/core/error.h"
#include "nanoformer/ops/elementwise.h"
#include "nanoformer/ops/join.h"
#include "nanoformer/ops/norm.h"
#include "nanoformer/ops/reduce.h"
#include "nanoformer/ops/view.h"

namespace nf::nn {

AttentionConfig resolved(const AttentionConfig& config) {
  AttentionConfig c = config;
  NF_CHECK(c.dim > 0, "MultiHeadAttention: dim must be positive, got ", c.dim);
  NF_CHECK(c.n_heads > 0, "MultiHeadAttention: n_heads must be positive, got ", c.n_heads);
  if (c.n_kv_heads == 0) c.n_kv_heads = c.n_heads;
  NF_CHECK(c.n_kv_heads > 0 && c.n_heads % c.n_kv_heads == 0, "MultiHeadAttention: n_heads ", c.n_heads,
           " is not divisible by n_kv_heads ", c.n_kv_heads);
  if (c.head_dim == 0) {
    NF_CHECK(c.dim % c.n_heads == 0, "MultiHeadAttention: dim ", c.dim, " is not divisible by n_heads ", c.n_heads,
             " (set head_dim)");
    c.head_dim = c.dim / c.n_heads;
  }
  NF_CHECK(c.head_dim > 0, "MultiHeadAttention: head_dim must be positive, got ", c.head_dim);
  if (c.context_dim == 0) c.context_dim = c.dim;
  NF_CHECK(c.context_dim > 0, "MultiHeadAttention: context_dim must be positive, got ", c.context_dim);
  if (!c.output_bias) c.output_bias = c.bias;
  NF_CHECK(c.dropout >= 0.0 && c.dropout < 1.0, "MultiHeadAttention: dropout ", c.dropout, " outside [0, 1)");
  NF_CHECK(c.window >= 0 && (c.window == 0 || c.causal), "MultiHeadAttention: window ", c.window,
           " must be >= 0, and a sliding window needs causal attention");
  NF_CHECK(!c.qk_norm_weight || c.qk_norm, "MultiHeadAttention: qk_norm_weight needs qk_norm");
  NF_CHECK(c.qk_norm_eps > 0.0, "MultiHeadAttention: qk_norm_eps must be positive, got ", c.qk_norm_eps);
  NF_CHECK(c.value_gate_channels >= 0 && c.value_gate_channels <= c.dim, "MultiHeadAttention: value_gate_channels ",
           c.value_gate_channels, " outside [0, dim = ", c.dim, "]");
  NF_CHECK(!c.scale || std::isfinite(*c.scale), "MultiHeadAttention: scale ", c.scale.value_or(0.0), " is not finite");
  return c;
}

template <class N>
N attention_parameter_count(const AttentionConfig& config) {
  const AttentionConfig c = resolved(config);
  const N q_width = N(c.n_heads) * N(c.head_dim), kv_width = N(c.n_kv_heads) * N(c.head_dim);
  // q: dim -> q_width, k and v: context_dim -> kv_width, o: q_width -> dim
  return linear_parameter_count(N(c.dim), q_width, c.bias) +
         N(2) * linear_parameter_count(N(c.context_dim), kv_width, c.bias) +
         linear_parameter_count(q_width, N(c.dim), *c.output_bias) + N(qk_norm_parameter_count(c)) +
         N(c.value_gate_channels) * N(c.n_kv_heads);
}
template int64_t attention_parameter_count<int64_t>(const AttentionConfig&);
template long double attention_parameter_count<long double>(const AttentionConfig&);

int64_t qk_norm_parameter_count(const AttentionConfig& config) {
  const AttentionConfig c = resolved(config);
  return c.qk_norm_weight ? 2 * c.head_dim : 0;  // q_norm and k_norm, (head_dim) each
}

namespace {

// (B, T, heads * head_dim) -> (B, heads, T, head_dim), a view
Tensor split_heads(const Tensor& x, int64_t heads, int64_t head_dim) {
  return x.view({x.size(0), x.size(1), heads, head_dim}).transpose(1, 2);
}

// The additive score bias of the position scheme joined with the caller's mask.
Tensor with_score_bias(const Tensor& mask, const Tensor& bias) {
  if (!bias.defined()) return mask;
  if (!mask.defined()) return bias;
  if (mask.dtype() != DType::boolean) return add(mask, bias);
  return where(mask, bias, Tensor::scalar(-std::numeric_limits<double>::infinity(), bias.dtype()));
}

}  // namespace

MultiHeadAttention::MultiHeadAttention(const AttentionConfig& config, std::shared_ptr<AttentionPosition> position,
                                       Generator& gen)
    : Module("MultiHeadAttention"), config_(resolved(config)), position_(std::move(position)), dropout_gen_(config.seed) {
  const AttentionConfig& c = config_;
  q_proj = register_module("q_proj", std::make_shared<Linear>(c.dim, c.n_heads * c.head_dim, c.bias, gen));
  k_proj = register_module("k_proj", std::make_shared<Linear>(c.context_dim, c.n_kv_heads * c.head_dim, c.bias, gen));
  v_proj = register_module("v_proj", std::make_shared<Linear>(c.context_dim, c.n_kv_heads * c.head_dim, c.bias, gen));
  o_proj = register_module("o_proj", std::make_shared<Linear>(c.n_heads * c.head_dim, c.dim, c.output_bias.value_or(c.bias), gen));
  if (c.qk_norm_weight) {
    q_norm = register_module("q_norm", std::make_shared<RMSNorm>(c.head_dim, c.qk_norm_eps));
    k_norm = register_module("k_norm", std::make_shared<RMSNorm>(c.head_dim, c.qk_norm_eps));
  }
  if (c.value_gate_channels > 0)
    ve_gate = register_module("ve_gate", std::make_shared<ValueEmbeddingGate>(c.value_gate_channels, c.n_kv_heads, gen));
  // Without an explicit seed, each layer's dropout draws its own stream from the model's generator.
  if (c.dropout > 0.0 && c.seed == 0) dropout_gen_ = Generator(draw_seed(gen));
}

std::pair<Tensor, Tensor> MultiHeadAttention::positioned(Tensor q, Tensor k, std::span<const int64_t> q_positions,
                                                         std::span<const int64_t> k_positions) {
  if (q_norm) {  // rms(x) * w over head_dim, before rotation (Qwen3Attention's q_norm / k_norm)
    q = q_norm->forward(q);
    if (k.defined()) k = k_norm->forward(k);
  }
  if (position_) {
    q = position_->rotate_queries(q, q_positions);
    if (k.defined()) k = position_->rotate_keys(k, k_positions);
  }
  if (config_.qk_norm && !q_norm) {
    q = rms_norm(q, {}, config_.qk_norm_eps);  // x / sqrt(mean(x^2) + eps), fused, no weight
    if (k.defined()) k = rms_norm(k, {}, config_.qk_norm_eps);
  }
  return {q, k};
}

Tensor MultiHeadAttention::attend(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionMasks& masks,
                                  int64_t q_position, int64_t k_position, Tensor* weights) {
  const AttentionConfig& c = config_;
  const Tensor score_bias = position_ ? position_->score_bias(q, k, q_position, k_position) : Tensor();
  const AttentionOptions options{.causal = c.causal,
                                 .window = c.window,
                                 .mask = with_score_bias(masks.mask, score_bias),
                                 .key_padding = masks.key_padding,
                                 .dropout_p = is_training() ? c.dropout : 0.0,
                                 .scale = c.scale,
                                 .kernel = weights ? AttentionKernel::plain : AttentionKernel::fused};
  if (!weights) return scaled_dot_product_attention(q, k, v, options, dropout_gen_);
  AttentionWithWeights r = scaled_dot_product_attention_with_weights(q, k, v, options, dropout_gen_);
  *weights = r.weights;
  return r.out;
}

Tensor MultiHeadAttention::attend_cached(const Tensor& q, const Tensor& k, const Tensor& v,
                                         std::span<const CachedAttention> caches) {
  const AttentionConfig& c = config_;
  const int64_t B = q.size(0), Tq = q.size(2);
  std::vector<int64_t> positions;  // of each row's first new token
  positions.reserve(static_cast<size_t>(B));
  for (const CachedAttention& cache : caches) {
    const KVStorage& keys = cache.kv.keys;
    NF_CHECK(keys.heads() == c.n_kv_heads && keys.head_dim() == c.head_dim, "MultiHeadAttention: the cache holds ",
             shape_str({keys.batch(), keys.heads(), keys.columns(), keys.head_dim()}), " keys, not (batch, n_kv_heads = ",
             c.n_kv_heads, ", len, head_dim = ", c.head_dim, ")");
    NF_CHECK(cache.step && cache.step->new_tokens == Tq &&
                 static_cast<int64_t>(positions.size()) + cache.step->batch <= B,
             "MultiHeadAttention: x must be (B, T = new tokens, dim = ", c.dim, ") with the caches' rows, got ",
             shape_str({B, Tq, c.dim}));
    positions.insert(positions.end(), static_cast<size_t>(cache.step->batch), cache.step->position);
  }
  NF_CHECK(static_cast<int64_t>(positions.size()) == B, "MultiHeadAttention: the caches hold ", positions.size(),
           " rows, x ", B);
  // every row positioned in one go, then each cache's new keys and values go in place into its
  // columns column .. column + T - 1 (in the rows' type); attention reads its columns 0 .. column +
  // T - 1, column 0 at position p - column
  // (one position for all when they share it: a beam search's rows, a single sequence)
  const bool shared = std::all_of(positions.begin(), positions.end(), [&](int64_t p) { return p == positions[0]; });
  const std::span<const int64_t> at = shared ? std::span<const int64_t>(positions).first(1) : std::span<const int64_t>(positions);
  const auto [q_at, k_at] = positioned(q, k, at, at);
  const bool in_place = q.dtype() == DType::f32 && !(position_ && position_->has_score_bias());
  std::vector<CachedKV> rows_of;  // in place: each cache's rows
  std::vector<Tensor> outputs;    // else: each cache's output
  int64_t row = 0;
  for (const CachedAttention& cache : caches) {
    const LayerKV& storage = cache.kv;
    const int64_t n = cache.step->batch, p = cache.step->position, length = cache.column + Tq;
    const bool all = caches.size() == 1;
    storage.keys.write(cache.column, all ? k_at : narrow(k_at, 0, row, n));
    storage.values.write(cache.column, all ? v : narrow(v, 0, row, n));
    if (in_place) {
      rows_of.push_back({&storage.keys, &storage.values, length, n});
    } else {
      // another dtype, or a score bias (which reads the keys): over the columns as q's dtype (a view
      // of rows of that type, else their values converted)
      outputs.push_back(attend(all ? q_at : narrow(q_at, 0, row, n), storage.keys.read(n, 0, length, q_at.dtype()),
                               storage.values.read(n, 0, length, q_at.dtype()), {}, p, p - cache.column, nullptr));
    }
    row += n;
  }
  if (!in_place) return outputs.size() == 1 ? outputs[0] : cat(outputs, 0);
  return scaled_dot_product_attention(q_at, rows_of, {.causal = c.causal, .window = c.window, .scale = c.scale});
}

Tensor MultiHeadAttention::forward(const Tensor& x, const AttentionInputs& in, Tensor* weights) {
  const AttentionConfig& c = config_;
  NF_CHECK(x.dim() == 3 && x.size(2) == c.dim, "MultiHeadAttention: x must be (B, T, dim = ", c.dim, "), got ",
           shape_str(x.shape()));
  const int64_t B = x.size(0), Tq = x.size(1);
  const bool cached = !in.caches.empty(), cross = in.context.defined() || in.context_kv;
  std::optional<NoGradGuard> inference;
  if (cached || in.context_kv) {
    NF_CHECK(!cached || (c.causal && !cross), "MultiHeadAttention: a KV cache needs causal self-attention");
    NF_CHECK(!is_training(), "MultiHeadAttention: attention with a cache is inference: call eval() first");
    NF_CHECK(!weights, "MultiHeadAttention: the attention weights are not returned with a cache");
    inference.emplace();
  }
  // q (B, H, Tq, Dh), k and v (B, Hkv, Tk, Dh): views of the projections, never copied; of x
  // alone (self-attention), the three in one go
  const bool self = !in.context_kv && !cross;
  const std::vector<Tensor> qkv =
      self ? forward_together(std::array<Linear*, 3>{q_proj.get(), k_proj.get(), v_proj.get()}, x) : std::vector<Tensor>{};
  const Tensor q = split_heads(self ? qkv[0] : q_proj->forward(x), c.n_heads, c.head_dim);
  Tensor k, v;
  if (in.context_kv) {
    const ContextKV& kv = *in.context_kv;
    NF_CHECK(kv.keys.dim() == 4 && kv.keys.size(0) == B && kv.keys.size(1) == c.n_kv_heads &&
                 kv.keys.size(3) == c.head_dim,
             "MultiHeadAttention: x ", shape_str(x.shape()), " and context keys ", shape_str(kv.keys.shape()),
             " must be (B, T, dim = ", c.dim, ") and (B, n_kv_heads = ", c.n_kv_heads, ", S, head_dim = ", c.head_dim, ")");
    k = kv.keys, v = kv.values;  // positioned and normed once, by context_kv
  } else {
    const Tensor& source = cross ? in.context : x;
    NF_CHECK(source.dim() == 3 && source.size(0) == B && source.size(2) == c.context_dim,
             "MultiHeadAttention: context must be (B = ", B, ", Tk, context_dim = ", c.context_dim, "), got ",
             shape_str(source.shape()));
    k = split_heads(self ? qkv[1] : k_proj->forward(source), c.n_kv_heads, c.head_dim);
    Tensor v_flat = self ? qkv[2] : v_proj->forward(source);
    if (ve_gate) {
      NF_CHECK(self && in.value_embedding.defined(), "MultiHeadAttention: a value-embedding gate needs self-attention "
               "and AttentionInputs::value_embedding");
      v_flat = ve_gate->forward(v_flat, x, in.value_embedding);  // v + 3 sigmoid(x[:c] Wg^T) ve
    }
    v = split_heads(v_flat, c.n_kv_heads, c.head_dim);
  }
  Tensor y;
  if (cached) {
    y = attend_cached(q, k, v, in.caches);
  } else {
    const int64_t k_position = cross ? 0 : in.q_offset;
    const auto [q_at, k_at] = positioned(q, in.context_kv ? Tensor() : k, {&in.q_offset, 1}, {&k_position, 1});
    y = attend(q_at, in.context_kv ? k : k_at, v, in.masks, in.q_offset, k_position, weights);
  }
  // (B, H, Tq, Dh) -> (B, Tq, H * Dh) -> o_proj
  return o_proj->forward(y.transpose(1, 2).reshape({B, Tq, c.n_heads * c.head_dim}));
}

ContextKV MultiHeadAttention::context_kv(const Tensor& context) {
  const AttentionConfig& c = config_;
  NF_CHECK(!position_, "MultiHeadAttention: precomputed context keys need an attention without a positional scheme");
  NF_CHECK(context.dim() == 3 && context.size(2) == c.context_dim, "MultiHeadAttention: context must be (B, S, context_dim = ",
           c.context_dim, "), got ", shape_str(context.shape()));
  NoGradGuard no_grad;
  const Tensor k = split_heads(k_proj->forward(context), c.n_kv_heads, c.head_dim);
  const Tensor k_normed = k_norm ? k_norm->forward(k) : c.qk_norm ? rms_norm(k, {}, c.qk_norm_eps) : k;
  return {k_normed, split_heads(v_proj->forward(context), c.n_kv_heads, c.head_dim)};
}

}  // namespace nf::nn
