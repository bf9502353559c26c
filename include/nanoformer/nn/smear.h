#pragma once
// Smear (nanochat's GPT, after modded-nanogpt): each position's embedding takes in the previous
// position's through a learned scalar times a gate read from its own first channels:
//   y_t = x_t + lambda sigmoid(x_t[:channels] . w) x_{t-1}      (y_0 = x_0 with no previous token)
// Parameters: gate_weight (1, channels), lambda (1).
#include <cstdint>

#include "nanoformer/core/generator.h"
#include "nanoformer/nn/module.h"

namespace nf::nn {

class Smear : public Module {
 public:
  static constexpr int64_t kChannels = 24;  // nanochat's smear_gate reads x[..., :24]
  explicit Smear(int64_t dim, Generator& gen = default_generator());
  // x (B, T, dim) -> (B, T, dim). previous (B, 1, dim): the embedding of the token before x[:, 0]
  // (a cached forward continuing a sequence), or undefined when x starts the sequence.
  Tensor forward(const Tensor& x, const Tensor& previous = {});
  Tensor gate_weight, lambda;

 private:
  int64_t dim_;
};

}  // namespace nf::nn
