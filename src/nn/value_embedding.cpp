// Value embeddings and their gate: v + 3 sigmoid(x[..., :channels] W^T) ve (see value_embedding.h).
#include "nanoformer/nn/value_embedding.h"

#include <cmath>
#include <string>

#include "nanoformer/core/error.h"
#include "nanoformer/ops/elementwise.h"
#include "nanoformer/ops/factory.h"
#include "nanoformer/ops/matmul.h"
#include "nanoformer/ops/view.h"

namespace nf::nn {

bool value_embedding_layer(int64_t layer, int64_t n_layers) { return layer % 2 == (n_layers - 1) % 2; }

ValueEmbeddings::ValueEmbeddings(int64_t vocab_size, int64_t kv_dim, int64_t n_layers, Generator& gen)
    : Module("ValueEmbeddings") {
  for (int64_t l = 0; l < n_layers; ++l)
    if (value_embedding_layer(l, n_layers))
      tables[l] = register_module(std::to_string(l), std::make_shared<Embedding>(vocab_size, kv_dim, gen));
}

Tensor ValueEmbeddings::forward(const Tensor& ids, int64_t layer) {
  const auto it = tables.find(layer);
  return it == tables.end() ? Tensor() : it->second->forward(ids);
}

ValueEmbeddingGate::ValueEmbeddingGate(int64_t channels, int64_t n_kv_heads, Generator& gen)
    : Module("ValueEmbeddingGate"), channels_(channels), n_kv_heads_(n_kv_heads) {
  NF_CHECK(channels > 0 && n_kv_heads > 0, "ValueEmbeddingGate: channels and n_kv_heads must be positive, got ",
           channels, " and ", n_kv_heads);
  weight = register_parameter("weight", uniform({n_kv_heads, channels}, 0.0, 0.02, gen));  // nanochat's init
}

Tensor ValueEmbeddingGate::forward(const Tensor& v, const Tensor& x, const Tensor& ve) {
  NF_CHECK(v.dim() == 3 && ve.shape() == v.shape() && v.size(2) % n_kv_heads_ == 0,
           "ValueEmbeddingGate: v ", shape_str(v.shape()), " and ve ", shape_str(ve.shape()),
           " must both be (B, T, n_kv_heads = ", n_kv_heads_, " * head_dim)");
  NF_CHECK(x.dim() == 3 && x.size(0) == v.size(0) && x.size(1) == v.size(1) && x.size(2) >= channels_,
           "ValueEmbeddingGate: x ", shape_str(x.shape()), " must be (B, T, >= ", channels_, " channels)");
  const int64_t B = v.size(0), T = v.size(1), D = v.size(2) / n_kv_heads_;
  // gate = range sigmoid(x[..., :channels] W^T): (B, T, Hkv, 1), broadcast over each head's D values
  const Tensor gate = sigmoid(linear(narrow(x, 2, 0, channels_), weight)) * kRange;
  return v + (unsqueeze(gate, 3) * ve.reshape({B, T, n_kv_heads_, D})).reshape({B, T, n_kv_heads_ * D});
}

}  // namespace nf::nn
