#pragma once
// Naive f64 references for the elementwise tests: plain loops over multi-indices with numpy
// broadcasting written out, independent of the library's loop machinery.
#include <algorithm>
#include <functional>
#include <vector>

#include "nanoformer/nanoformer.h"

namespace nf::testing {

using Index = std::vector<int64_t>;
using Fn2 = std::function<double(double, double)>;

// Every multi-index of `shape`, row-major.
inline std::vector<Index> indices_of(const Shape& shape) {
  std::vector<Index> out;
  Index idx(shape.size(), 0);
  for (int64_t i = 0; i < shape_numel(shape); ++i) {
    out.push_back(idx);
    for (size_t d = shape.size(); d-- > 0;) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

// numpy broadcasting written out: align trailing dims, size 1 stretches.
inline Shape naive_broadcast(const Shape& a, const Shape& b) {
  const size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    out[i] = da == 1 ? db : da;
  }
  return out;
}

// The element of an operand of shape `s` that broadcasts to output index `idx`.
inline Index operand_index(const Shape& s, const Index& idx) {
  Index r(s.size());
  const size_t lead = idx.size() - s.size();
  for (size_t d = 0; d < s.size(); ++d) r[d] = s[d] == 1 ? 0 : idx[lead + d];
  return r;
}

// out = f(a, b) elementwise over the broadcast shape, in f64
inline Tensor naive_binary(const Tensor& a, const Tensor& b, const Fn2& f) {
  const Shape shape = naive_broadcast(a.shape(), b.shape());
  Tensor out = zeros(shape, DType::f64);
  for (const Index& idx : indices_of(shape)) {
    out.set(idx, f(a.at(operand_index(a.shape(), idx)), b.at(operand_index(b.shape(), idx))));
  }
  return out;
}

// out = f(x) elementwise, in f64
inline Tensor naive_unary(const Tensor& x, const std::function<double(double)>& f) {
  Tensor out = zeros(x.shape(), DType::f64);
  for (const Index& idx : indices_of(x.shape())) out.set(idx, f(x.at(idx)));
  return out;
}

inline Tensor randn_f64(const Shape& shape, uint64_t seed) {
  Generator gen(seed);
  return randn(shape, gen, DType::f64);
}

}  // namespace nf::testing
