// Gradient-ready hooks, keyed by the leaf's AccumulateGrad node (kept alive by the registry, so
// every backward reaches the same node); one registry per thread.
#include "nanoformer/autograd/grad_ready_hook.h"

#include <unordered_map>
#include <utility>
#include <vector>

#include "nanoformer/autograd/node.h"
#include "nanoformer/core/error.h"

namespace nf::autograd {
namespace {

struct Registered {
  std::shared_ptr<Node> accumulator;
  GradReadyHook hook;
};

std::unordered_map<const Node*, Registered>& registry() {
  static thread_local std::unordered_map<const Node*, Registered> hooks;
  return hooks;
}

std::shared_ptr<Node> leaf_accumulator(const Tensor& leaf) {
  NF_CHECK(leaf.defined() && leaf.requires_grad() && !leaf.grad_fn(),
           "set_grad_ready_hook: the tensor is not a leaf that requires grad");
  return gradient_edge(leaf);
}

}  // namespace

void set_grad_ready_hook(const Tensor& leaf, GradReadyHook hook) {
  std::shared_ptr<Node> accumulator = leaf_accumulator(leaf);
  const Node* key = accumulator.get();
  registry()[key] = Registered{std::move(accumulator), std::move(hook)};
}

void clear_grad_ready_hook(const Tensor& leaf) {
  if (!leaf.defined() || !leaf.requires_grad() || leaf.grad_fn()) return;
  if (const std::shared_ptr<Node> accumulator = leaf.impl()->grad_accumulator.lock())
    registry().erase(accumulator.get());
}

void run_grad_ready_hook(const Node* node) {
  auto& hooks = registry();
  if (hooks.empty()) return;
  if (const auto it = hooks.find(node); it != hooks.end()) it->second.hook();
}

void run_unreachable_grad_ready_hooks(const std::unordered_map<Node*, int>& reachable) {
  auto& hooks = registry();
  if (hooks.empty()) return;
  std::vector<GradReadyHook> unreachable;  // copied first: a hook may set or clear hooks
  for (const auto& [node, registered] : hooks)
    if (!reachable.count(const_cast<Node*>(node))) unreachable.push_back(registered.hook);
  for (const GradReadyHook& hook : unreachable) hook();
}

}  // namespace nf::autograd
