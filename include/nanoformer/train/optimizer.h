#pragma once
// Optimizers update parameters from their gradients, as torch.optim does, over parameter groups
// that each carry their own learning rate and weight decay (a schedule changes a group's lr
// between steps). step() skips a parameter without a gradient; zero_grad() drops the gradients
// (PyTorch's set_to_none). The concrete rules live beside their math: sgd.h, adam.h.
#include <cstdint>
#include <vector>

#include "nanoformer/core/tensor.h"

namespace nf::train {

struct ParamGroup {
  std::vector<Tensor> params;  // f32 leaves that require grad, each contiguous
  double lr = 1e-3;
  double weight_decay = 0.0;
};

class Optimizer {
 public:
  // Throws nf::Error naming a group whose parameter is not a contiguous f32 tensor, or whose lr or
  // weight_decay is negative.
  explicit Optimizer(std::vector<ParamGroup> groups);
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // One update of every parameter that has a gradient (under no-grad).
  void step();
  void zero_grad();

  std::vector<ParamGroup>& groups() { return groups_; }
  const std::vector<ParamGroup>& groups() const { return groups_; }
  // Steps taken so far (Adam's bias corrections use it).
  int64_t steps() const { return steps_; }

 protected:
  // Updates parameter `index` of groups()[group] in place: p, g and the state are its n floats.
  virtual void update(size_t group, size_t index, float* p, const float* g, int64_t n) = 0;
  // A per-parameter state buffer of the parameter's size, zero at first, named by slot
  // (momentum, first moment, ...); stable across steps.
  float* state(size_t group, size_t index, size_t slot);
  // How many updates this parameter has had, this one included (torch's per-parameter state["step"]).
  int64_t param_step(size_t group, size_t index) const { return param_steps_.at(group).at(index); }

 private:
  std::vector<ParamGroup> groups_;
  // state_[group][index][slot]
  std::vector<std::vector<std::vector<std::vector<float>>>> state_;
  std::vector<std::vector<int64_t>> param_steps_;
  int64_t steps_ = 0;
};

}  // namespace nf::train
