// Comparisons: bool results with broadcasting, never recorded by autograd (not differentiable).
#include <cmath>

#include "nanoformer/core/dispatch.h"
#include "nanoformer/core/error.h"
#include "nanoformer/ops/elementwise.h"
#include "nanoformer/ops/view.h"
#include "ops/cpu/elementwise.h"
#include "ops/elementwise_internal.h"

namespace nf {
namespace {

using CompareKernel = void (*)(CompareOp, const Tensor& out, const Tensor& a, const Tensor& b);
const DeviceKernels<CompareKernel> kCompare{.cpu = cpu::compare};

Tensor compare(const char* name, CompareOp op, const Tensor& a, const Tensor& b) {
  check_binary_operands(name, a, b);
  const Shape shape = broadcast_shapes(a.shape(), b.shape(), name);
  Tensor out = Tensor::empty(shape, DType::boolean, a.device());
  kCompare.get(a.device(), name)(op, out, a, b);
  return out;
}

// Whether an integer or bool dtype holds v exactly.
bool holds_exactly(DType t, double v) {
  if (v != std::trunc(v)) return false;  // also false for NaN
  switch (t) {
    case DType::i32: return v >= -2147483648.0 && v <= 2147483647.0;
    case DType::i64: return v >= -9223372036854775808.0 && v < 9223372036854775808.0;
    case DType::boolean: return v == 0.0 || v == 1.0;
    default: return true;
  }
}

// The scalar takes a's dtype (as in PyTorch), except when a's integer/bool dtype cannot hold it
// (x < 2.5 on i64): then both sides compare as f64.
Tensor compare_scalar(const char* name, CompareOp op, const Tensor& a, double b) {
  NF_CHECK(a.defined(), name, ": operand is undefined");
  if (!is_floating(a.dtype()) && !holds_exactly(a.dtype(), b)) {
    return compare(name, op, a.to(DType::f64), Tensor::scalar(b, DType::f64));
  }
  return compare(name, op, a, Tensor::scalar(b, a.dtype()));
}

}  // namespace

Tensor eq(const Tensor& a, const Tensor& b) { return compare("eq", CompareOp::eq, a, b); }
Tensor ne(const Tensor& a, const Tensor& b) { return compare("ne", CompareOp::ne, a, b); }
Tensor lt(const Tensor& a, const Tensor& b) { return compare("lt", CompareOp::lt, a, b); }
Tensor le(const Tensor& a, const Tensor& b) { return compare("le", CompareOp::le, a, b); }
Tensor gt(const Tensor& a, const Tensor& b) { return compare("gt", CompareOp::gt, a, b); }
Tensor ge(const Tensor& a, const Tensor& b) { return compare("ge", CompareOp::ge, a, b); }
Tensor eq(const Tensor& a, double b) { return compare_scalar("eq", CompareOp::eq, a, b); }
Tensor lt(const Tensor& a, double b) { return compare_scalar("lt", CompareOp::lt, a, b); }
Tensor gt(const Tensor& a, double b) { return compare_scalar("gt", CompareOp::gt, a, b); }

}  // namespace nf
