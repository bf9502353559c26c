#pragma once
// How a positional scheme acts inside attention. Absolute schemes (sinusoidal, learned) add to the
// token embeddings and are UnaryModules applied before the blocks; relative schemes act on the
// queries and keys (RoPE) or on the scores (ALiBi, T5 bias, Transformer-XL) and implement this
// interface, which the attention module calls without knowing the scheme.
//
// Positions are absolute: query i sits at q_offset + i and key j at k_offset + j, so a KV-cache
// decoder passes the cache length as q_offset and 0 as k_offset.
#include <cstdint>
#include <span>

#include "nanoformer/nn/module.h"

namespace nf::nn {

class AttentionPosition : public Module {
 public:
  using Module::Module;
  // q (B, H, Tq, D), k (B, Hkv, Tk, D) -> rotated copies; the identity unless overridden (RoPE).
  virtual Tensor rotate_queries(const Tensor& q, int64_t q_offset) { return q; }
  virtual Tensor rotate_keys(const Tensor& k, int64_t k_offset) { return k; }
  // The same for the batch rows of a continuous-batching step, each sequence at its own length:
  // row b of q (B, H, Tq, D) or k (B, Hkv, Tk, D) at offsets[b] (offsets.size() == B, or 1: every
  // row at offsets[0]). Row by row
  // through the above unless overridden (RoPE rotates every row in one call).
  virtual Tensor rotate_queries(const Tensor& q, std::span<const int64_t> q_offsets);
  virtual Tensor rotate_keys(const Tensor& k, std::span<const int64_t> k_offsets);
  // Keys (B, Hkv, T, D) rotated for their positions, moved by delta positions (a KV cache's context
  // shift): rotate_keys(k, p) becomes rotate_keys(k, p + delta). The identity unless overridden:
  // the score-bias schemes depend only on the distance between query and key.
  virtual Tensor reposition_keys(const Tensor& k, int64_t delta) { return k; }
  // An additive bias for the scores, broadcastable to (B, H, Tq, Tk), or an undefined tensor when
  // the scheme adds none (RoPE). q and k are the (rotated) queries and keys: Transformer-XL's
  // score depends on them, ALiBi's and T5's do not.
  virtual Tensor score_bias(const Tensor& q, const Tensor& k, int64_t q_offset, int64_t k_offset) { return {}; }
  // Whether score_bias adds a bias (ALiBi, T5, Transformer-XL): a KV cache stored in a type of its own
  // then hands attention its keys as a tensor.
  virtual bool has_score_bias() const { return false; }
};

}  // namespace nf::nn
