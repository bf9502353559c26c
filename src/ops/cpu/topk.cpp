#include "ops/cpu/topk.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "ops/cpu/loops/elementwise_loops.h"
#include "ops/cpu/loops/loops.h"

namespace nf::cpu {

// Each row: a partial sort of its positions by (value descending, position ascending).
void topk_indices(const Tensor& indices, const Tensor& x) {
  const int64_t n = x.size(-1), k = indices.size(-1), rows = indices.numel() / std::max<int64_t>(k, 1);
  if (k == 0) return;
  visit_floating(x.dtype(), "topk", [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    int64_t* pi = indices.data<int64_t>();
    parallel_for(rows, std::max<int64_t>(1, kParallelGrain / n), [&](int64_t begin, int64_t end) {
      std::vector<int64_t> order(static_cast<size_t>(n));
      for (int64_t r = begin; r < end; ++r) {
        const T* row = px + r * n;
        // a before b  <=>  row[a] > row[b], NaN above every number, equal values by position
        auto before = [row](int64_t a, int64_t b) {
          const bool na = std::isnan(row[a]), nb = std::isnan(row[b]);
          if (na || nb) return na && (!nb || a < b);
          return row[a] > row[b] || (row[a] == row[b] && a < b);
        };
        std::iota(order.begin(), order.end(), int64_t{0});
        std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
        std::copy(order.begin(), order.begin() + k, pi + r * k);
      }
    });
  });
}

}  // namespace nf::cpu
