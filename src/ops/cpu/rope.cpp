#include "ops/cpu/rope.h"

#include <algorithm>

#include "ops/cpu/elementwise_loops.h"
#include "ops/cpu/loops.h"

namespace nf::cpu {
namespace {

// Pairs (x[2i], x[2i+1]) rotated by (c, sgn * s):  y[2i] = a c - sgn b s,  y[2i+1] = sgn a s + b c
template <class T>
void rotate_interleaved_row(const T* x, T* y, const T* c, const T* s, int64_t half, T sgn) {
  for (int64_t i = 0; i < half; ++i) {
    const T a = x[2 * i], b = x[2 * i + 1], si = sgn * s[i];
    y[2 * i] = a * c[i] - b * si;
    y[2 * i + 1] = a * si + b * c[i];
  }
}

// Halves (x1, x2) rotated by (c, sgn * s):  y1 = x1 c - sgn x2 s,  y2 = x2 c + sgn x1 s
template <class T>
void rotate_half_row(const T* x, T* y, const T* c, const T* s, int64_t half, T sgn) {
  const T* x1 = x;
  const T* x2 = x + half;
  T* y1 = y;
  T* y2 = y + half;
  for (int64_t i = 0; i < half; ++i) {
    const T si = sgn * s[i];
    y1[i] = x1[i] * c[i] - x2[i] * si;
    y2[i] = x2[i] * c[i] + x1[i] * si;
  }
}

}  // namespace

// half_negative is half by -angle, so each layout reduces to (pairs kind, direction sign).
void rope_rotate(const Tensor& out, const Tensor& x, const Tensor& cos, const Tensor& sin, int64_t offset,
                 RopeLayout layout, bool inverse) {
  const int64_t nd = x.dim(), T_len = x.shape()[nd - 2], D = x.shape()[nd - 1], half = D / 2;
  if (out.numel() == 0) return;
  const int64_t rows = out.numel() / D;
  const Shape batch_shape(x.shape().begin(), x.shape().end() - 2);
  const Shape batch_strides(x.strides().begin(), x.strides().end() - 2);
  const int64_t row_stride = x.strides()[nd - 2];
  const bool negative = (layout == RopeLayout::half_negative) != inverse;
  const bool interleaved = layout == RopeLayout::interleaved;
  visit_floating(x.dtype(), "rope", [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    const T* pc = cos.data<T>();
    const T* ps = sin.data<T>();
    T* po = out.data<T>();
    const T sgn = negative ? T(-1) : T(1);
    parallel_for(rows, std::max<int64_t>(1, kParallelGrain / D), [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const int64_t t = r % T_len;
        int64_t batch = r / T_len, x_off = t * row_stride;
        for (size_t d = batch_shape.size(); d-- > 0;) {
          x_off += (batch % batch_shape[d]) * batch_strides[d];
          batch /= batch_shape[d];
        }
        const T* c = pc + (offset + t) * half;
        const T* s = ps + (offset + t) * half;
        if (interleaved) {
          rotate_interleaved_row(px + x_off, po + r * D, c, s, half, sgn);
        } else {
          rotate_half_row(px + x_off, po + r * D, c, s, half, sgn);
        }
      }
    });
  });
}

}  // namespace nf::cpu
