#pragma once
// reduce_loop: out[o] = fold over the reduced elements r of x's slice o, for any set of reduced
// dims. A Reducer supplies:
//   using Acc;  Acc init();  void add(Acc&, T value, int64_t r);  Out result(const Acc&, int64_t count)
// where r is the flat (row-major) index of the element within the reduced dims, so arg-reducers
// know positions. Two loop orders keep memory access sequential:
//  - the innermost dim of x is reduced: each output folds its own contiguous run (parallel over o);
//  - it is kept: a block of outputs is folded together, reduced index outermost, so consecutive
//    outputs read consecutive memory (parallel over output blocks).
#include <vector>

#include "ops/cpu/loops/loops.h"

namespace nf::cpu {

struct ReduceLayout {
  Shape kept_shape, kept_strides;        // x's kept dims (output order)
  Shape reduced_shape, reduced_strides;  // x's reduced dims (row-major order of r)
};

inline ReduceLayout reduce_layout(const Tensor& x, const std::vector<bool>& reduced) {
  ReduceLayout l;
  for (int64_t d = 0; d < x.dim(); ++d) {
    (reduced[d] ? l.reduced_shape : l.kept_shape).push_back(x.shape()[d]);
    (reduced[d] ? l.reduced_strides : l.kept_strides).push_back(x.strides()[d]);
  }
  return l;
}

// Element offsets (in x) of a row-major index range [begin, end) over (shape, strides).
inline void offsets_of(const Shape& shape, const Shape& strides, int64_t begin, int64_t end, std::vector<int64_t>& out) {
  out.resize(static_cast<size_t>(end - begin));
  if (begin >= end) return;  // nothing to visit (a zero-size dim: no index to divide by)
  Shape idx(shape.size());
  int64_t rest = begin;
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = rest % shape[d];
    rest /= shape[d];
  }
  for (int64_t i = begin; i < end; ++i) {
    int64_t off = 0;
    for (size_t d = 0; d < shape.size(); ++d) off += idx[d] * strides[d];
    out[static_cast<size_t>(i - begin)] = off;
    for (size_t d = shape.size(); d-- > 0;) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
}

// Writes the n_out results to po[0, n_out) in the kept dims' row-major order. Out may be any
// type (a value-index pair for the arg-reducers), so the results need not live in a Tensor.
template <class T, class Out, class Reducer>
void reduce_loop(const Tensor& x, const std::vector<bool>& reduced, Out* po, const Reducer& red) {
  const ReduceLayout l = reduce_layout(x, reduced);
  const int64_t n_out = shape_numel(l.kept_shape);
  const int64_t n_red = shape_numel(l.reduced_shape);
  const T* px = static_cast<const T*>(x.raw_data());
  const bool inner_reduced = x.dim() > 0 && reduced[x.dim() - 1];
  if (n_out == 0) return;

  if (inner_reduced || n_red == 0) {
    parallel_for(n_out, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(n_red, 1)), [&](int64_t b, int64_t e) {
      std::vector<int64_t> kept_off, red_off;
      offsets_of(l.kept_shape, l.kept_strides, b, e, kept_off);
      // the reduced space as (outer rows) x (innermost reduced dim): one run per row
      const int64_t inner = l.reduced_shape.empty() ? 1 : l.reduced_shape.back();
      const int64_t inner_stride = l.reduced_strides.empty() ? 0 : l.reduced_strides.back();
      const Shape outer_shape(l.reduced_shape.begin(), l.reduced_shape.end() - (l.reduced_shape.empty() ? 0 : 1));
      const Shape outer_strides(l.reduced_strides.begin(), l.reduced_strides.end() - (l.reduced_strides.empty() ? 0 : 1));
      const int64_t n_rows = n_red == 0 ? 0 : n_red / inner;
      offsets_of(outer_shape, outer_strides, 0, n_rows, red_off);
      for (int64_t o = b; o < e; ++o) {
        typename Reducer::Acc acc = red.init();
        const T* base = px + kept_off[static_cast<size_t>(o - b)];
        for (int64_t row = 0; row < n_rows; ++row) {
          const T* p = base + red_off[static_cast<size_t>(row)];
          const int64_t r0 = row * inner;
          for (int64_t i = 0; i < inner; ++i) red.add(acc, p[i * inner_stride], r0 + i);
        }
        po[o] = red.result(acc, n_red);
      }
    });
    return;
  }

  parallel_for(n_out, std::max<int64_t>(1, kParallelGrain / n_red), [&](int64_t b, int64_t e) {
    std::vector<int64_t> kept_off, red_off;
    offsets_of(l.kept_shape, l.kept_strides, b, e, kept_off);
    offsets_of(l.reduced_shape, l.reduced_strides, 0, n_red, red_off);
    std::vector<typename Reducer::Acc> acc(static_cast<size_t>(e - b), red.init());
    for (int64_t r = 0; r < n_red; ++r) {
      const T* p = px + red_off[static_cast<size_t>(r)];
      for (int64_t o = 0; o < e - b; ++o) red.add(acc[static_cast<size_t>(o)], p[kept_off[static_cast<size_t>(o)]], r);
    }
    for (int64_t o = b; o < e; ++o) po[o] = red.result(acc[static_cast<size_t>(o - b)], n_red);
  });
}

// The same, into `out`: a contiguous tensor of Out with the kept dims' shape.
template <class T, class Out, class Reducer>
void reduce_loop(const Tensor& x, const std::vector<bool>& reduced, const Tensor& out, const Reducer& red) {
  reduce_loop<T, Out>(x, reduced, static_cast<Out*>(out.raw_data()), red);
}

}  // namespace nf::cpu
