#pragma once
// Backout (nanochat's GPT): before the final norm, a learned multiple of the residual stream as it
// left the middle layer (n_layers / 2) is subtracted, removing low-level features from the head's input:
//   x = x - lambda x_mid
// Parameter: lambda (1).
#include "nanoformer/nn/module.h"

namespace nf::nn {

class Backout : public Module {
 public:
  Backout();  // lambda = 0.2, nanochat's init
  // x, mid (B, T, dim) -> x - lambda mid
  Tensor forward(const Tensor& x, const Tensor& mid);
  Tensor lambda;
};

}  // namespace nf::nn
