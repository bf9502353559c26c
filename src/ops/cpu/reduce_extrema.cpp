#include "ops/cpu/reduce_extrema.h"

#include <atomic>
#include <cmath>
#include <type_traits>

#include "ops/cpu/loops/elementwise_loops.h"
#include "ops/cpu/loops/reduce_loops.h"

namespace nf::cpu {
namespace {

template <class T>
bool is_nan(T v) {
  if constexpr (std::is_floating_point_v<T>) return std::isnan(v);
  else return false;
}

template <class T>
struct ValueIndex {
  T value;
  int64_t index;
};

// Keeps the first element that no later one beats: strictly greater (max) or smaller (min), with
// NaN beating every number.
template <class T>
struct ExtremumReducer {
  using Acc = ValueIndex<T>;
  Extremum kind;
  Acc init() const { return {T{}, -1}; }
  bool beats(T v, T best) const {
    if (is_nan(best)) return false;
    if (is_nan(v)) return true;
    return kind == Extremum::max ? v > best : v < best;
  }
  void add(Acc& acc, T v, int64_t r) const {
    if (acc.index < 0 || beats(v, acc.value)) acc = {v, r};
  }
  Acc result(const Acc& acc, int64_t) const { return acc; }
};

// Element offset of the row-major flat index `flat` over (shape, strides).
int64_t offset_of_flat(const Shape& shape, const Shape& strides, int64_t flat) {
  int64_t off = 0;
  for (size_t d = shape.size(); d-- > 0;) {
    off += (flat % shape[d]) * strides[d];
    flat /= shape[d];
  }
  return off;
}

}  // namespace

void extremum(const Tensor& values, const Tensor& indices, const Tensor& x, const std::vector<bool>& reduced,
              Extremum kind) {
  visit_arithmetic(x.dtype(), kind == Extremum::max ? "max" : "min", [&](auto tag) {
    using T = decltype(tag);
    std::vector<ValueIndex<T>> best(static_cast<size_t>(indices.numel()));
    reduce_loop<T>(x, reduced, best.data(), ExtremumReducer<T>{kind});
    int64_t* pi = indices.data<int64_t>();
    T* pv = values.defined() ? values.data<T>() : nullptr;
    for (size_t o = 0; o < best.size(); ++o) {
      pi[o] = best[o].index;
      if (pv) pv[o] = best[o].value;
    }
  });
}

void scatter_to_indices(const Tensor& dx, const Tensor& g, const Tensor& indices, const std::vector<bool>& reduced) {
  visit_floating(dx.dtype(), "max/min backward", [&](auto tag) {
    using T = decltype(tag);
    const ReduceLayout l = reduce_layout(dx, reduced);
    T* pdx = dx.data<T>();
    const T* pg = g.data<T>();
    const int64_t* pi = indices.data<int64_t>();
    parallel_for(g.numel(), kParallelGrain, [&](int64_t b, int64_t e) {
      std::vector<int64_t> kept_off;
      offsets_of(l.kept_shape, l.kept_strides, b, e, kept_off);
      for (int64_t o = b; o < e; ++o) {
        pdx[kept_off[static_cast<size_t>(o - b)] + offset_of_flat(l.reduced_shape, l.reduced_strides, pi[o])] = pg[o];
      }
    });
  });
}

void distribute_to_ties(const Tensor& dx, const Tensor& x, const Tensor& value, const Tensor& g) {
  visit_floating(x.dtype(), "max/min backward", [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    T* pdx = dx.data<T>();
    const T v = *value.data<T>();
    const bool nan = is_nan(v);
    const int64_t n = x.numel();
    auto is_tie = [&](T a) { return nan ? is_nan(a) : a == v; };
    std::atomic<int64_t> ties{0};
    parallel_for(n, kParallelGrain, [&](int64_t b, int64_t e) {
      int64_t c = 0;
      for (int64_t i = b; i < e; ++i) c += is_tie(px[i]) ? 1 : 0;
      ties += c;
    });
    // each tie receives an equal share of the upstream gradient
    const T share = *g.data<T>() / static_cast<T>(ties.load());
    parallel_for(n, kParallelGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) pdx[i] = is_tie(px[i]) ? share : T{0};
    });
  });
}

}  // namespace nf::cpu
