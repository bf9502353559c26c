#pragma once
// Loop machinery shared by the CPU kernels.
//
// for_each_run(shape, strides, fn) visits every element of an N-operand elementwise operation over
// `shape`: each operand has its own element strides (0 on broadcast dims). Dims that are
// contiguous in every operand are merged first, so a contiguous op becomes one flat run. The flat
// element range is split evenly across threads; each thread receives "runs" along the innermost
// dim: fn(offsets, n, inner_strides) with the element offset of each operand at the run's start.
#include <omp.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <exception>
#include <type_traits>

#include "core/thread_team.h"
#include "nanoformer/core/parallel.h"
#include "nanoformer/core/tensor.h"

namespace nf::cpu {

// Runs fn(begin, end) over [0, n) split into contiguous pieces across threads, or inline when n
// is below `grain` (work too small to pay for waking threads). Inside with_thread_team the pieces
// go to the team's waiting threads (core/thread_team.h), else to an OpenMP region of their own. A
// piece's exception is rethrown to the caller once every piece has run.
template <class Fn>
void parallel_for(int64_t n, int64_t grain, Fn&& fn) {
  const int team = team::size(), threads = team > 0 ? team : num_threads();
  if (n <= grain || threads <= 1) {
    if (n > 0) fn(int64_t{0}, n);
    return;
  }
  const int64_t pieces = std::min<int64_t>(threads, (n + grain - 1) / grain);
  if (team > 0) {
    using F = std::remove_reference_t<Fn>;
    team::run(n, pieces, [](void* f, int64_t begin, int64_t end) { (*static_cast<F*>(f))(begin, end); },
              const_cast<void*>(static_cast<const void*>(&fn)));
    return;
  }
  std::exception_ptr error;  // the first piece's exception, rethrown here (none may leave the region)
#pragma omp parallel for num_threads(static_cast<int>(pieces)) schedule(static)
  for (int64_t p = 0; p < pieces; ++p) {
    const int64_t begin = n * p / pieces, end = n * (p + 1) / pieces;
    try {
      if (begin < end) fn(begin, end);
    } catch (...) {
#pragma omp critical(nf_parallel_for_error)
      if (!error) error = std::current_exception();
    }
  }
  if (error) std::rethrow_exception(error);
}

// Drops size-1 dims and merges neighbours that are contiguous in every operand.
template <size_t N>
void coalesce(Shape& shape, std::array<Shape, N>& strides) {
  Shape out_shape;
  std::array<Shape, N> out_strides;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    bool merge = !out_shape.empty();
    for (size_t k = 0; k < N && merge; ++k) merge = out_strides[k].back() == strides[k][d] * shape[d];
    if (merge) {
      out_shape.back() *= shape[d];
      for (size_t k = 0; k < N; ++k) out_strides[k].back() = strides[k][d];
    } else {
      out_shape.push_back(shape[d]);
      for (size_t k = 0; k < N; ++k) out_strides[k].push_back(strides[k][d]);
    }
  }
  shape = std::move(out_shape);
  strides = std::move(out_strides);
}

template <size_t N, class RunFn>
void for_each_run(Shape shape, std::array<Shape, N> strides, RunFn&& fn) {
  const int64_t total = shape_numel(shape);
  if (total == 0) return;
  coalesce(shape, strides);
  if (shape.empty()) {  // a single element
    fn(std::array<int64_t, N>{}, int64_t{1}, std::array<int64_t, N>{});
    return;
  }
  const int64_t inner = shape.back();
  const size_t outer_dims = shape.size() - 1;
  std::array<int64_t, N> inner_strides;
  for (size_t k = 0; k < N; ++k) inner_strides[k] = strides[k].back();

  parallel_for(total, kParallelGrain, [&](int64_t begin, int64_t end) {
    // position of `begin`: row index decomposed over the outer dims, plus a column
    int64_t row = begin / inner, col = begin % inner;
    Shape idx(outer_dims);
    for (size_t d = outer_dims; d-- > 0;) {
      idx[d] = row % shape[d];
      row /= shape[d];
    }
    int64_t pos = begin;
    while (pos < end) {
      std::array<int64_t, N> off{};
      for (size_t k = 0; k < N; ++k) {
        for (size_t d = 0; d < outer_dims; ++d) off[k] += idx[d] * strides[k][d];
        off[k] += col * inner_strides[k];
      }
      const int64_t n = std::min(inner - col, end - pos);
      fn(off, n, inner_strides);
      pos += n;
      col = 0;
      for (size_t d = outer_dims; d-- > 0;) {
        if (++idx[d] < shape[d]) break;
        idx[d] = 0;
      }
    }
  });
}

// Strides of `t` seen over `shape` (t's shape must broadcast to it): 0 on broadcast dims.
inline Shape broadcast_strides(const Tensor& t, const Shape& shape) {
  Shape s(shape.size(), 0);
  const size_t lead = shape.size() - t.shape().size();
  for (size_t d = 0; d < t.shape().size(); ++d) {
    s[lead + d] = t.shape()[d] == 1 ? 0 : t.strides()[d];
  }
  return s;
}

}  // namespace nf::cpu
