// The backward pass: gradients flow from the root through the graph of Nodes in reverse
// topological order, so a node runs only after every consumer of its output has added its part.
#include <unordered_map>
#include <unordered_set>

#include "nanoformer/autograd/grad_mode.h"
#include "nanoformer/autograd/grad_ready_hook.h"
#include "nanoformer/autograd/node.h"
#include "nanoformer/core/error.h"
#include "nanoformer/core/profile.h"
#include "nanoformer/ops/elementwise.h"
#include "nanoformer/ops/factory.h"

namespace nf::autograd {
namespace {

// Number of edges into each node reachable from `root` (Kahn's algorithm runs a node when its
// count drops to zero).
std::unordered_map<Node*, int> count_dependencies(const std::shared_ptr<Node>& root) {
  std::unordered_map<Node*, int> deps;
  std::unordered_set<Node*> seen{root.get()};
  std::vector<Node*> stack{root.get()};
  while (!stack.empty()) {
    Node* node = stack.back();
    stack.pop_back();
    for (const auto& next : node->next) {
      if (!next) continue;
      ++deps[next.get()];
      if (seen.insert(next.get()).second) stack.push_back(next.get());
    }
  }
  return deps;
}

// slot += g. The sum so far is updated in place when nothing else can see its memory (no copy, no
// new buffer); a gradient another node also returned (an add's backward passes its g to both
// inputs) is summed into a new tensor.
void accumulate(Tensor& slot, const Tensor& g) {
  if (!slot.defined()) {
    slot = g;
  } else if (owns_its_memory(slot)) {
    add_(slot, g);
  } else {
    slot = add(slot, g);
  }
}

}  // namespace

void run_backward(const Tensor& root, const Tensor& grad, bool retain_graph) {
  NF_CHECK(root.requires_grad(), "backward: the tensor does not require grad (no input of its graph had "
           "requires_grad set, or it was computed under NoGradGuard)");
  Tensor seed = grad;
  if (!seed.defined()) {
    NF_CHECK(root.numel() == 1, "backward: a gradient can be implied only for a one-element tensor; this one has shape ",
             shape_str(root.shape()), " (pass the upstream gradient)");
    seed = ones_like(root);
  }
  NF_CHECK(seed.shape() == root.shape(), "backward: upstream gradient of shape ", shape_str(seed.shape()),
           " for a tensor of shape ", shape_str(root.shape()));
  NF_CHECK(seed.dtype() == root.dtype(), "backward: upstream gradient of dtype ", dtype_name(seed.dtype()),
           " for a tensor of dtype ", dtype_name(root.dtype()));

  NoGradGuard no_grad;  // backward formulas are not themselves recorded
  profile::BackwardPhase backward_phase;  // kernels profile as "<op> backward"
  std::shared_ptr<Node> root_node = gradient_edge(root);
  std::unordered_map<Node*, int> deps = count_dependencies(root_node);
  deps.emplace(root_node.get(), 0);  // the root is reachable too (it may be a leaf itself)
  run_unreachable_grad_ready_hooks(deps);  // a leaf this backward cannot reach is final already
  std::unordered_map<Node*, Tensor> pending;  // summed gradient waiting for each node
  pending[root_node.get()] = seed;
  std::vector<std::shared_ptr<Node>> ready{root_node};
  // Ready leaf accumulators (nodes with no inputs) run before anything else, so that a leaf's
  // gradient is final, and its gradient-ready hook runs, as early as possible.
  std::vector<std::shared_ptr<Node>> ready_sinks;

  while (!ready.empty() || !ready_sinks.empty()) {
    std::vector<std::shared_ptr<Node>>& from = ready_sinks.empty() ? ready : ready_sinks;
    std::shared_ptr<Node> node = std::move(from.back());
    from.pop_back();
    Tensor g;
    if (auto it = pending.find(node.get()); it != pending.end()) {
      g = std::move(it->second);
      pending.erase(it);
    }
    std::vector<Tensor> grads;
    if (g.defined()) grads = node->apply(g);
    run_grad_ready_hook(node.get());  // a leaf's gradient is final once its accumulator ran
    for (size_t i = 0; i < node->next.size(); ++i) {
      const std::shared_ptr<Node>& next = node->next[i];
      if (!next) continue;
      if (i < grads.size() && grads[i].defined()) {
        accumulate(pending[next.get()], grads[i]);
      }
      if (--deps[next.get()] == 0) (next->next.empty() ? ready_sinks : ready).push_back(next);
    }
    if (!retain_graph) {
      node->release();
      node->next.clear();
    }
  }
}

}  // namespace nf::autograd
