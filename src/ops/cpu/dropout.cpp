#include "ops/cpu/dropout.h"

#include "nanoformer/core/generator.h"
#include "ops/cpu/loops/elementwise_loops.h"

namespace nf::cpu {

void dropout_apply(const Tensor& out, const Tensor& x, double keep_prob, double scale, uint64_t seed, uint64_t first) {
  visit_floating(x.dtype(), "dropout", [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    T* po = out.data<T>();
    const T s = static_cast<T>(scale);
    const bool wide = x.dtype() == DType::f64;
    // Philox costs far more than the multiply: split work finer than the elementwise grain.
    parallel_for(x.numel(), 4096, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        const auto r = philox4x32(first + static_cast<uint64_t>(i), 0, seed);
        const double u = wide ? uniform01_f64(r[0], r[1]) : uniform01(r[0]);
        po[i] = u < keep_prob ? px[i] * s : T{0};
      }
    });
  });
}

}  // namespace nf::cpu
