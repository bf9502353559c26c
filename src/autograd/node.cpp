#include "nanoformer/autograd/node.h"

#include "nanoformer/autograd/grad_mode.h"
#include "nanoformer/core/error.h"
#include "nanoformer/ops/elementwise.h"
#include "nanoformer/ops/view.h"

namespace nf::autograd {

AccumulateGrad::AccumulateGrad(std::shared_ptr<TensorImpl> leaf)
    : Node("AccumulateGrad"), leaf_(std::move(leaf)) {}

// leaf.grad += grad. The first gradient is adopted when nothing else can see it, else copied, so
// that later in-place accumulation never writes into another tensor's storage.
std::vector<Tensor> AccumulateGrad::apply(const Tensor& grad) {
  Tensor leaf(leaf_);
  Tensor current = leaf.grad();
  if (!current.defined()) {
    leaf.set_grad(owns_its_memory(grad) && grad.offset() == 0 ? grad : clone(grad));
  } else {
    add_(current, grad);
  }
  return {};
}

std::vector<Tensor> FunctionNode::apply(const Tensor& grad_output) {
  NF_CHECK(fn_ != nullptr, "backward through '", name(),
           "' a second time: its saved values were freed by the first backward (pass retain_graph = true)");
  std::vector<Tensor> grads = fn_(grad_output, *this);
  NF_CHECK(grads.size() == next.size(), "backward of '", name(), "' returned ", grads.size(),
           " gradients for ", next.size(), " inputs");
  for (size_t i = 0; i < grads.size(); ++i) {
    if (!needs_input_grad(i) || !grads[i].defined()) continue;
    NF_CHECK(grads[i].shape() == input_shapes[i], "backward of '", name(), "' returned a gradient of shape ",
             shape_str(grads[i].shape()), " for input ", i, " of shape ", shape_str(input_shapes[i]));
    NF_CHECK(grads[i].dtype() == input_dtypes[i], "backward of '", name(), "' returned a ",
             dtype_name(grads[i].dtype()), " gradient for ", dtype_name(input_dtypes[i]), " input ", i);
  }
  return grads;
}

bool owns_its_memory(const Tensor& t) {
  return t.impl_ptr().use_count() == 1 && t.storage().use_count() == 1 && t.is_contiguous();
}

bool needs_record(std::initializer_list<const Tensor*> inputs) {
  if (!grad_enabled()) return false;
  for (const Tensor* t : inputs) {
    if (t->defined() && t->requires_grad()) return true;
  }
  return false;
}

bool needs_record(const std::vector<Tensor>& inputs) {
  if (!grad_enabled()) return false;
  for (const Tensor& t : inputs) {
    if (t.defined() && t.requires_grad()) return true;
  }
  return false;
}

std::shared_ptr<Node> gradient_edge(const Tensor& t) {
  if (!t.defined() || !t.requires_grad()) return nullptr;
  if (t.grad_fn()) return t.grad_fn();
  std::shared_ptr<Node> acc = t.impl()->grad_accumulator.lock();
  if (!acc) {
    acc = std::make_shared<AccumulateGrad>(t.impl_ptr());
    t.impl()->grad_accumulator = acc;
  }
  return acc;
}

void record_node(const char* op, Tensor& output, const std::vector<Tensor>& inputs, BackwardFn backward) {
  if (!needs_record(inputs)) return;
  auto node = std::make_shared<FunctionNode>(op, std::move(backward));
  node->next.reserve(inputs.size());
  for (const Tensor& in : inputs) {
    node->next.push_back(gradient_edge(in));
    node->input_shapes.push_back(in.defined() ? in.shape() : Shape{});
    node->input_dtypes.push_back(in.defined() ? in.dtype() : DType::f32);
  }
  output.impl()->grad_fn = std::move(node);
  output.impl()->requires_grad = true;
}

}  // namespace nf::autograd
