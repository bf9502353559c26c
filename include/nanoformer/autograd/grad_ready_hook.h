#pragma once
// A leaf's "gradient ready" hook: the engine calls it during backward once no node still pending
// can add to that leaf's gradient (its AccumulateGrad has run, or was reached without a gradient),
// so that work on the gradient (a data-parallel all-reduce, dist/gradient_buckets.h) can start
// while the rest of backward still runs. A leaf that the backward cannot reach at all (an expert
// that got no tokens, an unused branch) is final from the start: its hook runs before any node.
// So every hooked leaf's hook runs exactly once per backward. Hooks belong to the thread that set
// them (as grad mode does): a backward runs the hooks its own thread registered. Unused, they
// cost one empty-map check per node.
#include <functional>
#include <unordered_map>

#include "nanoformer/core/tensor.h"

namespace nf::autograd {

using GradReadyHook = std::function<void()>;

// Calls `hook` once in every later backward on this thread (a tensor that requires grad and has no
// grad_fn); replaces an earlier hook of the leaf. Throws nf::Error for a non-leaf.
void set_grad_ready_hook(const Tensor& leaf, GradReadyHook hook);
// Removes the leaf's hook (nothing when it has none).
void clear_grad_ready_hook(const Tensor& leaf);

class Node;
// The engine's side: runs the hook registered for `node`, if any ...
void run_grad_ready_hook(const Node* node);
// ... and, as a backward starts, the hooks of leaves it cannot reach (`reachable`: the nodes it
// will run, as counted from its root).
void run_unreachable_grad_ready_hooks(const std::unordered_map<Node*, int>& reachable);

}  // namespace nf::autograd
