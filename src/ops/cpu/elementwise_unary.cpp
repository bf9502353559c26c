// Unary kernels and their fused backward kernels: dx = dy * f'(x) in one pass over memory.
#include <cmath>
#include <limits>

#include "ops/cpu/elementwise.h"
#include "ops/cpu/loops/elementwise_loops.h"
#include "ops/cpu/simd/vector_math.h"

namespace nf::cpu {
namespace {

const char* unary_name(UnaryOp op) {
  switch (op) {
    case UnaryOp::neg: return "neg";
    case UnaryOp::abs: return "abs";
    case UnaryOp::exp: return "exp";
    case UnaryOp::log: return "log";
    case UnaryOp::sqrt: return "sqrt";
    case UnaryOp::rsqrt: return "rsqrt";
    case UnaryOp::square: return "square";
    case UnaryOp::tanh: return "tanh";
    case UnaryOp::sigmoid: return "sigmoid";
    case UnaryOp::relu: return "relu";
    case UnaryOp::silu: return "silu";
    case UnaryOp::softplus: return "softplus";
    case UnaryOp::gelu: return "gelu";
    case UnaryOp::gelu_tanh: return "gelu";
  }
  return "unary op";
}

// A double bound in T's range: beyond it the bound is an infinity (no clamping on that side).
template <class T>
T to_bound(double v) {
  if (std::fabs(v) > std::numeric_limits<T>::max()) return std::copysign(std::numeric_limits<T>::infinity(), T(v > 0 ? 1 : -1));
  return static_cast<T>(v);
}

}  // namespace

void unary(UnaryOp op, const Tensor& out, const Tensor& x) {
  if (op == UnaryOp::neg || op == UnaryOp::abs) {
    visit_arithmetic(x.dtype(), unary_name(op), [&](auto tag) {
      using T = decltype(tag);
      if (op == UnaryOp::neg) unary_loop<T, T>(out, x, [](T v) { return static_cast<T>(-v); });
      else unary_loop<T, T>(out, x, [](T v) { return static_cast<T>(std::abs(v)); });
    });
    return;
  }
  visit_floating(x.dtype(), unary_name(op), [&](auto tag) {
    using T = decltype(tag);
    auto run = [&](auto f) { unary_loop<T, T>(out, x, f); };
    switch (op) {
      case UnaryOp::exp: run([](T v) NF_INLINE_LAMBDA { return vmath::exp(v); }); break;
      case UnaryOp::log: run([](T v) { return std::log(v); }); break;
      case UnaryOp::sqrt: run([](T v) { return std::sqrt(v); }); break;
      case UnaryOp::rsqrt: run([](T v) { return T(1) / std::sqrt(v); }); break;
      case UnaryOp::square: run([](T v) { return v * v; }); break;
      case UnaryOp::tanh: run([](T v) NF_INLINE_LAMBDA { return vmath::tanh(v); }); break;
      case UnaryOp::sigmoid: run([](T v) NF_INLINE_LAMBDA { return vmath::sigmoid(v); }); break;
      case UnaryOp::relu: run([](T v) { return v < T(0) ? T(0) : v; }); break;  // NaN stays NaN
      case UnaryOp::silu: run([](T v) NF_INLINE_LAMBDA { return vmath::silu(v); }); break;
      // softplus(x) = log1p(e^x), or x where x > 20 (e^-20 is below f32 resolution there; as PyTorch)
      case UnaryOp::softplus: run([](T v) { return v > T(20) ? v : std::log1p(std::exp(v)); }); break;
      case UnaryOp::gelu: run([](T v) NF_INLINE_LAMBDA { return vmath::gelu_erf(v); }); break;
      case UnaryOp::gelu_tanh: run([](T v) NF_INLINE_LAMBDA { return vmath::gelu_tanh(v); }); break;
      case UnaryOp::neg:
      case UnaryOp::abs: break;  // handled above for every arithmetic dtype
    }
  });
}

void unary_backward(UnaryBackwardOp op, const Tensor& dx, const Tensor& dy, const Tensor& saved) {
  visit_floating(saved.dtype(), "unary backward", [&](auto tag) {
    using T = decltype(tag);
    // f(g, s): g the output gradient, s the saved input x or output y
    auto run = [&](auto f) { binary_loop<T, T>(dx, dy, saved, f); };
    switch (op) {
      // |x|' = sign(x), 0 at 0
      case UnaryBackwardOp::abs: run([](T g, T x) { return x > T(0) ? g : (x < T(0) ? -g : T(0)); }); break;
      // (e^x)' = y
      case UnaryBackwardOp::exp: run([](T g, T y) { return g * y; }); break;
      // (ln x)' = 1 / x
      case UnaryBackwardOp::log: run([](T g, T x) { return g / x; }); break;
      // (sqrt x)' = 1 / (2 y)
      case UnaryBackwardOp::sqrt: run([](T g, T y) { return g / (T(2) * y); }); break;
      // (x^-1/2)' = -x^-3/2 / 2 = -y^3 / 2
      case UnaryBackwardOp::rsqrt: run([](T g, T y) { return T(-0.5) * g * y * y * y; }); break;
      // (x^2)' = 2 x
      case UnaryBackwardOp::square: run([](T g, T x) { return T(2) * x * g; }); break;
      // tanh' = 1 - y^2
      case UnaryBackwardOp::tanh: run([](T g, T y) { return g * (T(1) - y * y); }); break;
      // sigmoid' = y (1 - y)
      case UnaryBackwardOp::sigmoid: run([](T g, T y) { return g * y * (T(1) - y); }); break;
      // relu' = 1 where y > 0, else 0 (0 at x = 0, as PyTorch)
      case UnaryBackwardOp::relu: run([](T g, T y) { return y <= T(0) ? T(0) : g; }); break;
      case UnaryBackwardOp::silu: run([](T g, T x) NF_INLINE_LAMBDA { return g * vmath::silu_grad(x); }); break;
      // d softplus / dx = e^x / (1 + e^x) = sigmoid(x), and 1 where x > 20
      case UnaryBackwardOp::softplus:
        run([](T g, T x) { return x > T(20) ? g : g / (T(1) + std::exp(-x)); });
        break;
      case UnaryBackwardOp::gelu: run([](T g, T x) NF_INLINE_LAMBDA { return g * vmath::gelu_erf_grad(x); }); break;
      case UnaryBackwardOp::gelu_tanh: run([](T g, T x) NF_INLINE_LAMBDA { return g * vmath::gelu_tanh_grad(x); }); break;
    }
  });
}

// The exponents PyTorch special-cases get exact, vectorisable loops; others go through std::pow.
void pow_scalar(const Tensor& out, const Tensor& x, double exponent) {
  visit_floating(x.dtype(), "pow", [&](auto tag) {
    using T = decltype(tag);
    auto run = [&](auto f) { unary_loop<T, T>(out, x, f); };
    const T e = static_cast<T>(exponent);
    if (exponent == 2.0) run([](T v) { return v * v; });
    else if (exponent == 3.0) run([](T v) { return v * v * v; });
    else if (exponent == 0.5) run([](T v) { return std::sqrt(v); });
    else if (exponent == -0.5) run([](T v) { return T(1) / std::sqrt(v); });
    else if (exponent == -1.0) run([](T v) { return T(1) / v; });
    else if (exponent == -2.0) run([](T v) { return T(1) / (v * v); });
    else run([e](T v) { return std::pow(v, e); });
  });
}

void pow_scalar_backward(const Tensor& dx, const Tensor& dy, const Tensor& x, double exponent) {
  visit_floating(x.dtype(), "pow backward", [&](auto tag) {
    using T = decltype(tag);
    auto run = [&](auto f) { binary_loop<T, T>(dx, dy, x, f); };
    const T e = static_cast<T>(exponent);
    if (exponent == 0.0) run([](T, T) { return T(0); });
    else if (exponent == 1.0) run([](T g, T) { return g; });
    else if (exponent == 2.0) run([](T g, T v) { return T(2) * v * g; });
    else run([e](T g, T v) { return g * e * std::pow(v, e - T(1)); });
  });
}

void clamp(const Tensor& out, const Tensor& x, double lo, double hi) {
  visit_floating(x.dtype(), "clamp", [&](auto tag) {
    using T = decltype(tag);
    const T l = to_bound<T>(lo), h = to_bound<T>(hi);
    unary_loop<T, T>(out, x, [l, h](T v) {
      const T above = v < l ? l : v;
      return above > h ? h : above;
    });
  });
}

void clamp_backward(const Tensor& dx, const Tensor& dy, const Tensor& x, double lo, double hi) {
  visit_floating(x.dtype(), "clamp backward", [&](auto tag) {
    using T = decltype(tag);
    const T l = to_bound<T>(lo), h = to_bound<T>(hi);
    binary_loop<T, T>(dx, dy, x, [l, h](T g, T v) { return l <= v && v <= h ? g : T(0); });
  });
}

}  // namespace nf::cpu
