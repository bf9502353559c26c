// Binary, comparison and selection kernels. (Unary kernels: elementwise_unary.cpp.)
#include "ops/cpu/elementwise.h"

#include <cmath>
#include <type_traits>

#include "ops/cpu/loops/elementwise_loops.h"
#include "ops/cpu/simd/scalar_convert.h"

namespace nf::cpu {
namespace {

const char* binary_name(BinaryOp op) {
  switch (op) {
    case BinaryOp::add: return "add";
    case BinaryOp::sub: return "sub";
    case BinaryOp::mul: return "mul";
    case BinaryOp::div: return "div";
    case BinaryOp::pow: return "pow";
    case BinaryOp::maximum: return "maximum";
    case BinaryOp::minimum: return "minimum";
  }
  return "binary op";
}

const char* compare_name(CompareOp op) {
  switch (op) {
    case CompareOp::eq: return "eq";
    case CompareOp::ne: return "ne";
    case CompareOp::lt: return "lt";
    case CompareOp::le: return "le";
    case CompareOp::gt: return "gt";
    case CompareOp::ge: return "ge";
  }
  return "compare";
}

template <class T>
bool is_nan(T x) {
  if constexpr (std::is_floating_point_v<T>) return std::isnan(x);
  else return false;
}

// The unsigned integer type of a dtype's width: selection only moves bits.
template <class Fn>
void visit_width(DType t, Fn&& fn) {
  switch (dtype_size(t)) {
    case 1: fn(uint8_t{}); return;
    case 2: fn(uint16_t{}); return;
    case 4: fn(uint32_t{}); return;
    default: fn(uint64_t{}); return;
  }
}

}  // namespace

void binary(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b) {
  visit_arithmetic(a.dtype(), binary_name(op), [&](auto tag) {
    using T = decltype(tag);
    switch (op) {
      case BinaryOp::add: binary_loop<T, T>(out, a, b, [](T x, T y) { return x + y; }); break;
      case BinaryOp::sub: binary_loop<T, T>(out, a, b, [](T x, T y) { return x - y; }); break;
      case BinaryOp::mul: binary_loop<T, T>(out, a, b, [](T x, T y) { return x * y; }); break;
      case BinaryOp::div: binary_loop<T, T>(out, a, b, [](T x, T y) { return x / y; }); break;
      case BinaryOp::pow: binary_loop<T, T>(out, a, b, [](T x, T y) { return static_cast<T>(std::pow(x, y)); }); break;
      // a NaN operand wins, as in PyTorch
      case BinaryOp::maximum: binary_loop<T, T>(out, a, b, [](T x, T y) { return x > y || is_nan(x) ? x : y; }); break;
      case BinaryOp::minimum: binary_loop<T, T>(out, a, b, [](T x, T y) { return x < y || is_nan(x) ? x : y; }); break;
    }
  });
}

void binary_backward(BinaryBackwardOp op, const Tensor& d, const Tensor& g, const Tensor& a, const Tensor& b) {
  visit_floating(a.dtype(), "binary backward", [&](auto tag) {
    using T = decltype(tag);
    auto run = [&](auto f) { ternary_loop<T, T, T, T>(d, g, a, b, f); };
    switch (op) {
      // d/da a^b = b a^(b-1), taken as 0 where b == 0 (also at a == 0)
      case BinaryBackwardOp::pow_base:
        run([](T gv, T x, T y) { return y == T(0) ? T(0) : gv * y * std::pow(x, y - T(1)); });
        break;
      // d/db a^b = a^b ln a, taken as 0 where a == 0 and b >= 0
      case BinaryBackwardOp::pow_exponent:
        run([](T gv, T x, T y) { return x == T(0) && y >= T(0) ? T(0) : gv * std::pow(x, y) * std::log(x); });
        break;
      // max/min: the gradient goes to the winner, split in halves on ties
      case BinaryBackwardOp::maximum_a: run([](T gv, T x, T y) { return x == y ? gv / 2 : (x < y ? T(0) : gv); }); break;
      case BinaryBackwardOp::maximum_b: run([](T gv, T x, T y) { return x == y ? gv / 2 : (x > y ? T(0) : gv); }); break;
      case BinaryBackwardOp::minimum_a: run([](T gv, T x, T y) { return x == y ? gv / 2 : (x > y ? T(0) : gv); }); break;
      case BinaryBackwardOp::minimum_b: run([](T gv, T x, T y) { return x == y ? gv / 2 : (x < y ? T(0) : gv); }); break;
    }
  });
}

void compare(CompareOp op, const Tensor& out, const Tensor& a, const Tensor& b) {
  visit_dtype(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bf16> || std::is_same_v<T, f16>) {
      NF_FAIL(compare_name(op), ": dtype ", dtype_name(a.dtype()), " is not supported (convert with .to(DType::f32))");
    } else {
      switch (op) {
        case CompareOp::eq: binary_loop<T, bool>(out, a, b, [](T x, T y) { return x == y; }); break;
        case CompareOp::ne: binary_loop<T, bool>(out, a, b, [](T x, T y) { return x != y; }); break;
        case CompareOp::lt: binary_loop<T, bool>(out, a, b, [](T x, T y) { return x < y; }); break;
        case CompareOp::le: binary_loop<T, bool>(out, a, b, [](T x, T y) { return x <= y; }); break;
        case CompareOp::gt: binary_loop<T, bool>(out, a, b, [](T x, T y) { return x > y; }); break;
        case CompareOp::ge: binary_loop<T, bool>(out, a, b, [](T x, T y) { return x >= y; }); break;
      }
    }
  });
}

void where(const Tensor& out, const Tensor& cond, const Tensor& a, const Tensor& b) {
  visit_width(a.dtype(), [&](auto tag) {
    using U = decltype(tag);
    ternary_loop<bool, U, U, U>(out, cond, a, b, [](bool c, U x, U y) { return c ? x : y; });
  });
}

void masked_fill(const Tensor& out, const Tensor& x, const Tensor& mask, double value) {
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T fill = convert<T>(value);
    T* po = static_cast<T*>(out.raw_data());
    const T* px = static_cast<const T*>(x.raw_data());
    const bool* pm = static_cast<const bool*>(mask.raw_data());
    const Shape& shape = out.shape();
    for_each_run<3>(shape, {out.strides(), broadcast_strides(x, shape), broadcast_strides(mask, shape)},
                    [&](std::array<int64_t, 3> off, int64_t n, std::array<int64_t, 3> st) {
                      for (int64_t i = 0; i < n; ++i) {
                        po[off[0] + i * st[0]] = pm[off[2] + i * st[2]] ? fill : px[off[1] + i * st[1]];
                      }
                    });
  });
}

}  // namespace nf::cpu
