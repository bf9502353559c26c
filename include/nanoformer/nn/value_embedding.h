#pragma once
// Value embeddings (ResFormer's value residual, as nanochat's GPT has them): a layer with one holds
// a second token table whose row for each token is mixed into that layer's attention values through
// a gate per KV head read from the first channels of the attention input x:
//   v = v + range sigmoid(x[..., :channels] W^T) ve(ids)      (W (n_kv_heads, channels), range 3)
// nanochat gives them to alternating layers, the last one always included (value_embedding_layer).
#include <cstdint>
#include <map>
#include <memory>

#include "nanoformer/core/generator.h"
#include "nanoformer/nn/linear.h"
#include "nanoformer/nn/module.h"

namespace nf::nn {

inline constexpr int64_t kValueGateChannels = 12;  // the channels of x a gate reads (nanochat's ve_gate_channels)

// Whether layer `layer` of n_layers has a value embedding: alternating, the last layer included
// (nanochat's has_ve: layer % 2 == (n_layers - 1) % 2).
bool value_embedding_layer(int64_t layer, int64_t n_layers);

// The tables of every layer that has one, children named by layer index ("1", "3", ...), each
// (vocab_size, kv_dim).
class ValueEmbeddings : public Module {
 public:
  ValueEmbeddings(int64_t vocab_size, int64_t kv_dim, int64_t n_layers, Generator& gen = default_generator());
  // ids (B, T) -> (B, T, kv_dim) of layer `layer`, undefined when that layer has none.
  Tensor forward(const Tensor& ids, int64_t layer);
  std::map<int64_t, std::shared_ptr<Embedding>> tables;
};

// The gate of one layer: a parameter `weight` (n_kv_heads, channels).
class ValueEmbeddingGate : public Module {
 public:
  static constexpr double kRange = 3.0;  // the gate is in (0, 3): 1.5 at a zero pre-activation
  ValueEmbeddingGate(int64_t channels, int64_t n_kv_heads, Generator& gen = default_generator());
  // v (B, T, n_kv_heads * head_dim) projected values, x (B, T, >= channels) the attention input,
  // ve (B, T, n_kv_heads * head_dim) -> v + range sigmoid(x[..., :channels] W^T) ve, one gate per head.
  Tensor forward(const Tensor& v, const Tensor& x, const Tensor& ve);
  Tensor weight;

 private:
  int64_t channels_, n_kv_heads_;
};

}  // namespace nf::nn
