#include "ops/cpu/softmax.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "ops/cpu/loops/elementwise_loops.h"
#include "ops/cpu/simd/row_reductions.h"
#include "ops/cpu/simd/vector_math.h"

namespace nf::cpu {
namespace {

// Columns handled together when the softmax dim is not innermost (two buffers of this many T).
constexpr int64_t kColumnBlock = 256;

// ---- rows: the softmax dim is innermost, one row of n contiguous elements ----

// y = e^(x - m) / s with m = max x, s = sum e^(x - m): three passes (max, exp-sum, scale)
template <class T>
void softmax_row(const T* x, T* y, int64_t n) {
  const T m = row_max(x, n);
  const T s = lane_sum<T>(n, [&](int64_t i) {
    const T e = vmath::exp(x[i] - m);
    y[i] = e;
    return e;
  });
  const T inv = T{1} / s;
  for (int64_t i = 0; i < n; ++i) y[i] *= inv;
}

// y = (x - m) - log s  (x - m is exact for nearby values, so large logits keep their precision)
template <class T>
void log_softmax_row(const T* x, T* y, int64_t n) {
  const T m = row_max(x, n);
  const T s = lane_sum<T>(n, [&](int64_t i) { return vmath::exp(x[i] - m); });
  const T log_s = std::log(s);
  for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - m) - log_s;
}

// dx = y (dy - sum(dy y))
template <class T>
void softmax_backward_row(const T* dy, const T* y, T* dx, int64_t n) {
  const T s = lane_sum<T>(n, [&](int64_t i) { return dy[i] * y[i]; });
  for (int64_t i = 0; i < n; ++i) dx[i] = y[i] * (dy[i] - s);
}

// dx = dy - e^y sum(dy)
template <class T>
void log_softmax_backward_row(const T* dy, const T* y, T* dx, int64_t n) {
  const T s = lane_sum<T>(n, [&](int64_t i) { return dy[i]; });
  for (int64_t i = 0; i < n; ++i) dx[i] = dy[i] - vmath::exp(y[i]) * s;
}

// ---- columns: w adjacent columns of n rows, element (c, j) at [c * inner + j] ----

template <class T>
void softmax_columns(const T* x, T* y, int64_t n, int64_t inner, int64_t w, bool log) {
  std::array<T, kColumnBlock> m, s;
  for (int64_t j = 0; j < w; ++j) m[j] = x[j];
  for (int64_t c = 1; c < n; ++c) {
    const T* row = x + c * inner;
    for (int64_t j = 0; j < w; ++j) m[j] = max_of(m[j], row[j]);
  }
  std::fill_n(s.begin(), w, T{0});
  for (int64_t c = 0; c < n; ++c) {
    const T* row = x + c * inner;
    T* out = y + c * inner;
    for (int64_t j = 0; j < w; ++j) {
      const T e = vmath::exp(row[j] - m[j]);
      if (!log) out[j] = e;
      s[j] += e;
    }
  }
  if (log) {
    for (int64_t j = 0; j < w; ++j) s[j] = std::log(s[j]);
    for (int64_t c = 0; c < n; ++c) {
      const T* row = x + c * inner;
      T* out = y + c * inner;
      for (int64_t j = 0; j < w; ++j) out[j] = (row[j] - m[j]) - s[j];
    }
  } else {
    for (int64_t j = 0; j < w; ++j) s[j] = T{1} / s[j];
    for (int64_t c = 0; c < n; ++c) {
      T* out = y + c * inner;
      for (int64_t j = 0; j < w; ++j) out[j] *= s[j];
    }
  }
}

template <class T>
void softmax_backward_columns(const T* dy, const T* y, T* dx, int64_t n, int64_t inner, int64_t w, bool log) {
  std::array<T, kColumnBlock> s;
  std::fill_n(s.begin(), w, T{0});
  for (int64_t c = 0; c < n; ++c) {
    const T* g = dy + c * inner;
    const T* v = y + c * inner;
    for (int64_t j = 0; j < w; ++j) s[j] += log ? g[j] : g[j] * v[j];
  }
  for (int64_t c = 0; c < n; ++c) {
    const T* g = dy + c * inner;
    const T* v = y + c * inner;
    T* out = dx + c * inner;
    if (log) {
      for (int64_t j = 0; j < w; ++j) out[j] = g[j] - vmath::exp(v[j]) * s[j];
    } else {
      for (int64_t j = 0; j < w; ++j) out[j] = v[j] * (g[j] - s[j]);
    }
  }
}

// Calls row(o) for each of `outer` rows of n elements, or block(o, j0, w) for each block of w
// columns when inner > 1, spread over threads.
template <class RowFn, class BlockFn>
void for_each_slice(SoftmaxLayout l, RowFn row, BlockFn block) {
  if (l.outer * l.n * l.inner == 0) return;
  if (l.inner == 1) {
    parallel_for(l.outer, std::max<int64_t>(1, kParallelGrain / l.n), [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o) row(o);
    });
    return;
  }
  const int64_t blocks = (l.inner + kColumnBlock - 1) / kColumnBlock;
  const int64_t grain = std::max<int64_t>(1, kParallelGrain / (l.n * std::min(l.inner, kColumnBlock)));
  parallel_for(l.outer * blocks, grain, [&](int64_t b, int64_t e) {
    for (int64_t task = b; task < e; ++task) {
      const int64_t o = task / blocks, j0 = (task % blocks) * kColumnBlock;
      block(o, j0, std::min(kColumnBlock, l.inner - j0));
    }
  });
}

}  // namespace

void softmax_forward(const Tensor& y, const Tensor& x, SoftmaxLayout l, bool log) {
  visit_floating(x.dtype(), log ? "log_softmax" : "softmax", [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    T* py = y.data<T>();
    const int64_t slice = l.n * l.inner;
    for_each_slice(
        l,
        [&](int64_t o) { log ? log_softmax_row(px + o * l.n, py + o * l.n, l.n) : softmax_row(px + o * l.n, py + o * l.n, l.n); },
        [&](int64_t o, int64_t j0, int64_t w) {
          const int64_t at = o * slice + j0;
          softmax_columns(px + at, py + at, l.n, l.inner, w, log);
        });
  });
}

void softmax_backward(const Tensor& dx, const Tensor& dy, const Tensor& y, SoftmaxLayout l, bool log) {
  visit_floating(y.dtype(), log ? "log_softmax backward" : "softmax backward", [&](auto tag) {
    using T = decltype(tag);
    const T* pdy = dy.data<T>();
    const T* py = y.data<T>();
    T* pdx = dx.data<T>();
    const int64_t slice = l.n * l.inner;
    for_each_slice(
        l,
        [&](int64_t o) {
          const int64_t at = o * l.n;
          log ? log_softmax_backward_row(pdy + at, py + at, pdx + at, l.n)
              : softmax_backward_row(pdy + at, py + at, pdx + at, l.n);
        },
        [&](int64_t o, int64_t j0, int64_t w) {
          const int64_t at = o * slice + j0;
          softmax_backward_columns(pdy + at, py + at, pdx + at, l.n, l.inner, w, log);
        });
  });
}

}  // namespace nf::cpu
