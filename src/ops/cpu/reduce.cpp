#include "ops/cpu/reduce.h"

#include <algorithm>
#include <type_traits>

#include "ops/cpu/loops/elementwise_loops.h"
#include "ops/cpu/loops/reduce_loops.h"

namespace nf::cpu {
namespace {

template <class T>
struct SumReducer {
  using Acc = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;
  Acc init() const { return 0; }
  void add(Acc& acc, T v, int64_t) const { acc += static_cast<Acc>(v); }
  T result(const Acc& acc, int64_t) const { return static_cast<T>(acc); }
};

// mean = (sum x) / count
template <class T>
struct MeanReducer {
  using Acc = double;
  Acc init() const { return 0; }
  void add(Acc& acc, T v, int64_t) const { acc += static_cast<double>(v); }
  T result(const Acc& acc, int64_t count) const { return static_cast<T>(acc / static_cast<double>(count)); }
};

// Welford: after n values, mean_n = mean_{n-1} + (x - mean_{n-1}) / n and
// m2_n = m2_{n-1} + (x - mean_{n-1}) (x - mean_n); var = m2 / (count - correction).
template <class T>
struct VarReducer {
  struct Acc {
    int64_t n = 0;
    double mean = 0, m2 = 0;
  };
  int64_t correction = 1;
  Acc init() const { return {}; }
  void add(Acc& acc, T v, int64_t) const {
    const double x = static_cast<double>(v);
    const double delta = x - acc.mean;
    acc.n += 1;
    acc.mean += delta / static_cast<double>(acc.n);
    acc.m2 += delta * (x - acc.mean);
  }
  T result(const Acc& acc, int64_t count) const {
    const double dof = static_cast<double>(std::max<int64_t>(0, count - correction));
    return static_cast<T>(acc.m2 / dof);
  }
};

}  // namespace

void sum(const Tensor& out, const Tensor& x, const std::vector<bool>& reduced) {
  visit_arithmetic(x.dtype(), "sum", [&](auto tag) {
    using T = decltype(tag);
    reduce_loop<T, T>(x, reduced, out, SumReducer<T>{});
  });
}

void mean(const Tensor& out, const Tensor& x, const std::vector<bool>& reduced) {
  visit_floating(x.dtype(), "mean", [&](auto tag) {
    using T = decltype(tag);
    reduce_loop<T, T>(x, reduced, out, MeanReducer<T>{});
  });
}

void var(const Tensor& out, const Tensor& x, const std::vector<bool>& reduced, int64_t correction) {
  visit_floating(x.dtype(), "var", [&](auto tag) {
    using T = decltype(tag);
    reduce_loop<T, T>(x, reduced, out, VarReducer<T>{.correction = correction});
  });
}

}  // namespace nf::cpu
