// Optimizer: parameter groups, per-parameter state, and the loop every rule shares.
#include "nanoformer/optim/optimizer.h"

#include <cmath>

#include "nanoformer/autograd/grad_mode.h"
#include "nanoformer/core/error.h"
#include "nanoformer/ops/factory.h"
#include "nanoformer/ops/view.h"

namespace nf::optim {

Optimizer::Optimizer(std::vector<ParamGroup> groups) : groups_(std::move(groups)) {
  NF_CHECK(!groups_.empty(), "Optimizer: no parameter groups");
  state_.resize(groups_.size());
  owned_.resize(groups_.size());
  for (size_t g = 0; g < groups_.size(); ++g) {
    ParamGroup& group = groups_[g];
    NF_CHECK(group.lr >= 0, "Optimizer: group ", g, " has lr ", group.lr, ", which must be >= 0");
    NF_CHECK(group.weight_decay >= 0, "Optimizer: group ", g, " has weight_decay ", group.weight_decay,
             ", which must be >= 0");
    NF_CHECK(group.initial_lr >= 0, "Optimizer: group ", g, " has initial_lr ", group.initial_lr,
             ", which must be >= 0");
    if (group.initial_lr == 0) group.initial_lr = group.lr;
    for (size_t i = 0; i < group.params.size(); ++i) {
      const Tensor& p = group.params[i];
      NF_CHECK(p.defined() && p.dtype() == DType::f32 && p.is_contiguous(), "Optimizer: group ", g, " parameter ", i,
               " must be a contiguous f32 tensor");
    }
    state_[g].resize(group.params.size());
    for (const Tensor& p : group.params) owned_[g].emplace_back(0, p.numel());
  }
}

std::string Optimizer::group_label(size_t group) const {
  const std::string& name = groups_.at(group).name;
  return name.empty() ? "group" + std::to_string(group) : name;
}

float* Optimizer::state(size_t group, size_t index, size_t slot) {
  std::vector<Tensor>& slots = state_.at(group).at(index).slots;
  if (slots.size() <= slot) slots.resize(slot + 1);
  if (!slots[slot].defined()) slots[slot] = zeros(slot_shape(group, index));
  return slots[slot].data<float>();
}

void Optimizer::load_param_state(size_t group, size_t index, const ParamState& state) {
  const Tensor& p = groups_.at(group).params.at(index);
  const std::vector<std::string> names = slot_names();
  NF_CHECK(state.step >= 0, kind(), ": ", group_label(group), " parameter ", index, ": step ", state.step,
           " must be >= 0");
  NF_CHECK(state.slots.size() == names.size(), kind(), ": ", group_label(group), " parameter ", index, ": ",
           state.slots.size(), " state buffers given, ", names.size(), " expected");
  ParamState restored{.step = state.step, .slots = {}};
  for (size_t s = 0; s < names.size(); ++s) {
    const Tensor& t = state.slots[s];
    if (!t.defined()) {
      restored.slots.emplace_back();
      continue;
    }
    const Shape expected = slot_shape(group, index);
    NF_CHECK(t.shape() == p.shape() || t.shape() == expected, kind(), ": ", group_label(group), " parameter ", index,
             ": ", names[s], " has shape ", shape_str(t.shape()), ", the parameter ", shape_str(p.shape()),
             is_whole(group, index) ? "" : " (or its owned slice " + shape_str(expected) + ")");
    const auto [begin, end] = owned_[group][index];
    const Tensor kept = t.shape() == expected ? t : narrow(t.reshape({p.numel()}), 0, begin, end - begin);
    restored.slots.push_back(kept.to(DType::f32).clone());
  }
  state_[group][index] = std::move(restored);
}

void Optimizer::step() {
  NoGradGuard no_grad;
  ++steps_;
  for (size_t g = 0; g < groups_.size(); ++g)
    for (size_t i = 0; i < groups_[g].params.size(); ++i) {
      const Tensor& p = groups_[g].params[i];
      const Tensor grad = p.grad();
      if (!grad.defined()) continue;
      const Tensor g32 = grad.to(DType::f32).contiguous();
      ++state_[g][i].step;
      const auto [begin, end] = owned_[g][i];
      if (end > begin) update(g, i, p.data<float>() + begin, g32.data<float>() + begin, end - begin);
    }
}

bool Optimizer::is_whole(size_t group, size_t index) const {
  const auto [begin, end] = owned_.at(group).at(index);
  return begin == 0 && end == groups_[group].params[index].numel();
}

Shape Optimizer::slot_shape(size_t group, size_t index) const {
  if (is_whole(group, index)) return groups_[group].params[index].shape();
  const auto [begin, end] = owned_[group][index];
  return {end - begin};
}

void Optimizer::set_owned_range(size_t group, size_t index, int64_t begin, int64_t end) {
  const Tensor& p = groups_.at(group).params.at(index);
  NF_CHECK(slices(), kind(), ": its update needs whole parameters; it cannot update a slice of one");
  NF_CHECK(is_whole(group, index), kind(), ": ", group_label(group), " parameter ", index, " is already sharded");
  NF_CHECK(0 <= begin && begin <= end && end <= p.numel(), kind(), ": owned range [", begin, ", ", end,
           ") is out of a parameter of ", p.numel(), " values");
  owned_[group][index] = {begin, end};
  for (Tensor& slot : state_[group][index].slots)
    if (slot.defined()) slot = narrow(slot.reshape({p.numel()}), 0, begin, end - begin).clone();
}

void Optimizer::zero_grad() {
  for (const ParamGroup& group : groups_)
    for (const Tensor& p : group.params) p.zero_grad();
}

void Optimizer::set_lr_factor(double factor) {
  NF_CHECK(factor >= 0 && std::isfinite(factor), "Optimizer: lr factor ", factor, " must be finite and >= 0");
  for (ParamGroup& group : groups_) group.lr = group.initial_lr * factor;  // lr = initial_lr x factor
}

}  // namespace nf::optim
