#pragma once
// Optimizers update parameters from their gradients, as torch.optim does, over parameter groups
// that each carry their own learning rate and weight decay (a schedule sets lr = initial_lr x its
// factor between steps). step() skips a parameter without a gradient; zero_grad() drops the
// gradients (PyTorch's set_to_none). The concrete rules live beside their math: sgd.h, adam.h,
// muon.h. The state (per-parameter buffers and step counts) can be read and restored exactly, so a
// checkpoint resumes bit-identically (optimizer_set.h names it).
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "nanoformer/core/tensor.h"

namespace nf::optim {

struct ParamGroup {
  ParamGroup() = default;
  ParamGroup(std::vector<Tensor> params, double lr, double weight_decay = 0.0, std::string name = {})
      : params(std::move(params)), lr(lr), weight_decay(weight_decay), initial_lr(lr), name(std::move(name)) {}

  std::vector<Tensor> params;  // f32 leaves that require grad, each contiguous
  double lr = 1e-3;
  double weight_decay = 0.0;
  double initial_lr = 0.0;     // the lr a schedule scales: lr = initial_lr x factor; 0 = lr at construction
  std::string name;            // a label for messages and state names ("decay", "matrices"); "" = "group<i>"
};

// One parameter's state: its update count and its buffers (slot k holds slot_names()[k]).
struct ParamState {
  int64_t step = 0;             // updates this parameter has had (torch's state["step"])
  std::vector<Tensor> slots;    // f32, the parameter's shape; undefined until first used (= zeros)
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
  // Every group: lr = initial_lr x factor (factor >= 0, from a schedule).
  void set_lr_factor(double factor);

  std::vector<ParamGroup>& groups() { return groups_; }
  const std::vector<ParamGroup>& groups() const { return groups_; }
  // The group's label: its name, or "group<i>" when it has none.
  std::string group_label(size_t group) const;
  // Steps taken so far.
  int64_t steps() const { return steps_; }

  // ---- state, for checkpoints ----
  // The kind of rule ("sgd", "adam", "adamw", "muon") and the names of its per-parameter buffers,
  // as torch.optim names them ("momentum_buffer"; "exp_avg", "exp_avg_sq").
  virtual std::string kind() const = 0;
  virtual std::vector<std::string> slot_names() const = 0;
  const ParamState& param_state(size_t group, size_t index) const { return state_.at(group).at(index); }
  // Replaces a parameter's state: `state.slots` holds one tensor per slot name, each of the
  // parameter's shape (copied; an undefined one means zeros). Throws nf::Error naming the
  // parameter and the slot at fault.
  // A sharded parameter (below) also takes 1-D slots of its range's length, and cuts full ones.
  void load_param_state(size_t group, size_t index, const ParamState& state);
  void set_steps(int64_t steps) { steps_ = steps; }

  // ---- sharding (ZeRO-1, optim/zero_sharding.h) ----
  // This process updates elements [begin, end) of the parameter (flattened) only and holds state
  // for those alone: its slots become 1-D tensors of end - begin values (held ones are cut to the
  // range). The step counts still advance on every step. Only for element-wise rules (slices() true).
  void set_owned_range(size_t group, size_t index, int64_t begin, int64_t end);
  std::pair<int64_t, int64_t> owned_range(size_t group, size_t index) const { return owned_.at(group).at(index); }
  // True when update() is element-wise, so that a slice of a parameter can be updated alone.
  virtual bool slices() const { return true; }

 protected:
  // Updates parameter `index` of groups()[group] in place: p, g and the state are its n floats.
  virtual void update(size_t group, size_t index, float* p, const float* g, int64_t n) = 0;
  // The per-parameter buffer of `slot`, zero at first; stable across steps.
  float* state(size_t group, size_t index, size_t slot);
  // How many updates this parameter has had, this one included (torch's per-parameter state["step"]).
  int64_t param_step(size_t group, size_t index) const { return state_.at(group).at(index).step; }

 private:
  std::vector<ParamGroup> groups_;
  bool is_whole(size_t group, size_t index) const;
  Shape slot_shape(size_t group, size_t index) const;

  std::vector<std::vector<ParamState>> state_;  // state_[group][index]
  std::vector<std::vector<std::pair<int64_t, int64_t>>> owned_;  // [group][index]: elements updated here
  int64_t steps_ = 0;
};

}  // namespace nf::optim
