// Unary math: y = f(x), dx = f'(x) dy, the backward a fused kernel (one pass over memory).
// (Activations: elementwise_activation.cpp.)
#include <cmath>
#include <limits>

#include "nanoformer/autograd/node.h"
#include "nanoformer/core/dispatch.h"
#include "nanoformer/core/error.h"
#include "nanoformer/ops/elementwise.h"
#include "ops/cpu/elementwise.h"
#include "ops/elementwise_internal.h"

namespace nf {
namespace {
using UnaryKernel = void (*)(UnaryOp, const Tensor&, const Tensor&);
using UnaryBackwardKernel = void (*)(UnaryBackwardOp, const Tensor& dx, const Tensor& dy, const Tensor& saved);
using ClampKernel = void (*)(const Tensor& out, const Tensor& x, double lo, double hi);
using ClampBackwardKernel = void (*)(const Tensor& dx, const Tensor& dy, const Tensor& x, double lo, double hi);
const DeviceKernels<UnaryKernel> kUnary{.cpu = cpu::unary};
const DeviceKernels<UnaryBackwardKernel> kUnaryBackward{.cpu = cpu::unary_backward};
const DeviceKernels<ClampKernel> kClamp{.cpu = cpu::clamp};
const DeviceKernels<ClampBackwardKernel> kClampBackward{.cpu = cpu::clamp_backward};
}  // namespace

Tensor unary_forward(const char* name, UnaryOp op, const Tensor& x) {
  NF_CHECK(x.defined(), name, ": tensor is undefined");
  if (op != UnaryOp::neg && op != UnaryOp::abs) check_floating(name, x);
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  kUnary.get(x.device(), name)(op, out, x);
  return out;
}

void record_unary(const char* name, Tensor& y, const Tensor& x, UnaryBackwardOp op, const Tensor& saved) {
  if (!autograd::needs_record({&x})) return;
  autograd::record(name, y, {x}, [name, op, saved = saved.detach()](const Tensor& g, const autograd::Node&) {
    Tensor dx = Tensor::empty(saved.shape(), saved.dtype(), saved.device());
    kUnaryBackward.get(saved.device(), name)(op, dx, g, saved);
    return std::vector<Tensor>{dx};
  });
}

// y = -x;  dx = -dy
Tensor neg(const Tensor& x) {
  Tensor out = unary_forward("neg", UnaryOp::neg, x);
  autograd::record("neg", out, {x}, [](const Tensor& g, const autograd::Node&) { return std::vector<Tensor>{neg(g)}; });
  return out;
}

// y = |x|;  dx = sign(x) dy, 0 at x = 0
Tensor abs(const Tensor& x) {
  Tensor out = unary_forward("abs", UnaryOp::abs, x);
  record_unary("abs", out, x, UnaryBackwardOp::abs, x);
  return out;
}

// y = e^x;  dx = y dy
Tensor exp(const Tensor& x) {
  Tensor out = unary_forward("exp", UnaryOp::exp, x);
  record_unary("exp", out, x, UnaryBackwardOp::exp, out);
  return out;
}

// y = ln x;  dx = dy / x
Tensor log(const Tensor& x) {
  Tensor out = unary_forward("log", UnaryOp::log, x);
  record_unary("log", out, x, UnaryBackwardOp::log, x);
  return out;
}

// y = sqrt(x);  dx = dy / (2 y)
Tensor sqrt(const Tensor& x) {
  Tensor out = unary_forward("sqrt", UnaryOp::sqrt, x);
  record_unary("sqrt", out, x, UnaryBackwardOp::sqrt, out);
  return out;
}

// y = 1 / sqrt(x);  dx = -y^3 / 2 dy
Tensor rsqrt(const Tensor& x) {
  Tensor out = unary_forward("rsqrt", UnaryOp::rsqrt, x);
  record_unary("rsqrt", out, x, UnaryBackwardOp::rsqrt, out);
  return out;
}

// y = x^2;  dx = 2 x dy
Tensor square(const Tensor& x) {
  Tensor out = unary_forward("square", UnaryOp::square, x);
  record_unary("square", out, x, UnaryBackwardOp::square, x);
  return out;
}

namespace {

// y = min(max(x, lo), hi);  dx = dy where lo <= x <= hi (inclusive, as PyTorch), else 0
Tensor clamp_op(const char* name, const Tensor& x, double lo, double hi) {
  check_floating(name, x);
  NF_CHECK(!std::isnan(lo) && !std::isnan(hi), name, ": bound is NaN (lo ", lo, ", hi ", hi, ")");
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  kClamp.get(x.device(), name)(out, x, lo, hi);
  if (autograd::needs_record({&x})) {
    autograd::record(name, out, {x}, [name, x = x.detach(), lo, hi](const Tensor& g, const autograd::Node&) {
      Tensor dx = Tensor::empty(x.shape(), x.dtype(), x.device());
      kClampBackward.get(x.device(), name)(dx, g, x, lo, hi);
      return std::vector<Tensor>{dx};
    });
  }
  return out;
}

}  // namespace

Tensor clamp(const Tensor& x, double lo, double hi) { return clamp_op("clamp", x, lo, hi); }
Tensor clamp_min(const Tensor& x, double lo) { return clamp_op("clamp_min", x, lo, std::numeric_limits<double>::infinity()); }
Tensor clamp_max(const Tensor& x, double hi) { return clamp_op("clamp_max", x, -std::numeric_limits<double>::infinity(), hi); }

}  // namespace nf
