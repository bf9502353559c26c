#include "ops/cpu/mlp_activation.h"

#include "ops/cpu/loops/elementwise_loops.h"
#include "ops/cpu/simd/vector_math.h"

namespace nf::cpu {
namespace {

// max(x, 0), NaN kept (as F.relu)
template <class T>
NF_VMATH_INLINE T relu_of(T x) {
  return x < T(0) ? T(0) : x;
}

// dgate and dup of one element, from e = e^-a and s = 1 / (1 + e):
//   dgate = g b s (1 + a (1 - s)),  dup = g a s
template <class T>
NF_VMATH_INLINE void swiglu_grads(T g, T a, T b, T& da, T& db) {
  const T e = vmath::exp(-a);
  const T s = T(1) / (T(1) + e);
  da = g * b * s * (T(1) + a * vmath::one_minus_sigmoid(s, e));
  db = g * a * s;
}

}  // namespace

void relu_squared(const Tensor& y, const Tensor& x) {
  visit_floating(x.dtype(), "relu_squared", [&](auto tag) {
    using T = decltype(tag);
    // y = max(x, 0)^2
    unary_loop<T, T>(y, x, [](T v) NF_INLINE_LAMBDA {
      const T r = relu_of(v);
      return r * r;
    });
  });
}

void relu_squared_backward(const Tensor& dx, const Tensor& dy, const Tensor& x) {
  visit_floating(x.dtype(), "relu_squared backward", [&](auto tag) {
    using T = decltype(tag);
    // dx = 2 max(x, 0) dy
    binary_loop<T, T>(dx, dy, x, [](T g, T v) NF_INLINE_LAMBDA { return T(2) * relu_of(v) * g; });
  });
}

void swiglu(const Tensor& y, const Tensor& gate, const Tensor& up) {
  visit_floating(gate.dtype(), "swiglu", [&](auto tag) {
    using T = decltype(tag);
    // y = silu(a) b = a b / (1 + e^-a)
    binary_loop<T, T>(y, gate, up, [](T a, T b) NF_INLINE_LAMBDA { return vmath::silu(a) * b; });
  });
}

void swiglu_backward(const Tensor& dgate, const Tensor& dup, const Tensor& dy, const Tensor& gate, const Tensor& up) {
  visit_floating(gate.dtype(), "swiglu backward", [&](auto tag) {
    using T = decltype(tag);
    T *pda = dgate.data<T>(), *pdb = dup.data<T>();
    const T *pg = dy.data<T>(), *pa = gate.data<T>(), *pb = up.data<T>();
    for_each_run<5>(dy.shape(), {dgate.strides(), dup.strides(), dy.strides(), gate.strides(), up.strides()},
                    [&](std::array<int64_t, 5> off, int64_t n, std::array<int64_t, 5> st) {
                      T *da = pda + off[0], *db = pdb + off[1];
                      const T *g = pg + off[2], *a = pa + off[3], *b = pb + off[4];
                      if (st[0] == 1 && st[1] == 1 && st[2] == 1 && st[3] == 1 && st[4] == 1) {
                        for (int64_t i = 0; i < n; ++i) swiglu_grads(g[i], a[i], b[i], da[i], db[i]);
                      } else {
                        for (int64_t i = 0; i < n; ++i) {
                          swiglu_grads(g[i * st[2]], a[i * st[3]], b[i * st[4]], da[i * st[0]], db[i * st[1]]);
                        }
                      }
                    });
  });
}

}  // namespace nf::cpu
