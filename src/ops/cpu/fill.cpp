#include "ops/cpu/fill.h"

#include "ops/cpu/loops/loops.h"
#include "ops/cpu/simd/scalar_convert.h"

namespace nf::cpu {

void fill(const Tensor& x, double value) {
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T v = convert<T>(value);
    T* p = static_cast<T*>(x.raw_data());
    for_each_run<1>(x.shape(), {x.strides()}, [&](std::array<int64_t, 1> off, int64_t n, std::array<int64_t, 1> st) {
      for (int64_t i = 0; i < n; ++i) p[off[0] + i * st[0]] = v;
    });
  });
}

}  // namespace nf::cpu
