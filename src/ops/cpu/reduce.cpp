#include "ops/cpu/reduce.h"

#include <type_traits>

#include "ops/cpu/elementwise_loops.h"
#include "ops/cpu/reduce_loops.h"

namespace nf::cpu {
namespace {

template <class T>
struct SumReducer {
  using Acc = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;
  Acc init() const { return 0; }
  void add(Acc& acc, T v, int64_t) const { acc += static_cast<Acc>(v); }
  T result(const Acc& acc, int64_t) const { return static_cast<T>(acc); }
};

}  // namespace

void sum(const Tensor& out, const Tensor& x, const std::vector<bool>& reduced) {
  visit_arithmetic(x.dtype(), "sum", [&](auto tag) {
    using T = decltype(tag);
    reduce_loop<T, T>(x, reduced, out, SumReducer<T>{});
  });
}

}  // namespace nf::cpu
