#pragma once
// The end-to-end proof of the engine: a 3-layer MLP learns to classify points of interleaved
// spirals (the classic non-linearly-separable toy task), trained with plain full-batch SGD on
// cross-entropy. Everything it touches is engine code: tensors, linear, relu, cross_entropy,
// autograd, seeded generators.
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "nanoformer/core/generator.h"
#include "nanoformer/core/tensor.h"

namespace nf::train {

struct SpiralMlpConfig {
  int64_t classes = 3;
  int64_t points_per_class = 100;
  int64_t hidden = 64;
  int64_t steps = 1000;
  double learning_rate = 0.5;
  uint64_t seed = 0;
};

struct SpiralMlpResult {
  std::vector<double> losses;  // per step, before the update
  double accuracy = 0.0;       // on the training points after the last step
};

// Points (classes * points_per_class, 2) f32 and labels (same count) i64: arm j of the spiral is
// r (sin t, cos t), r in [0, 1], t in [4j, 4j + 4] plus N(0, 0.2) noise.
std::pair<Tensor, Tensor> make_spirals(int64_t points_per_class, int64_t classes, Generator& gen);

// Trains and reports; on_step(step, loss) is called after every step (for progress bars).
SpiralMlpResult train_spiral_mlp(const SpiralMlpConfig& config,
                                 const std::function<void(int64_t, double)>& on_step = {});

}  // namespace nf::train
