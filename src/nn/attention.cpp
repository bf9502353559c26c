// MultiHeadAttention: projections, positional hook, QK-norm, scaled_dot_product_attention, output.
#include "nanoformer/nn/attention.h"

#include <cmath>
#include <limits>

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
  NF_CHECK(c.qk_norm_eps > 0.0, "MultiHeadAttention: qk_norm_eps must be positive, got ", c.qk_norm_eps);
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
         linear_parameter_count(q_width, N(c.dim), *c.output_bias);
}
template int64_t attention_parameter_count<int64_t>(const AttentionConfig&);
template long double attention_parameter_count<long double>(const AttentionConfig&);

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
  // Without an explicit seed, each layer's dropout draws its own stream from the model's generator.
  if (c.dropout > 0.0 && c.seed == 0) dropout_gen_ = Generator(draw_seed(gen));
}

AttentionWithWeights MultiHeadAttention::attend(const Tensor& x, const Tensor& context, const AttentionMasks& masks,
                                                int64_t q_offset, bool with_weights) {
  const AttentionConfig& c = config_;
  NF_CHECK(x.dim() == 3 && x.size(2) == c.dim, "MultiHeadAttention: x must be (B, T, dim = ", c.dim, "), got ",
           shape_str(x.shape()));
  const bool cross = context.defined();
  const Tensor& source = cross ? context : x;
  NF_CHECK(source.dim() == 3 && source.size(0) == x.size(0) && source.size(2) == c.context_dim,
           "MultiHeadAttention: context must be (B = ", x.size(0), ", Tk, context_dim = ", c.context_dim, "), got ",
           shape_str(source.shape()));
  const int64_t B = x.size(0), Tq = x.size(1);
  // q (B, H, Tq, Dh), k and v (B, Hkv, Tk, Dh): views of the projections, never copied
  Tensor q = split_heads(q_proj->forward(x), c.n_heads, c.head_dim);
  Tensor k = split_heads(k_proj->forward(source), c.n_kv_heads, c.head_dim);
  const Tensor v = split_heads(v_proj->forward(source), c.n_kv_heads, c.head_dim);
  const int64_t k_offset = cross ? 0 : q_offset;
  if (position_) {
    q = position_->rotate_queries(q, q_offset);
    k = position_->rotate_keys(k, k_offset);
  }
  if (c.qk_norm) {
    q = rms_norm(q, {}, c.qk_norm_eps);  // x / sqrt(mean(x^2) + eps), fused, no weight
    k = rms_norm(k, {}, c.qk_norm_eps);
  }
  const Tensor score_bias = position_ ? position_->score_bias(q, k, q_offset, k_offset) : Tensor();
  AttentionOptions options{.causal = c.causal,
                           .mask = with_score_bias(masks.mask, score_bias),
                           .key_padding = masks.key_padding,
                           .dropout_p = is_training() ? c.dropout : 0.0,
                           .scale = c.scale,
                           .kernel = c.fused ? AttentionKernel::fused : AttentionKernel::plain};
  AttentionWithWeights r = with_weights ? scaled_dot_product_attention_with_weights(q, k, v, options, dropout_gen_)
                                        : AttentionWithWeights{scaled_dot_product_attention(q, k, v, options, dropout_gen_), {}};
  // (B, H, Tq, Dh) -> (B, Tq, H * Dh) -> o_proj
  r.out = o_proj->forward(r.out.transpose(1, 2).reshape({B, Tq, c.n_heads * c.head_dim}));
  return r;
}

Tensor MultiHeadAttention::forward(const Tensor& x, const Tensor& context, const AttentionMasks& masks, int64_t q_offset) {
  return attend(x, context, masks, q_offset, false).out;
}

Tensor MultiHeadAttention::forward_cached(const Tensor& x, const CachedAttention& cache) {
  return forward_cached(x, std::span<const CachedAttention>(&cache, 1));
}

Tensor MultiHeadAttention::forward_cached(const Tensor& x, std::span<const CachedAttention> caches) {
  const AttentionConfig& c = config_;
  NF_CHECK(!caches.empty(), "MultiHeadAttention: a cached forward needs at least one cache");
  NF_CHECK(c.causal, "MultiHeadAttention: a cached forward needs causal self-attention");
  NF_CHECK(!is_training(), "MultiHeadAttention: a cached forward is inference: call eval() first");
  int64_t rows = 0;
  for (const CachedAttention& cache : caches) {
    NF_CHECK(cache.step, "MultiHeadAttention: a cached forward needs the cache's step");
    NF_CHECK(cache.step->new_tokens == caches[0].step->new_tokens, "MultiHeadAttention: caches of one forward take ",
             caches[0].step->new_tokens, " and ", cache.step->new_tokens, " new tokens; they must agree");
    rows += cache.step->batch;
  }
  const int64_t T = caches[0].step->new_tokens;
  NF_CHECK(x.dim() == 3 && x.size(0) == rows && x.size(1) == T && x.size(2) == c.dim,
           "MultiHeadAttention: x must be (B = ", rows, ", T = ", T, ", dim = ", c.dim,
           ") for this cache step, got ", shape_str(x.shape()));
  NoGradGuard no_grad;
  const Tensor q = split_heads(q_proj->forward(x), c.n_heads, c.head_dim);
  const Tensor k = split_heads(k_proj->forward(x), c.n_kv_heads, c.head_dim);
  const Tensor v = split_heads(v_proj->forward(x), c.n_kv_heads, c.head_dim);
  std::vector<Tensor> outputs;
  int64_t row = 0;
  for (const CachedAttention& cache : caches) {
    const int64_t B = cache.step->batch;
    outputs.push_back(attend_cached(narrow(q, 0, row, B), narrow(k, 0, row, B), narrow(v, 0, row, B), cache));
    row += B;
  }
  const Tensor y = outputs.size() == 1 ? outputs[0] : cat(outputs, 0);
  // (B, H, T, Dh) -> (B, T, H * Dh) -> o_proj
  return o_proj->forward(y.transpose(1, 2).reshape({rows, T, c.n_heads * c.head_dim}));
}

Tensor MultiHeadAttention::attend_cached(Tensor q, Tensor k, const Tensor& v, const CachedAttention& cache) {
  const AttentionConfig& c = config_;
  const KVCacheStep& step = *cache.step;
  const Tensor& storage = cache.kv.keys;
  NF_CHECK(storage.dim() == 4 && storage.size(1) == c.n_kv_heads && storage.size(3) == c.head_dim &&
               cache.kv.values.shape() == storage.shape(),
           "MultiHeadAttention: the cache holds ", shape_str(storage.shape()), " keys, not (batch, n_kv_heads = ",
           c.n_kv_heads, ", len, head_dim = ", c.head_dim, ")");
  const int64_t B = step.batch, T = step.new_tokens, columns = step.column + T;
  if (position_) {
    q = at_row_positions(step.positions, [&](int64_t r, int64_t n, int64_t p) {
      return position_->rotate_queries(narrow(q, 0, r, n), p);
    });
    k = at_row_positions(step.positions, [&](int64_t r, int64_t n, int64_t p) {
      return position_->rotate_keys(narrow(k, 0, r, n), p);
    });
  }
  if (c.qk_norm) {
    q = rms_norm(q, {}, c.qk_norm_eps);  // x / sqrt(mean(x^2) + eps), fused, no weight
    k = rms_norm(k, {}, c.qk_norm_eps);
  }
  // the new keys and values go in place into columns column .. column + T - 1; attention reads
  // columns 0 .. column + T - 1 as a view of the storage
  const Tensor keys = narrow(narrow(storage, 0, 0, B), 2, 0, columns);
  const Tensor values = narrow(narrow(cache.kv.values, 0, 0, B), 2, 0, columns);
  copy_into(narrow(keys, 2, step.column, T), k);
  copy_into(narrow(values, 2, step.column, T), v);
  // row r's column t sits at position t - start[r]: keys start at position (step position - column)
  const Tensor score_bias =
      position_ ? at_row_positions(step.positions, [&](int64_t r, int64_t n, int64_t p) {
        return position_->score_bias(narrow(q, 0, r, n), narrow(keys, 0, r, n), p, p - step.column);
      })
                : Tensor();
  const AttentionOptions options{.causal = true,
                                 .mask = score_bias,
                                 .key_padding = step.key_padding,
                                 .dropout_p = 0.0,
                                 .scale = c.scale,
                                 .kernel = c.fused ? AttentionKernel::fused : AttentionKernel::plain};
  return scaled_dot_product_attention(q, keys, values, options, dropout_gen_);
}

LayerKV MultiHeadAttention::context_kv(const Tensor& context) {
  const AttentionConfig& c = config_;
  NF_CHECK(!position_, "MultiHeadAttention: precomputed context keys need an attention without a positional scheme");
  NF_CHECK(context.dim() == 3 && context.size(2) == c.context_dim, "MultiHeadAttention: context must be (B, S, context_dim = ",
           c.context_dim, "), got ", shape_str(context.shape()));
  NoGradGuard no_grad;
  Tensor k = split_heads(k_proj->forward(context), c.n_kv_heads, c.head_dim);
  if (c.qk_norm) k = rms_norm(k, {}, c.qk_norm_eps);
  return {k, split_heads(v_proj->forward(context), c.n_kv_heads, c.head_dim)};
}

Tensor MultiHeadAttention::forward_context_kv(const Tensor& x, const LayerKV& kv, const AttentionMasks& masks) {
  const AttentionConfig& c = config_;
  NF_CHECK(!is_training(), "MultiHeadAttention: attention over precomputed keys is inference: call eval() first");
  NF_CHECK(x.dim() == 3 && x.size(2) == c.dim && kv.keys.dim() == 4 && kv.keys.size(0) == x.size(0) &&
               kv.keys.size(1) == c.n_kv_heads && kv.keys.size(3) == c.head_dim,
           "MultiHeadAttention: x ", shape_str(x.shape()), " and context keys ", shape_str(kv.keys.shape()),
           " must be (B, T, dim = ", c.dim, ") and (B, n_kv_heads = ", c.n_kv_heads, ", S, head_dim = ", c.head_dim, ")");
  NoGradGuard no_grad;
  const int64_t B = x.size(0), T = x.size(1);
  Tensor q = split_heads(q_proj->forward(x), c.n_heads, c.head_dim);
  if (c.qk_norm) q = rms_norm(q, {}, c.qk_norm_eps);
  const AttentionOptions options{.causal = c.causal,
                                 .mask = masks.mask,
                                 .key_padding = masks.key_padding,
                                 .dropout_p = 0.0,
                                 .scale = c.scale,
                                 .kernel = c.fused ? AttentionKernel::fused : AttentionKernel::plain};
  const Tensor y = scaled_dot_product_attention(q, kv.keys, kv.values, options, dropout_gen_);
  // (B, H, T, Dh) -> (B, T, H * Dh) -> o_proj
  return o_proj->forward(y.transpose(1, 2).reshape({B, T, c.n_heads * c.head_dim}));
}

AttentionWithWeights MultiHeadAttention::forward_with_weights(const Tensor& x, const Tensor& context,
                                                              const AttentionMasks& masks, int64_t q_offset) {
  return attend(x, context, masks, q_offset, true);
}

}  // namespace nf::nn
