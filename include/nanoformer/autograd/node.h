#pragma once
// The autograd graph. Every recorded op result owns a Node (its grad_fn) that knows how to turn the
// gradient of that result into gradients of the op's inputs, and points to the inputs' own nodes
// (`next`): the producing op's node for intermediate tensors, an AccumulateGrad for leaves.
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "nanoformer/autograd/grad_mode.h"
#include "nanoformer/core/tensor.h"

namespace nf::autograd {

class Node {
 public:
  explicit Node(std::string name) : name_(std::move(name)) {}
  virtual ~Node() = default;

  // Gradient of the output -> one gradient per input (undefined where not needed).
  virtual std::vector<Tensor> apply(const Tensor& grad_output) = 0;
  // Drops saved tensors once backward has used them (the graph is freed after backward).
  virtual void release() {}

  const std::string& name() const { return name_; }
  bool needs_input_grad(size_t i) const { return i < next.size() && next[i] != nullptr; }

  std::vector<std::shared_ptr<Node>> next;  // per input; null where no gradient flows
  std::vector<Shape> input_shapes;          // per input, to validate what apply() returns
  std::vector<DType> input_dtypes;

 private:
  std::string name_;
};

// Sink for a leaf tensor: adds the incoming gradient into leaf.grad.
class AccumulateGrad : public Node {
 public:
  explicit AccumulateGrad(std::shared_ptr<TensorImpl> leaf);
  std::vector<Tensor> apply(const Tensor& grad_output) override;

 private:
  std::shared_ptr<TensorImpl> leaf_;
};

// The backward of an op, written as a lambda that captures what it saved from forward:
//   (grad_output, needs_input_grad) -> {grad_input_0, grad_input_1, ...}
using BackwardFn = std::function<std::vector<Tensor>(const Tensor& grad_output, const Node& node)>;

class FunctionNode : public Node {
 public:
  FunctionNode(std::string name, BackwardFn fn) : Node(std::move(name)), fn_(std::move(fn)) {}
  std::vector<Tensor> apply(const Tensor& grad_output) override;
  void release() override { fn_ = nullptr; }

 private:
  BackwardFn fn_;
};

// True when `t` is the only handle on its memory (no other tensor or view shares the storage) and
// contiguous: a gradient the engine may update in place, or a leaf may adopt.
bool owns_its_memory(const Tensor& t);

// True when grad mode is on and any input requires grad: the op must record.
bool needs_record(std::initializer_list<const Tensor*> inputs);
bool needs_record(const std::vector<Tensor>& inputs);

// Attaches a FunctionNode named `op` to `output` when needs_record(inputs). The backward lambda
// must not capture `output` itself (that would be a cycle); capture output.detach() instead.
void record_node(const char* op, Tensor& output, const std::vector<Tensor>& inputs, BackwardFn backward);
// The same, the backward made a BackwardFn (and the inputs a vector) only when the op records: an
// op under no_grad, as in inference, allocates nothing for its history.
template <class Backward>
void record(const char* op, Tensor& output, std::initializer_list<Tensor> inputs, Backward&& backward) {
  if (!grad_enabled()) return;
  for (const Tensor& t : inputs)
    if (t.defined() && t.requires_grad())
      return record_node(op, output, std::vector<Tensor>(inputs), BackwardFn(std::forward<Backward>(backward)));
}
template <class Backward>
void record(const char* op, Tensor& output, const std::vector<Tensor>& inputs, Backward&& backward) {
  if (needs_record(inputs)) record_node(op, output, inputs, BackwardFn(std::forward<Backward>(backward)));
}

// The node through which gradient reaches `t`: its grad_fn, or its leaf accumulator, or null.
std::shared_ptr<Node> gradient_edge(const Tensor& t);

// Runs backward from `root` with upstream gradient `grad` (see Tensor::backward).
void run_backward(const Tensor& root, const Tensor& grad, bool retain_graph);

}  // namespace nf::autograd
