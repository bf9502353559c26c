#include "ops/cpu/random.h"

#include <cmath>
#include <numbers>

#include "nanoformer/core/generator.h"
#include "ops/cpu/loops/loops.h"
#include "ops/cpu/simd/scalar_convert.h"

namespace nf::cpu {

void random_fill(const Tensor& out, Distribution dist, double a, double b, uint64_t seed, uint64_t first) {
  visit_dtype(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* p = static_cast<T*>(out.raw_data());
    const bool wide = out.dtype() == DType::f64;
    parallel_for(out.numel(), 4096, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        const auto r = philox4x32(first + static_cast<uint64_t>(i), 0, seed);
        const double u = wide ? uniform01_f64(r[0], r[1]) : uniform01(r[0]);
        double v = 0.0;
        switch (dist) {
          case Distribution::uniform: v = a + (b - a) * u; break;
          case Distribution::bernoulli: v = u < a ? 1.0 : 0.0; break;
          case Distribution::normal: {
            const double u1 = 1.0 - (wide ? uniform01_f64(r[2], r[3]) : uniform01(r[2]));  // (0, 1]
            v = a + b * std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u);
            break;
          }
          case Distribution::randint: {
            const uint64_t range = static_cast<uint64_t>(b - a);
            const uint64_t word = (static_cast<uint64_t>(r[0]) << 32) | r[1];
            v = a + static_cast<double>(word % range);
            break;
          }
        }
        p[i] = convert<T>(v);
      }
    });
  });
}

}  // namespace nf::cpu
