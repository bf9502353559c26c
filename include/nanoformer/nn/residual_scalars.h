#pragma once
// Per-layer residual scalars (nanochat's GPT, after modded-nanogpt): before layer i the residual
// stream is rescaled and the embedding output x0 mixed back in:
//   x = resid_lambdas[i] x + x0_lambdas[i] x0
// Parameters: resid_lambdas (n_layers), x0_lambdas (n_layers).
#include <cstdint>

#include "nanoformer/nn/module.h"

namespace nf::nn {

class ResidualScalars : public Module {
 public:
  // nanochat's init: resid 1.15 - 0.10 i / (n - 1), x0 0.20 - 0.15 i / (n - 1).
  explicit ResidualScalars(int64_t n_layers);
  // x, x0 (B, T, dim) -> resid_lambdas[layer] x + x0_lambdas[layer] x0
  Tensor forward(const Tensor& x, const Tensor& x0, int64_t layer);
  Tensor resid_lambdas, x0_lambdas;
};

}  // namespace nf::nn
