#include "ops/cpu/loss.h"

#include <algorithm>
#include <cmath>

#include "nanoformer/core/error.h"
#include "ops/cpu/loops/elementwise_loops.h"
#include "ops/cpu/simd/row_reductions.h"
#include "ops/cpu/simd/vector_math.h"

namespace nf::cpu {
namespace {

template <class I>
int64_t check_targets(const I* target, int64_t rows, int64_t classes, int64_t ignore_index) {
  int64_t kept = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t t = static_cast<int64_t>(target[r]);
    if (t == ignore_index) continue;
    NF_CHECK(t >= 0 && t < classes, "cross_entropy: target ", t, " at row ", r, " is out of range for C = ", classes,
             " classes (expected 0 to ", classes - 1, ", or ignore_index ", ignore_index, ")");
    ++kept;
  }
  return kept;
}

// Rows per thread piece: about kParallelGrain logits each.
int64_t row_grain(int64_t classes) { return std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(classes, 1)); }

}  // namespace

int64_t cross_entropy_forward(const Tensor& loss, const Tensor& stats, const Tensor& logits, const Tensor& target,
                              int64_t ignore_index) {
  const int64_t rows = logits.size(0), classes = logits.size(1);
  int64_t kept = 0;
  visit_floating(logits.dtype(), "cross_entropy", [&](auto tag) {
    using T = decltype(tag);
    visit_index(target.dtype(), "cross_entropy", [&](auto index_tag) {
      using I = decltype(index_tag);
      const I* pt = target.data<I>();
      kept = check_targets(pt, rows, classes, ignore_index);
      const T* px = logits.data<T>();
      T* pl = loss.data<T>();
      T* ps = stats.data<T>();
      parallel_for(rows, row_grain(classes), [&](int64_t b, int64_t e) {
        for (int64_t r = b; r < e; ++r) {
          const int64_t t = static_cast<int64_t>(pt[r]);
          if (t == ignore_index) {
            pl[r] = T{0};
            ps[2 * r] = ps[2 * r + 1] = T{0};
            continue;
          }
          // loss = logsumexp(x) - x[t] = (m - x[t]) + log sum e^(x - m)
          const T* x = px + r * classes;
          const T m = row_max(x, classes);
          const T log_sum = std::log(lane_sum<T>(classes, [&](int64_t i) { return vmath::exp(x[i] - m); }));
          ps[2 * r] = m;
          ps[2 * r + 1] = log_sum;
          pl[r] = (m - x[t]) + log_sum;
        }
      });
    });
  });
  return kept;
}

void cross_entropy_backward(const Tensor& dlogits, const Tensor& logits, const Tensor& target, const Tensor& stats,
                            const Tensor& grad, double scale, int64_t ignore_index) {
  const int64_t rows = logits.size(0), classes = logits.size(1);
  visit_floating(logits.dtype(), "cross_entropy backward", [&](auto tag) {
    using T = decltype(tag);
    visit_index(target.dtype(), "cross_entropy", [&](auto index_tag) {
      using I = decltype(index_tag);
      const I* pt = target.data<I>();
      const T* px = logits.data<T>();
      const T* ps = stats.data<T>();
      const T* pg = grad.data<T>();
      const bool per_row = grad.dim() == 1;
      T* pdx = dlogits.data<T>();
      parallel_for(rows, row_grain(classes), [&](int64_t b, int64_t e) {
        for (int64_t r = b; r < e; ++r) {
          T* dx = pdx + r * classes;
          const int64_t t = static_cast<int64_t>(pt[r]);
          if (t == ignore_index) {
            std::fill_n(dx, classes, T{0});
            continue;
          }
          // dx = (softmax(x) - onehot(t)) w
          const T* x = px + r * classes;
          const T w = static_cast<T>(scale) * pg[per_row ? r : 0];
          const T m = ps[2 * r], log_sum = ps[2 * r + 1];
          for (int64_t i = 0; i < classes; ++i) dx[i] = vmath::exp((x[i] - m) - log_sum) * w;
          dx[t] -= w;
        }
      });
    });
  });
}

}  // namespace nf::cpu
