#include "ops/cpu/conv.h"

#include <algorithm>

#include "ops/cpu/loops/elementwise_loops.h"
#include "ops/cpu/loops/loops.h"

namespace nf::cpu {
namespace {

// Calls fn(row of (c, m, n), c, m, n) for every kernel tap of channel c.
template <class Fn>
void for_each_tap(const ConvGeometry& g, int64_t c, Fn&& fn) {
  for (int64_t m = 0; m < g.kh; ++m)
    for (int64_t n = 0; n < g.kw; ++n) fn((c * g.kh + m) * g.kw + n, m, n);
}

// The input column read by output column j at tap n, or -1 in the padding.
inline int64_t input_col(const ConvGeometry& g, int64_t j, int64_t n) {
  const int64_t x = j * g.stride_w - g.pad_w + n * g.dil_w;
  return x >= 0 && x < g.width ? x : -1;
}

template <class T>
void im2col_typed(T* col, const T* x, const ConvGeometry& g) {
  const int64_t L = g.out_h * g.out_w, row_len = g.batch * L, rows = g.channels * g.kh * g.kw;
  parallel_for(rows, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(row_len, 1)), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const int64_t c = r / (g.kh * g.kw), m = (r / g.kw) % g.kh, n = r % g.kw;
      T* dst = col + r * row_len;
      for (int64_t b = 0; b < g.batch; ++b) {
        const T* plane = x + (b * g.channels + c) * g.height * g.width;
        for (int64_t i = 0; i < g.out_h; ++i) {
          const int64_t y = i * g.stride_h - g.pad_h + m * g.dil_h;
          T* out = dst + (b * g.out_h + i) * g.out_w;
          // col[(c, m, n), (b, i, j)] = x[b, c, y, j*s - p + n*d], 0 in the padding
          for (int64_t j = 0; j < g.out_w; ++j) {
            const int64_t xc = input_col(g, j, n);
            out[j] = (y >= 0 && y < g.height && xc >= 0) ? plane[y * g.width + xc] : T(0);
          }
        }
      }
    }
  });
}

template <class T>
void col2im_typed(T* dx, const T* col, const ConvGeometry& g) {
  const int64_t L = g.out_h * g.out_w, row_len = g.batch * L;
  const int64_t per_channel = g.kh * g.kw * row_len;
  parallel_for(g.channels, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(per_channel, 1)), [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      for_each_tap(g, c, [&](int64_t r, int64_t m, int64_t n) {
        const T* src = col + r * row_len;
        for (int64_t b = 0; b < g.batch; ++b) {
          T* plane = dx + (b * g.channels + c) * g.height * g.width;
          for (int64_t i = 0; i < g.out_h; ++i) {
            const int64_t y = i * g.stride_h - g.pad_h + m * g.dil_h;
            if (y < 0 || y >= g.height) continue;
            const T* in = src + (b * g.out_h + i) * g.out_w;
            // dx[b, c, y, j*s - p + n*d] += col[(c, m, n), (b, i, j)] inside the image
            for (int64_t j = 0; j < g.out_w; ++j) {
              const int64_t xc = input_col(g, j, n);
              if (xc >= 0) plane[y * g.width + xc] += in[j];
            }
          }
        }
      });
    }
  });
}

}  // namespace

void im2col(const Tensor& col, const Tensor& x, const ConvGeometry& g) {
  visit_floating(x.dtype(), "conv2d", [&](auto tag) {
    using T = decltype(tag);
    im2col_typed<T>(col.data<T>(), x.data<T>(), g);
  });
}

void col2im(const Tensor& dx, const Tensor& col, const ConvGeometry& g) {
  visit_floating(dx.dtype(), "conv2d backward", [&](auto tag) {
    using T = decltype(tag);
    col2im_typed<T>(dx.data<T>(), col.data<T>(), g);
  });
}

}  // namespace nf::cpu
