#include "ops/cpu/rope.h"

#include <algorithm>
#include <cmath>

#include "ops/cpu/loops/elementwise_loops.h"
#include "ops/cpu/loops/loops.h"

namespace nf::cpu {
namespace {

// a b + c, fused where the CPU has FMA. Spelled out because the compiler would otherwise contract
// the kernels' a c - b s differently in a loop's vector body and its scalar tail, and a decoder
// step (one row) must round exactly like its row of the full sequence.
template <class T>
T mul_add(T a, T b, T c) {
#if defined(FP_FAST_FMAF) && defined(FP_FAST_FMA)
  return std::fma(a, b, c);
#else
  return a * b + c;
#endif
}

// Pairs (x[2i], x[2i+1]) rotated by (c, sgn * s):  y[2i] = a c - sgn b s,  y[2i+1] = sgn a s + b c
template <class T>
void rotate_interleaved_row(const T* __restrict x, T* __restrict y, const T* __restrict c, const T* __restrict s,
                            int64_t half, T sgn) {
  for (int64_t i = 0; i < half; ++i) {
    const T a = x[2 * i], b = x[2 * i + 1], si = sgn * s[i];
    y[2 * i] = mul_add(a, c[i], -(b * si));
    y[2 * i + 1] = mul_add(a, si, b * c[i]);
  }
}

// Halves (x1, x2) rotated by (c, sgn * s):  y1 = x1 c - sgn x2 s,  y2 = x2 c + sgn x1 s
template <class T>
void rotate_half_row(const T* __restrict x, T* __restrict y, const T* __restrict c, const T* __restrict s, int64_t half,
                     T sgn) {
  const T* x1 = x;
  const T* x2 = x + half;
  T* y1 = y;
  T* y2 = y + half;
  for (int64_t i = 0; i < half; ++i) {
    const T si = sgn * s[i];
    y1[i] = mul_add(x1[i], c[i], -(x2[i] * si));
    y2[i] = mul_add(x2[i], c[i], x1[i] * si);
  }
}

}  // namespace

// half_negative is half by -angle, so each layout reduces to (pairs kind, direction sign).
void rope_rotate(const Tensor& out, const Tensor& x, const Tensor& cos, const Tensor& sin,
                 std::span<const int64_t> offsets, RopeLayout layout, bool inverse) {
  const int64_t nd = x.dim(), T_len = x.shape()[nd - 2], D = x.shape()[nd - 1], half = D / 2;
  if (out.numel() == 0) return;
  const int64_t rows = out.numel() / D;  // (..., T) rows of D channels
  const Shape batch_shape(x.shape().begin(), x.shape().end() - 2);
  const int64_t row_stride = x.strides()[nd - 2], out_row_stride = out.strides()[nd - 2];
  const bool negative = (layout == RopeLayout::half_negative) != inverse;
  const bool interleaved = layout == RopeLayout::interleaved;
  // matrix m (a (T, D) block) lies in batch row m / per_batch_row, whose tokens start at its offset
  const int64_t per_batch_row = nd > 2 ? rows / T_len / x.shape()[0] : 1;
  const auto offset_of = [&](int64_t m) {
    return offsets.size() == 1 ? offsets[0] : offsets[static_cast<size_t>(m / per_batch_row)];
  };
  visit_floating(x.dtype(), "rope", [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    const T* pc = cos.data<T>();
    const T* ps = sin.data<T>();
    T* po = out.data<T>();
    const T sgn = negative ? T(-1) : T(1);
    // offset of matrix m's (T, D) block in a tensor of strides `strides`
    const auto matrix_offset = [&](int64_t m, const Shape& strides) {
      int64_t off = 0;
      for (size_t d = batch_shape.size(); d-- > 0;) {
        off += (m % batch_shape[d]) * strides[d];
        m /= batch_shape[d];
      }
      return off;
    };
    parallel_for(rows, std::max<int64_t>(1, kParallelGrain / D), [&](int64_t begin, int64_t end) {
      // the piece's rows, a matrix at a time: rows t0 .. t0 + n - 1 of matrix r / T
      for (int64_t r = begin; r < end;) {
        const int64_t t0 = r % T_len, n = std::min(T_len - t0, end - r);
        const T* xm = px + matrix_offset(r / T_len, x.strides()) + t0 * row_stride;
        T* ym = po + matrix_offset(r / T_len, out.strides()) + t0 * out_row_stride;
        const int64_t offset = offset_of(r / T_len);
        const T* c = pc + (offset + t0) * half;
        const T* s = ps + (offset + t0) * half;
        if (interleaved && row_stride == D && out_row_stride == D) {
          rotate_interleaved_row(xm, ym, c, s, n * half, sgn);  // rows and table rows all contiguous: one run
        } else {
          for (int64_t i = 0; i < n; ++i) {
            const T* xr = xm + i * row_stride;
            T* yr = ym + i * out_row_stride;
            interleaved ? rotate_interleaved_row(xr, yr, c + i * half, s + i * half, half, sgn)
                        : rotate_half_row(xr, yr, c + i * half, s + i * half, half, sgn);
          }
        }
        r += n;
      }
    });
  });
}

}  // namespace nf::cpu
