#pragma once
// Multi-head attention layer: self- or cross-attention with grouped-query / multi-query heads,
// an optional positional scheme (RoPE rotates q and k, ALiBi / T5 / Transformer-XL add a score
// bias), optional QK-norm, dropout on the weights:
//   q = x Wq^T, k = c Wk^T, v = c Wv^T      (c = context for cross-attention, else x)
//   q, k = rotate(q), rotate(k);  q, k = rms(q), rms(k) with qk_norm
//   y = softmax(scale q k^T + score_bias + mask) v,  out = y Wo^T
// Parameters named as PyTorch models commonly do: q_proj, k_proj, v_proj, o_proj.
#include <cstdint>
#include <memory>
#include <optional>
#include <span>

#include "nanoformer/core/generator.h"
#include "nanoformer/nn/attention_position.h"
#include "nanoformer/nn/kv_cache.h"
#include "nanoformer/nn/linear.h"
#include "nanoformer/nn/module.h"
#include "nanoformer/ops/attention.h"

namespace nf::nn {

struct AttentionConfig {
  int64_t dim = 0;          // model width: x (B, T, dim), out (B, T, dim)
  int64_t n_heads = 1;
  int64_t n_kv_heads = 0;   // key/value heads, dividing n_heads; 0 = n_heads
  int64_t head_dim = 0;     // 0 = dim / n_heads
  int64_t context_dim = 0;  // width of the cross-attention context; 0 = dim
  bool bias = false;        // biases in the four projections
  std::optional<bool> output_bias{};  // o_proj's bias; default `bias` (ViT: q, k, v without, o with)
  bool qk_norm = false;     // parameter-free RMS norm of q and k over head_dim, after rotation (nanochat)
  double qk_norm_eps = 1e-6;
  double dropout = 0.0;     // on the attention weights, in training
  bool causal = false;      // bottom-right aligned (see ops/attention.h)
  std::optional<double> scale{};  // multiplies q k^T; default 1 / sqrt(head_dim)
  bool fused = true;        // the fused kernel; false = the plain composition
  uint64_t seed = 0;        // of the dropout generator
};

// Masks given per call, in the conventions of ops/attention.h: mask bool (true = attend) or
// additive, broadcastable to (B, H, Tq, Tk); key_padding bool (B, Tk), true = real token.
struct AttentionMasks {
  Tensor mask{};
  Tensor key_padding{};
};

// `config` validated (an error naming the field and value) with its defaults filled in: n_kv_heads,
// head_dim, context_dim and output_bias. The one place they are resolved: the module, the count
// below and the models' block configs all call it.
AttentionConfig resolved(const AttentionConfig& config);

// MultiHeadAttention(config)'s num_parameters() without building it: q, k, v, o and their biases;
// in arithmetic N (int64_t, or long double to bound a config whose count might not fit).
template <class N = int64_t>
N attention_parameter_count(const AttentionConfig& config);

class MultiHeadAttention : public Module {
 public:
  // The position scheme is not registered as a child: models share one among layers and own it.
  explicit MultiHeadAttention(const AttentionConfig& config, std::shared_ptr<AttentionPosition> position = nullptr,
                              Generator& gen = default_generator());

  // x (B, Tq, dim); context (B, Tk, context_dim) for cross-attention, undefined for self-attention.
  // Query i sits at position q_offset + i; keys at q_offset + j (self) or j (cross).
  Tensor forward(const Tensor& x, const Tensor& context = {}, const AttentionMasks& masks = {}, int64_t q_offset = 0);
  // The same through the plain kernel, also returning the weights (B, H, Tq, Tk).
  AttentionWithWeights forward_with_weights(const Tensor& x, const Tensor& context = {},
                                            const AttentionMasks& masks = {}, int64_t q_offset = 0);
  // Causal self-attention of x (B, T, dim), the step's new tokens, over the cached prefix and
  // themselves: their keys and values are written into the cache at the step's columns, and the
  // queries and keys sit at the step's per-row positions. Inference only (eval mode, no autograd).
  Tensor forward_cached(const Tensor& x, const CachedAttention& cache);
  // The same for rows that live in different caches (continuous batching: sequences at different
  // lengths decoded together): caches[i] holds the next caches[i].step->batch rows of x, in order.
  // The projections run once over all rows; each cache's rows attend over their own prefix at
  // their own positions, so every row computes what it would alone.
  Tensor forward_cached(const Tensor& x, std::span<const CachedAttention> caches);
  // Cross-attention with the context's keys and values computed once (a decoder generating over a
  // fixed encoder output): context_kv(context) projects them, (B, n_kv_heads, S, head_dim) each;
  // forward_context_kv(x, kv, masks) equals forward(x, context, masks) at every step. Inference only.
  LayerKV context_kv(const Tensor& context);
  Tensor forward_context_kv(const Tensor& x, const LayerKV& kv, const AttentionMasks& masks = {});

  const AttentionConfig& config() const { return config_; }
  std::shared_ptr<Linear> q_proj, k_proj, v_proj, o_proj;

 protected:
  Generator* own_generator() override { return &dropout_gen_; }  // attention-weight dropout

 private:
  AttentionWithWeights attend(const Tensor& x, const Tensor& context, const AttentionMasks& masks, int64_t q_offset,
                              bool with_weights);

  // One cache's part of a cached forward: q (B, H, T, Dh), k and v (B, Hkv, T, Dh) of its rows,
  // projected, not yet rotated; writes k and v into the cache and returns (B, H, T, Dh).
  Tensor attend_cached(Tensor q, Tensor k, const Tensor& v, const CachedAttention& cache);

  AttentionConfig config_;  // n_kv_heads, head_dim and context_dim resolved
  std::shared_ptr<AttentionPosition> position_;
  Generator dropout_gen_;
};

}  // namespace nf::nn
