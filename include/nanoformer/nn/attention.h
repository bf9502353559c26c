#pragma once
// Multi-head attention layer: self- or cross-attention with grouped-query / multi-query heads,
// an optional positional scheme (RoPE rotates q and k, ALiBi / T5 / Transformer-XL add a score
// bias), optional QK-norm, dropout on the weights:
//   q = x Wq^T, k = c Wk^T, v = c Wv^T      (c = context for cross-attention, else x)
//   v = v + 3 sigmoid(x[..., :channels] Wg^T) ve with a value-embedding gate (nanochat; nn/value_embedding.h)
//   q, k = rms(q) w_q, rms(k) w_k with a learned qk_norm_weight (Qwen3), before rotation
//   q, k = rotate(q), rotate(k);  q, k = rms(q), rms(k) with a parameter-free qk_norm (nanochat)
//   y = softmax(scale q k^T + score_bias + mask) v,  out = y Wo^T
// Parameters named as PyTorch models commonly do: q_proj, k_proj, v_proj, o_proj.
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <utility>

#include "nanoformer/core/generator.h"
#include "nanoformer/nn/attention_position.h"
#include "nanoformer/nn/kv_cache.h"
#include "nanoformer/nn/linear.h"
#include "nanoformer/nn/module.h"
#include "nanoformer/nn/norm.h"
#include "nanoformer/nn/value_embedding.h"
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
  // with qk_norm: a learned weight over head_dim per projection (q_norm, k_norm: Qwen3's RMSNorm),
  // applied to q and k per head before rotation (a parameter-free norm commutes with it)
  bool qk_norm_weight = false;
  double qk_norm_eps = 1e-6;
  double dropout = 0.0;     // on the attention weights, in training
  bool causal = false;      // bottom-right aligned (see ops/attention.h)
  int64_t window = 0;       // sliding window (causal only): a query sees its `window` latest keys, itself included; 0 = all
  std::optional<double> scale{};  // multiplies q k^T; default 1 / sqrt(head_dim)
  // > 0: self-attention mixes a value embedding into v through a ValueEmbeddingGate (ve_gate)
  // reading x's first value_gate_channels channels (nanochat: 12); AttentionInputs::value_embedding
  int64_t value_gate_channels = 0;
  uint64_t seed = 0;        // of the dropout generator
};

// A cross-attention context's keys and values, (B, n_kv_heads, S, head_dim) each, computed once
// (MultiHeadAttention::context_kv).
struct ContextKV {
  Tensor keys, values;
};

// Masks given per call, in the conventions of ops/attention.h: mask bool (true = attend) or
// additive, broadcastable to (B, H, Tq, Tk); key_padding bool (B, Tk), true = real token.
struct AttentionMasks {
  Tensor mask{};
  Tensor key_padding{};
};

// What one attention call reads besides x; every field is optional.
struct AttentionInputs {
  // Cross-attention: keys and values from the context (B, Tk, context_dim); undefined = self-attention.
  Tensor context{};
  // Cross-attention keys and values computed once (context_kv()): a fixed cache read instead of
  // projecting `context` (a decoder generating over a fixed encoder output; inference).
  const ContextKV* context_kv = nullptr;
  AttentionMasks masks{};
  // Query i sits at position q_offset + i; keys at q_offset + j (self) or j (cross).
  int64_t q_offset = 0;
  // Self-attention with KV caches (inference): caches[i] holds the next caches[i].step->batch rows
  // of x, the step's new tokens, which are written into it; each cache's rows attend over its
  // prefix and themselves at its own positions (sequences at different lengths decoded together
  // compute what each computes alone). Positions come from the caches; masks and q_offset are unused.
  std::span<const CachedAttention> caches{};
  // With value_gate_channels: the layer's value embedding of the tokens, (B, Tq, n_kv_heads * head_dim).
  Tensor value_embedding{};
};

// `config` validated (an error naming the field and value) with its defaults filled in: n_kv_heads,
// head_dim, context_dim and output_bias. The one place they are resolved: the module, the count
// below and the models' block configs all call it.
AttentionConfig resolved(const AttentionConfig& config);

// MultiHeadAttention(config)'s num_parameters() without building it: q, k, v, o and their biases,
// and the QK-norm weights; in arithmetic N (int64_t, or long double to bound a config whose count
// might not fit).
template <class N = int64_t>
N attention_parameter_count(const AttentionConfig& config);
// The QK-norm weights among them: 2 head_dim with qk_norm_weight, else 0 (a model counts them as norms).
int64_t qk_norm_parameter_count(const AttentionConfig& config);

class MultiHeadAttention : public Module {
 public:
  // The position scheme is not registered as a child: models share one among layers and own it.
  explicit MultiHeadAttention(const AttentionConfig& config, std::shared_ptr<AttentionPosition> position = nullptr,
                              Generator& gen = default_generator());

  // x (B, Tq, dim) -> (B, Tq, dim), one path for every use:
  //   project q (and k, v unless a fixed cache gives them) -> [learned QK-norm] -> position -> [QK-norm]
  //   -> write k, v into the cache if one is given -> attend -> merge heads -> output projection.
  // With `weights`, the plain kernel runs and *weights receives the attention weights (B, H, Tq, Tk).
  Tensor forward(const Tensor& x, const AttentionInputs& in = {}, Tensor* weights = nullptr);
  // The cross-attention keys and values of a context, (B, n_kv_heads, S, head_dim) each, for
  // AttentionInputs::context_kv. Inference only.
  ContextKV context_kv(const Tensor& context);

  const AttentionConfig& config() const { return config_; }
  std::shared_ptr<Linear> q_proj, k_proj, v_proj, o_proj;
  std::shared_ptr<RMSNorm> q_norm, k_norm;  // qk_norm_weight only: (head_dim) weights
  std::shared_ptr<ValueEmbeddingGate> ve_gate;  // value_gate_channels only

 protected:
  Generator* own_generator() override { return &dropout_gen_; }  // attention-weight dropout

 private:
  // q (B, H, Tq, Dh) and k (B, Hkv, Tk, Dh; may be undefined) at positions q_positions[b].. and
  // k_positions[b].. (one per batch row, or one for all): QK-normed with weights, rotated by the
  // position scheme, or rotated then QK-normed
  std::pair<Tensor, Tensor> positioned(Tensor q, Tensor k, std::span<const int64_t> q_positions,
                                       std::span<const int64_t> k_positions);
  // softmax(scale q k^T + score bias + masks) v of positioned q and k: (B, H, Tq, Dh)
  Tensor attend(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionMasks& masks, int64_t q_position,
                int64_t k_position, Tensor* weights);
  // Each cache's rows of q, k, v (in the caches' order): writes its new k, v into the cache's
  // storage, then every row attends over its own cache's prefix and them: the rows in place, all
  // caches in one call (ops' attention over KV caches), or, where a score bias or q's dtype needs
  // the plain tensors, each cache's read back (a view where the rows are q's dtype).
  Tensor attend_cached(const Tensor& q, const Tensor& k, const Tensor& v, std::span<const CachedAttention> caches);

  AttentionConfig config_;  // n_kv_heads, head_dim and context_dim resolved
  std::shared_ptr<AttentionPosition> position_;
  Generator dropout_gen_;
};

}  // namespace nf::nn
