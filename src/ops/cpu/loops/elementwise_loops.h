#pragma once
// Typed elementwise loops over broadcast operands. The functor computes one element; the loops
// special-case the contiguous and scalar-operand runs so the compiler vectorises them.
#include "nanoformer/core/error.h"
#include "ops/cpu/loops/loops.h"

namespace nf::cpu {

// out[i] = f(a[i], b[i]) with a and b broadcast to out's shape. T: input type, R: output type.
template <class T, class R, class F>
void binary_loop(const Tensor& out, const Tensor& a, const Tensor& b, F f) {
  R* po = static_cast<R*>(out.raw_data());
  const T* pa = static_cast<const T*>(a.raw_data());
  const T* pb = static_cast<const T*>(b.raw_data());
  for_each_run<3>(out.shape(), {out.strides(), broadcast_strides(a, out.shape()), broadcast_strides(b, out.shape())},
                  [&](std::array<int64_t, 3> off, int64_t n, std::array<int64_t, 3> st) {
                    R* o = po + off[0];
                    const T* x = pa + off[1];
                    const T* y = pb + off[2];
                    if (st[0] == 1 && st[1] == 1 && st[2] == 1) {
                      for (int64_t i = 0; i < n; ++i) o[i] = f(x[i], y[i]);
                    } else if (st[0] == 1 && st[1] == 1 && st[2] == 0) {
                      const T yv = *y;
                      for (int64_t i = 0; i < n; ++i) o[i] = f(x[i], yv);
                    } else if (st[0] == 1 && st[1] == 0 && st[2] == 1) {
                      const T xv = *x;
                      for (int64_t i = 0; i < n; ++i) o[i] = f(xv, y[i]);
                    } else {
                      for (int64_t i = 0; i < n; ++i) o[i * st[0]] = f(x[i * st[1]], y[i * st[2]]);
                    }
                  });
}

// out[i] = f(x[i]) with x broadcast to out's shape.
template <class T, class R, class F>
void unary_loop(const Tensor& out, const Tensor& x, F f) {
  R* po = static_cast<R*>(out.raw_data());
  const T* px = static_cast<const T*>(x.raw_data());
  for_each_run<2>(out.shape(), {out.strides(), broadcast_strides(x, out.shape())},
                  [&](std::array<int64_t, 2> off, int64_t n, std::array<int64_t, 2> st) {
                    R* o = po + off[0];
                    const T* a = px + off[1];
                    if (st[0] == 1 && st[1] == 1) {
                      for (int64_t i = 0; i < n; ++i) o[i] = f(a[i]);
                    } else {
                      for (int64_t i = 0; i < n; ++i) o[i * st[0]] = f(a[i * st[1]]);
                    }
                  });
}

// out[i] = f(a[i], b[i], c[i]) with a, b and c broadcast to out's shape. A, B, C: input types,
// R: output type.
template <class A, class B, class C, class R, class F>
void ternary_loop(const Tensor& out, const Tensor& a, const Tensor& b, const Tensor& c, F f) {
  R* po = static_cast<R*>(out.raw_data());
  const A* pa = static_cast<const A*>(a.raw_data());
  const B* pb = static_cast<const B*>(b.raw_data());
  const C* pc = static_cast<const C*>(c.raw_data());
  const Shape& shape = out.shape();
  for_each_run<4>(shape, {out.strides(), broadcast_strides(a, shape), broadcast_strides(b, shape), broadcast_strides(c, shape)},
                  [&](std::array<int64_t, 4> off, int64_t n, std::array<int64_t, 4> st) {
                    R* o = po + off[0];
                    const A* x = pa + off[1];
                    const B* y = pb + off[2];
                    const C* z = pc + off[3];
                    if (st[0] == 1 && st[1] == 1 && st[2] == 1 && st[3] == 1) {
                      for (int64_t i = 0; i < n; ++i) o[i] = f(x[i], y[i], z[i]);
                    } else {
                      for (int64_t i = 0; i < n; ++i) o[i * st[0]] = f(x[i * st[1]], y[i * st[2]], z[i * st[3]]);
                    }
                  });
}

// Calls fn(T{}) for the arithmetic dtypes (f32, f64, i32, i64); throws naming `op` otherwise.
template <class Fn>
void visit_arithmetic(DType t, const char* op, Fn&& fn) {
  switch (t) {
    case DType::f32: fn(float{}); return;
    case DType::f64: fn(double{}); return;
    case DType::i32: fn(int32_t{}); return;
    case DType::i64: fn(int64_t{}); return;
    default: NF_FAIL(op, ": dtype ", dtype_name(t), " is not supported (convert with .to(DType::f32))");
  }
}

// Calls fn(T{}) for f32 and f64; throws naming `op` otherwise.
template <class Fn>
void visit_floating(DType t, const char* op, Fn&& fn) {
  switch (t) {
    case DType::f32: fn(float{}); return;
    case DType::f64: fn(double{}); return;
    default: NF_FAIL(op, ": dtype ", dtype_name(t), " is not supported (expects f32 or f64)");
  }
}

// Calls fn(I{}) for the index dtypes (i32, i64); throws naming `op` otherwise.
template <class Fn>
void visit_index(DType t, const char* op, Fn&& fn) {
  switch (t) {
    case DType::i32: fn(int32_t{}); return;
    case DType::i64: fn(int64_t{}); return;
    default: NF_FAIL(op, ": index dtype ", dtype_name(t), " is not supported (expects i64 or i32)");
  }
}

}  // namespace nf::cpu
