// Optimizer: parameter groups, per-parameter state, and the loop every rule shares.
#include "nanoformer/train/optimizer.h"

#include "nanoformer/autograd/grad_mode.h"
#include "nanoformer/core/error.h"

namespace nf::train {

Optimizer::Optimizer(std::vector<ParamGroup> groups) : groups_(std::move(groups)) {
  NF_CHECK(!groups_.empty(), "Optimizer: no parameter groups");
  state_.resize(groups_.size());
  for (size_t g = 0; g < groups_.size(); ++g) {
    const ParamGroup& group = groups_[g];
    NF_CHECK(group.lr >= 0, "Optimizer: group ", g, " has lr ", group.lr, ", which must be >= 0");
    NF_CHECK(group.weight_decay >= 0, "Optimizer: group ", g, " has weight_decay ", group.weight_decay,
             ", which must be >= 0");
    for (size_t i = 0; i < group.params.size(); ++i) {
      const Tensor& p = group.params[i];
      NF_CHECK(p.defined() && p.dtype() == DType::f32 && p.is_contiguous(), "Optimizer: group ", g, " parameter ", i,
               " must be a contiguous f32 tensor");
    }
    state_[g].resize(group.params.size());
    param_steps_.emplace_back(group.params.size(), 0);
  }
}

float* Optimizer::state(size_t group, size_t index, size_t slot) {
  auto& slots = state_.at(group).at(index);
  if (slots.size() <= slot) slots.resize(slot + 1);
  auto& buffer = slots[slot];
  if (buffer.empty()) buffer.assign(static_cast<size_t>(groups_[group].params[index].numel()), 0.0f);
  return buffer.data();
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
      ++param_steps_[g][i];
      update(g, i, p.data<float>(), g32.data<float>(), p.numel());
    }
}

void Optimizer::zero_grad() {
  for (const ParamGroup& group : groups_)
    for (const Tensor& p : group.params) p.zero_grad();
}

}  // namespace nf::train
