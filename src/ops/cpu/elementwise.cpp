#include "ops/cpu/elementwise.h"

#include <algorithm>
#include <cmath>

#include "ops/cpu/elementwise_loops.h"

namespace nf::cpu {

void binary(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b) {
  visit_arithmetic(a.dtype(), "binary op", [&](auto tag) {
    using T = decltype(tag);
    switch (op) {
      case BinaryOp::add: binary_loop<T, T>(out, a, b, [](T x, T y) { return x + y; }); break;
      case BinaryOp::sub: binary_loop<T, T>(out, a, b, [](T x, T y) { return x - y; }); break;
      case BinaryOp::mul: binary_loop<T, T>(out, a, b, [](T x, T y) { return x * y; }); break;
      case BinaryOp::div: binary_loop<T, T>(out, a, b, [](T x, T y) { return x / y; }); break;
      case BinaryOp::pow: binary_loop<T, T>(out, a, b, [](T x, T y) { return static_cast<T>(std::pow(x, y)); }); break;
      case BinaryOp::maximum: binary_loop<T, T>(out, a, b, [](T x, T y) { return std::max(x, y); }); break;
      case BinaryOp::minimum: binary_loop<T, T>(out, a, b, [](T x, T y) { return std::min(x, y); }); break;
    }
  });
}

void unary(UnaryOp op, const Tensor& out, const Tensor& x) {
  visit_arithmetic(x.dtype(), "unary op", [&](auto tag) {
    using T = decltype(tag);
    switch (op) {
      case UnaryOp::neg: unary_loop<T, T>(out, x, [](T v) { return -v; }); break;
    }
  });
}

}  // namespace nf::cpu
