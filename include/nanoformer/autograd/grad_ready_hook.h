#pragma once
// A leaf's "gradient ready" hook: the engine calls it during backward once no node still pending
// can add to that leaf's gradient (its AccumulateGrad has run, or was reached without a gradient),
// so that work on the gradient (a data-parallel all-reduce, dist/gradient_buckets.h) can start
// while the rest of backward still runs. Unused, it costs one empty-map check per node.
#include <functional>

#include "nanoformer/core/tensor.h"

namespace nf::autograd {

using GradReadyHook = std::function<void()>;

// Calls `hook` in every later backward that reaches `leaf` (a tensor that requires grad and has
// no grad_fn); replaces an earlier hook of the leaf. Throws nf::Error for a non-leaf.
void set_grad_ready_hook(const Tensor& leaf, GradReadyHook hook);
// Removes the leaf's hook (nothing when it has none).
void clear_grad_ready_hook(const Tensor& leaf);

class Node;
// The engine's side: runs the hook registered for `node`, if any.
void run_grad_ready_hook(const Node* node);

}  // namespace nf::autograd
