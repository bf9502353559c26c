// Unary elementwise ops: y = f(x), dx = f'(x) dy.
#include "nanoformer/autograd/node.h"
#include "nanoformer/core/dispatch.h"
#include "nanoformer/core/error.h"
#include "nanoformer/ops/elementwise.h"
#include "ops/cpu/elementwise.h"

namespace nf {
namespace {
using UnaryKernel = void (*)(cpu::UnaryOp, const Tensor&, const Tensor&);
const DeviceKernels<UnaryKernel> kUnary{.cpu = cpu::unary};

Tensor unary_forward(const char* name, cpu::UnaryOp op, const Tensor& x) {
  NF_CHECK(x.defined(), name, ": tensor is undefined");
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  kUnary.get(x.device(), name)(op, out, x);
  return out;
}
}  // namespace

// y = -x;  dx = -dy
Tensor neg(const Tensor& x) {
  Tensor out = unary_forward("neg", cpu::UnaryOp::neg, x);
  autograd::record("neg", out, {x}, [](const Tensor& g, const autograd::Node&) { return std::vector<Tensor>{neg(g)}; });
  return out;
}

}  // namespace nf
