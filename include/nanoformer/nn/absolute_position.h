#pragma once
// Absolute positional encodings, added to the token embeddings x (B, T, D) before the blocks.
// forward(x, offset) places the T tokens at positions offset .. offset + T - 1 (a KV-cache
// decoder passes the number of tokens already seen); forward(x) starts at 0.
#include <cstdint>

#include "nanoformer/core/generator.h"
#include "nanoformer/nn/module.h"

namespace nf::nn {

class AbsolutePosition : public UnaryModule {
 public:
  using UnaryModule::UnaryModule;
  virtual Tensor forward(const Tensor& x, int64_t offset) = 0;
  Tensor forward(const Tensor& x) override { return forward(x, 0); }
  using UnaryModule::operator();
  Tensor operator()(const Tensor& x, int64_t offset) { return forward(x, offset); }
};

// y = x (* sqrt(dim) when scale_input) + pe[offset : offset + T] with
// pe(t, 2i) = sin(t / 10000^(2i/dim)),  pe(t, 2i+1) = cos(t / 10000^(2i/dim)).
// pe is a persistent buffer "pe" of shape (1, max_len, dim), as the reference registers it.
class SinusoidalPosition : public AbsolutePosition {
 public:
  SinusoidalPosition(int64_t dim, int64_t max_len, bool scale_input = false);
  using AbsolutePosition::forward;
  Tensor forward(const Tensor& x, int64_t offset) override;
  Tensor pe;

 private:
  int64_t dim_;
  bool scale_input_;
};

// y = x + weight[offset : offset + T];  weight (max_len, dim) ~ normal(0, 1) (as nn.Embedding),
// named "weight" so a model holding it as "wpe" has PyTorch's "wpe.weight".
class LearnedPosition : public AbsolutePosition {
 public:
  LearnedPosition(int64_t max_len, int64_t dim, Generator& gen = default_generator());
  using AbsolutePosition::forward;
  Tensor forward(const Tensor& x, int64_t offset) override;
  Tensor weight;
};

}  // namespace nf::nn
