#include "ops/cpu/norm.h"

#include <algorithm>
#include <cmath>
#include <tuple>
#include <type_traits>
#include <vector>

#include "ops/cpu/loops/elementwise_loops.h"
#include "ops/cpu/simd/row_reductions.h"
#include "ops/cpu/simd/vector_math.h"  // NF_INLINE_LAMBDA

namespace nf::cpu {
namespace {

// Rows handed to one thread at least: kParallelGrain elements' worth.
int64_t row_grain(int64_t n) { return std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(n, 1)); }

// Pieces the rows are split into for a backward that sums parameter gradients: one per thread,
// none smaller than the grain (each piece owns an (n) partial sum per parameter).
int64_t row_piece_count(int64_t rows, int64_t n) {
  const int64_t grain = row_grain(n);
  return std::clamp<int64_t>((rows + grain - 1) / grain, 1, num_threads());
}

// fn(piece, begin, end) for each of `pieces` contiguous row ranges, in parallel.
template <class Fn>
void for_row_pieces(int64_t pieces, int64_t rows, Fn&& fn) {
  parallel_for(pieces, 1, [&](int64_t b, int64_t e) {
    for (int64_t p = b; p < e; ++p) fn(p, rows * p / pieces, rows * (p + 1) / pieces);
  });
}

// out[i] = sum_p partial[p n + i]: the per-piece parameter gradients summed, pieces in order.
template <class T>
void sum_pieces(const std::vector<T>& partial, int64_t pieces, int64_t n, T* out) {
  std::copy_n(partial.data(), n, out);
  for (int64_t p = 1; p < pieces; ++p) {
    const T* part = partial.data() + p * n;
    for (int64_t i = 0; i < n; ++i) out[i] += part[i];
  }
}

// (sum f(i), sum h(i)) for i in [0, n), each over kLanes independent accumulators (vectorises).
template <class T, class F, class H>
std::pair<T, T> lane_sum2(int64_t n, F f, H h) {
  T lf[kLanes] = {}, lh[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int64_t j = 0; j < kLanes; ++j) {
      lf[j] += f(i + j);
      lh[j] += h(i + j);
    }
  }
  T sf = 0, sh = 0;
  for (int64_t j = 0; j < kLanes; ++j) {
    sf += lf[j];
    sh += lh[j];
  }
  for (; i < n; ++i) {
    sf += f(i);
    sh += h(i);
  }
  return {sf, sh};
}

// Mean and (biased) variance of a row from sums around a shift k, d = x - k:
//   mean = k + sum d / n,  var = (sum d^2 - (sum d)^2 / n) / n
// One pass around k = x[0]. The subtraction cancels by the factor sum d^2 / (sum d^2 - (sum d)^2 / n)
// = 1 + (mean - k)^2 / var; when that exceeds 4 (x[0] far from the mean, as an outlier feature
// would be), a second pass around the mean found so far keeps full precision.
template <class T>
std::pair<T, T> row_mean_var(const T* x, int64_t n) {
  const auto sums_around = [&](T k) {
    return lane_sum2<T>(
        n, [&](int64_t i) NF_INLINE_LAMBDA { return x[i] - k; },
        [&](int64_t i) NF_INLINE_LAMBDA { return (x[i] - k) * (x[i] - k); });
  };
  T k = x[0];
  auto [s1, s2] = sums_around(k);
  if (s1 * s1 > T(0.75) * T(n) * s2) {
    k += s1 / T(n);
    std::tie(s1, s2) = sums_around(k);
  }
  return {k + s1 / T(n), std::max(T(0), (s2 - s1 * s1 / T(n)) / T(n))};
}

// fn(std::true_type) or fn(std::false_type): turns a runtime flag into a compile-time one, so the
// row loops are compiled once per combination with no branch inside.
template <class Fn>
void with_flag(bool flag, Fn&& fn) {
  if (flag) fn(std::true_type{});
  else fn(std::false_type{});
}

template <class T>
const T* data_or_null(const Tensor& t) {
  return t.defined() ? t.data<T>() : nullptr;
}

// The (rows, n) view every kernel works on: n is the last dim.
struct Rows {
  int64_t rows, n;
};
Rows rows_of(const Tensor& x) {
  const int64_t n = x.size(-1);
  return {n == 0 ? 0 : x.numel() / n, n};
}

}  // namespace

void layer_norm_forward(const Tensor& y, const Tensor& mean, const Tensor& rstd, const Tensor& x,
                        const Tensor& weight, const Tensor& bias, double eps) {
  visit_floating(x.dtype(), "layer_norm", [&](auto tag) {
    using T = decltype(tag);
    const Rows shape = rows_of(x);
    const int64_t rows = shape.rows, n = shape.n;
    const T* px = x.data<T>();
    const T *pw = data_or_null<T>(weight), *pb = data_or_null<T>(bias);
    T *py = y.data<T>(), *pm = mean.data<T>(), *prs = rstd.data<T>();
    with_flag(pw != nullptr, [&](auto has_weight) {
      with_flag(pb != nullptr, [&](auto has_bias) {
        constexpr bool kWeight = decltype(has_weight)::value, kBias = decltype(has_bias)::value;
        parallel_for(rows, row_grain(n), [&](int64_t begin, int64_t end) {
          for (int64_t r = begin; r < end; ++r) {
            const T* xr = px + r * n;
            T* yr = py + r * n;
            const auto [m, var] = row_mean_var(xr, n);
            const T rs = T(1) / std::sqrt(var + T(eps));
            pm[r] = m;
            prs[r] = rs;
            // y = (x - mean) rstd weight + bias
            for (int64_t i = 0; i < n; ++i) {
              T v = (xr[i] - m) * rs;
              if constexpr (kWeight) v *= pw[i];
              if constexpr (kBias) v += pb[i];
              yr[i] = v;
            }
          }
        });
      });
    });
  });
}

void layer_norm_backward(const Tensor& dx, const Tensor& dweight, const Tensor& dbias, const Tensor& dy,
                         const Tensor& x, const Tensor& mean, const Tensor& rstd, const Tensor& weight) {
  visit_floating(x.dtype(), "layer_norm backward", [&](auto tag) {
    using T = decltype(tag);
    const Rows shape = rows_of(x);
    const int64_t rows = shape.rows, n = shape.n;
    const T *px = x.data<T>(), *pg = dy.data<T>(), *pm = mean.data<T>(), *prs = rstd.data<T>();
    const T* pw = data_or_null<T>(weight);
    T* pdx = dx.defined() ? dx.data<T>() : nullptr;
    const int64_t pieces = row_piece_count(rows, n);
    std::vector<T> partial_w(dweight.defined() ? pieces * n : 0), partial_b(dbias.defined() ? pieces * n : 0);
    with_flag(pw != nullptr, [&](auto has_weight) {
      constexpr bool kWeight = decltype(has_weight)::value;
      for_row_pieces(pieces, rows, [&](int64_t p, int64_t begin, int64_t end) {
        T* dw = partial_w.empty() ? nullptr : partial_w.data() + p * n;
        T* db = partial_b.empty() ? nullptr : partial_b.data() + p * n;
        for (int64_t r = begin; r < end; ++r) {
          const T *g = pg + r * n, *xr = px + r * n;
          const T m = pm[r], rs = prs[r];
          const auto h = [&](int64_t i) NF_INLINE_LAMBDA {
            if constexpr (kWeight) return g[i] * pw[i];
            else return g[i];
          };
          if (pdx) {
            // a = mean(h), c = mean(h xhat);  dx = rstd (h - a - xhat c)
            const auto [sum_h, sum_hx] =
                lane_sum2<T>(n, h, [&](int64_t i) NF_INLINE_LAMBDA { return h(i) * (xr[i] - m) * rs; });
            const T a = sum_h / T(n), c = sum_hx / T(n);
            T* dxr = pdx + r * n;
            for (int64_t i = 0; i < n; ++i) dxr[i] = rs * (h(i) - a - (xr[i] - m) * rs * c);
          }
          // dweight += dy xhat;  dbias += dy
          if (dw) {
            for (int64_t i = 0; i < n; ++i) dw[i] += g[i] * ((xr[i] - m) * rs);
          }
          if (db) {
            for (int64_t i = 0; i < n; ++i) db[i] += g[i];
          }
        }
      });
    });
    if (dweight.defined()) sum_pieces(partial_w, pieces, n, dweight.data<T>());
    if (dbias.defined()) sum_pieces(partial_b, pieces, n, dbias.data<T>());
  });
}

void rms_norm_forward(const Tensor& y, const Tensor& stat, const Tensor& x, const Tensor& weight, double eps,
                      RmsNormForm form) {
  visit_floating(x.dtype(), "rms_norm", [&](auto tag) {
    using T = decltype(tag);
    const Rows shape = rows_of(x);
    const int64_t rows = shape.rows, n = shape.n;
    const T* px = x.data<T>();
    const T* pw = data_or_null<T>(weight);
    T *py = y.data<T>(), *ps = stat.data<T>();
    const bool rsqrt_form = form == RmsNormForm::rsqrt;
    with_flag(pw != nullptr, [&](auto has_weight) {
      constexpr bool kWeight = decltype(has_weight)::value;
      parallel_for(rows, row_grain(n), [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
          const T* xr = px + r * n;
          T* yr = py + r * n;
          // ms = mean(x^2);  r = 1 / sqrt(ms + eps)  or  1 / (sqrt(ms) + eps)
          const T ms = lane_sum<T>(n, [&](int64_t i) { return xr[i] * xr[i]; }) / T(n);
          T scale;
          if (rsqrt_form) {
            scale = T(1) / std::sqrt(ms + T(eps));
            ps[r] = scale;
          } else {
            const T rms = std::sqrt(ms);
            scale = T(1) / (rms + T(eps));
            ps[r] = rms;
          }
          // y = x r weight
          for (int64_t i = 0; i < n; ++i) {
            if constexpr (kWeight) yr[i] = xr[i] * scale * pw[i];
            else yr[i] = xr[i] * scale;
          }
        }
      });
    });
  });
}

void rms_norm_backward(const Tensor& dx, const Tensor& dweight, const Tensor& dy, const Tensor& x,
                       const Tensor& stat, const Tensor& weight, double eps, RmsNormForm form) {
  visit_floating(x.dtype(), "rms_norm backward", [&](auto tag) {
    using T = decltype(tag);
    const Rows shape = rows_of(x);
    const int64_t rows = shape.rows, n = shape.n;
    const T *px = x.data<T>(), *pg = dy.data<T>(), *ps = stat.data<T>();
    const T* pw = data_or_null<T>(weight);
    T* pdx = dx.defined() ? dx.data<T>() : nullptr;
    const bool rsqrt_form = form == RmsNormForm::rsqrt;
    const int64_t pieces = row_piece_count(rows, n);
    std::vector<T> partial_w(dweight.defined() ? pieces * n : 0);
    with_flag(pw != nullptr, [&](auto has_weight) {
      constexpr bool kWeight = decltype(has_weight)::value;
      for_row_pieces(pieces, rows, [&](int64_t p, int64_t begin, int64_t end) {
        T* dw = partial_w.empty() ? nullptr : partial_w.data() + p * n;
        for (int64_t r = begin; r < end; ++r) {
          const T *g = pg + r * n, *xr = px + r * n;
          // r from the saved statistic: itself (rsqrt) or 1 / (rms + eps)
          const T rms = rsqrt_form ? T(0) : ps[r];
          const T scale = rsqrt_form ? ps[r] : T(1) / (rms + T(eps));
          const auto h = [&](int64_t i) NF_INLINE_LAMBDA {
            if constexpr (kWeight) return g[i] * pw[i];
            else return g[i];
          };
          if (pdx) {
            // s = sum(h x);  c = r^2 s / n  or  r s / (n rms);  dx = r (h - x c)
            const T s = lane_sum<T>(n, [&](int64_t i) NF_INLINE_LAMBDA { return h(i) * xr[i]; });
            const T c = rsqrt_form ? scale * scale * s / T(n) : (rms > T(0) ? scale * s / (T(n) * rms) : T(0));
            T* dxr = pdx + r * n;
            for (int64_t i = 0; i < n; ++i) dxr[i] = scale * (h(i) - xr[i] * c);
          }
          // dweight += dy x r
          if (dw) {
            for (int64_t i = 0; i < n; ++i) dw[i] += g[i] * (xr[i] * scale);
          }
        }
      });
    });
    if (dweight.defined()) sum_pieces(partial_w, pieces, n, dweight.data<T>());
  });
}

}  // namespace nf::cpu
