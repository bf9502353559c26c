#pragma once
// Stochastic gradient descent with momentum, dampening and Nesterov, as torch.optim.SGD:
//   g = grad + weight_decay p
//   b = g at the first step, else b = momentum b + (1 - dampening) g        (momentum > 0)
//   g = g + momentum b (Nesterov) or g = b
//   p = p - lr g
#include "nanoformer/optim/optimizer.h"

namespace nf::optim {

struct SGDOptions {
  double momentum = 0.0;
  double dampening = 0.0;
  bool nesterov = false;  // needs momentum > 0 and dampening 0, as PyTorch
};

class SGD : public Optimizer {
 public:
  SGD(std::vector<ParamGroup> groups, const SGDOptions& options = {});
  std::string kind() const override { return "sgd"; }
  // "momentum_buffer" with momentum, none without.
  std::vector<std::string> slot_names() const override;

 private:
  void update(size_t group, size_t index, float* p, const float* g, int64_t n) override;
  SGDOptions options_;
};

}  // namespace nf::optim
