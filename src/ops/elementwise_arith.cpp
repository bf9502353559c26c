// Broadcasting binary arithmetic: add, sub, mul, div, pow, maximum, minimum (tensor and scalar
// operands), their backward reduced back to each operand's shape with sum_to (the adjoint of
// broadcasting), and the in-place updates used by optimizers and initialisers.
#include "nanoformer/autograd/grad_mode.h"
#include "nanoformer/autograd/node.h"
#include "nanoformer/core/dispatch.h"
#include "nanoformer/core/error.h"
#include "nanoformer/ops/elementwise.h"
#include "nanoformer/ops/reduce.h"
#include "nanoformer/ops/view.h"
#include "ops/cpu/elementwise.h"
#include "ops/elementwise_internal.h"

namespace nf {
namespace {

using BinaryKernel = void (*)(BinaryOp, const Tensor&, const Tensor&, const Tensor&);
using BinaryBackwardKernel = void (*)(BinaryBackwardOp, const Tensor&, const Tensor&, const Tensor&, const Tensor&);
using PowScalarKernel = void (*)(const Tensor& out, const Tensor& x, double exponent);
using PowScalarBackwardKernel = void (*)(const Tensor& dx, const Tensor& dy, const Tensor& x, double exponent);
const DeviceKernels<BinaryKernel> kBinary{.cpu = cpu::binary};
const DeviceKernels<BinaryBackwardKernel> kBinaryBackward{.cpu = cpu::binary_backward};
const DeviceKernels<PowScalarKernel> kPowScalar{.cpu = cpu::pow_scalar};
const DeviceKernels<PowScalarBackwardKernel> kPowScalarBackward{.cpu = cpu::pow_scalar_backward};

}  // namespace

void check_binary_operands(const char* op, const Tensor& a, const Tensor& b) {
  NF_CHECK(a.defined() && b.defined(), op, ": operand is undefined");
  NF_CHECK(a.dtype() == b.dtype(), op, ": dtypes differ: a ", dtype_name(a.dtype()), " ", shape_str(a.shape()),
           " and b ", dtype_name(b.dtype()), " ", shape_str(b.shape()));
  NF_CHECK(a.device() == b.device(), op, ": devices differ: a on ", a.device().str(), ", b on ", b.device().str());
}

void check_floating(const char* op, const Tensor& x) {
  NF_CHECK(x.defined(), op, ": tensor is undefined");
  NF_CHECK(x.dtype() == DType::f32 || x.dtype() == DType::f64, op, ": dtype ", dtype_name(x.dtype()), " of shape ",
           shape_str(x.shape()), " is not supported (expects f32 or f64)");
}

// Shared by every broadcasting binary op: checks, allocates the broadcast result, runs the kernel.
Tensor binary_forward(const char* name, BinaryOp op, const Tensor& a, const Tensor& b) {
  check_binary_operands(name, a, b);
  const Shape shape = broadcast_shapes(a.shape(), b.shape(), name);
  Tensor out = Tensor::empty(shape, a.dtype(), a.device());
  kBinary.get(a.device(), name)(op, out, a, b);
  return out;
}

Tensor binary_backward(const char* name, BinaryBackwardOp op, const Tensor& g, const Tensor& a, const Tensor& b) {
  Tensor d = Tensor::empty(g.shape(), g.dtype(), g.device());
  kBinaryBackward.get(g.device(), name)(op, d, g, a, b);
  return d;
}

// Records a backward whose two gradients are fused kernels of (g, a, b), each summed back over
// broadcasting to its operand's shape: da = sum_to(f_a(g, a, b)), db = sum_to(f_b(g, a, b)).
namespace {
void record_binary_backward(const char* name, Tensor& out, const Tensor& a, const Tensor& b, BinaryBackwardOp da,
                            BinaryBackwardOp db) {
  autograd::record(name, out, {a, b}, [=, a = a.detach(), b = b.detach()](const Tensor& g, const autograd::Node& n) {
    return std::vector<Tensor>{n.needs_input_grad(0) ? sum_to(binary_backward(name, da, g, a, b), a.shape()) : Tensor(),
                               n.needs_input_grad(1) ? sum_to(binary_backward(name, db, g, a, b), b.shape()) : Tensor()};
  });
}
}  // namespace

Tensor add(const Tensor& a, const Tensor& b) {
  Tensor out = binary_forward("add", BinaryOp::add, a, b);
  // d(a + b) = da + db
  autograd::record("add", out, {a, b}, [sa = a.shape(), sb = b.shape()](const Tensor& g, const autograd::Node& n) {
    return std::vector<Tensor>{n.needs_input_grad(0) ? sum_to(g, sa) : Tensor(),
                               n.needs_input_grad(1) ? sum_to(g, sb) : Tensor()};
  });
  return out;
}

Tensor sub(const Tensor& a, const Tensor& b) {
  Tensor out = binary_forward("sub", BinaryOp::sub, a, b);
  // d(a - b) = da - db
  autograd::record("sub", out, {a, b}, [sa = a.shape(), sb = b.shape()](const Tensor& g, const autograd::Node& n) {
    return std::vector<Tensor>{n.needs_input_grad(0) ? sum_to(g, sa) : Tensor(),
                               n.needs_input_grad(1) ? sum_to(neg(g), sb) : Tensor()};
  });
  return out;
}

Tensor mul(const Tensor& a, const Tensor& b) {
  Tensor out = binary_forward("mul", BinaryOp::mul, a, b);
  // d(a b) = b da + a db
  autograd::record("mul", out, {a, b}, [a = a.detach(), b = b.detach()](const Tensor& g, const autograd::Node& n) {
    return std::vector<Tensor>{n.needs_input_grad(0) ? sum_to(mul(g, b), a.shape()) : Tensor(),
                               n.needs_input_grad(1) ? sum_to(mul(g, a), b.shape()) : Tensor()};
  });
  return out;
}

Tensor div(const Tensor& a, const Tensor& b) {
  NF_CHECK(!a.defined() || is_floating(a.dtype()), "div: integer dtype ", dtype_name(a.dtype()),
           " (convert to a floating dtype first)");
  Tensor out = binary_forward("div", BinaryOp::div, a, b);
  // d(a / b) = da / b - (a / b^2) db = (da - out db) / b
  autograd::record("div", out, {a, b},
                   [out = out.detach(), b = b.detach(), sa = a.shape()](const Tensor& g, const autograd::Node& n) {
                     const Tensor g_over_b = div(g, b);
                     return std::vector<Tensor>{
                         n.needs_input_grad(0) ? sum_to(g_over_b, sa) : Tensor(),
                         n.needs_input_grad(1) ? sum_to(neg(mul(g_over_b, out)), b.shape()) : Tensor()};
                   });
  return out;
}

// d(a^b) = b a^(b-1) da + a^b ln(a) db; as PyTorch, the da term is 0 where b == 0 and the db
// term is 0 where a == 0 and b >= 0 (instead of 0 * inf)
Tensor pow(const Tensor& a, const Tensor& b) {
  check_floating("pow", a);
  Tensor out = binary_forward("pow", BinaryOp::pow, a, b);
  record_binary_backward("pow", out, a, b, BinaryBackwardOp::pow_base, BinaryBackwardOp::pow_exponent);
  return out;
}

// d max(a, b) = da where a > b, db where b > a, (da + db) / 2 on ties (PyTorch's split)
Tensor maximum(const Tensor& a, const Tensor& b) {
  Tensor out = binary_forward("maximum", BinaryOp::maximum, a, b);
  record_binary_backward("maximum", out, a, b, BinaryBackwardOp::maximum_a, BinaryBackwardOp::maximum_b);
  return out;
}

// d min(a, b) = da where a < b, db where b < a, (da + db) / 2 on ties
Tensor minimum(const Tensor& a, const Tensor& b) {
  Tensor out = binary_forward("minimum", BinaryOp::minimum, a, b);
  record_binary_backward("minimum", out, a, b, BinaryBackwardOp::minimum_a, BinaryBackwardOp::minimum_b);
  return out;
}

// d(x^p) = p x^(p-1) dx (0 when p == 0)
Tensor pow(const Tensor& a, double exponent) {
  check_floating("pow", a);
  Tensor out = Tensor::empty(a.shape(), a.dtype(), a.device());
  kPowScalar.get(a.device(), "pow")(out, a, exponent);
  autograd::record("pow", out, {a}, [a = a.detach(), exponent](const Tensor& g, const autograd::Node&) {
    Tensor dx = Tensor::empty(a.shape(), a.dtype(), a.device());
    kPowScalarBackward.get(a.device(), "pow")(dx, g, a, exponent);
    return std::vector<Tensor>{dx};
  });
  return out;
}

// Scalar operands become 0-dim tensors of the other operand's dtype (they broadcast for free).
Tensor add(const Tensor& a, double b) { return add(a, Tensor::scalar(b, a.dtype())); }
Tensor sub(const Tensor& a, double b) { return sub(a, Tensor::scalar(b, a.dtype())); }
Tensor sub(double a, const Tensor& b) { return sub(Tensor::scalar(a, b.dtype()), b); }
Tensor mul(const Tensor& a, double b) { return mul(a, Tensor::scalar(b, a.dtype())); }
Tensor div(const Tensor& a, double b) { return div(a, Tensor::scalar(b, a.dtype())); }
Tensor div(double a, const Tensor& b) { return div(Tensor::scalar(a, b.dtype()), b); }

// ---- in place (no autograd) ----

namespace {
void check_in_place(const char* op, const Tensor& x) {
  NF_CHECK(x.defined(), op, ": tensor is undefined");
  NF_CHECK(!(autograd::grad_enabled() && x.requires_grad()), op, ": in-place update of a tensor",
           x.name().empty() ? "" : " '" + x.name() + "'",
           " that requires grad while grad mode is on (wrap the update in NoGradGuard)");
}
}  // namespace

void add_(const Tensor& x, const Tensor& y, double alpha) {
  check_in_place("add_", x);
  check_binary_operands("add_", x, y);
  NF_CHECK(broadcast_shapes(x.shape(), y.shape(), "add_") == x.shape(), "add_: shape ", shape_str(y.shape()),
           " does not broadcast to the updated tensor's shape ", shape_str(x.shape()));
  const Tensor scaled = alpha == 1.0 ? y : binary_forward("add_", BinaryOp::mul, y, Tensor::scalar(alpha, y.dtype()));
  kBinary.get(x.device(), "add_")(BinaryOp::add, x, x, scaled);
}

void mul_(const Tensor& x, double value) {
  check_in_place("mul_", x);
  kBinary.get(x.device(), "mul_")(BinaryOp::mul, x, x, Tensor::scalar(value, x.dtype()));
}

}  // namespace nf
