#include "ops/cpu/copy.h"

#include <cstring>

#include "ops/cpu/loops.h"
#include "ops/cpu/scalar_convert.h"

namespace nf::cpu {
namespace {

template <class Dst, class Src>
void copy_typed(const Tensor& dst, const Tensor& src) {
  Dst* d = static_cast<Dst*>(dst.raw_data());
  const Src* s = static_cast<const Src*>(src.raw_data());
  for_each_run<2>(dst.shape(), {dst.strides(), src.strides()},
                  [&](std::array<int64_t, 2> off, int64_t n, std::array<int64_t, 2> st) {
                    Dst* dp = d + off[0];
                    const Src* sp = s + off[1];
                    if constexpr (std::is_same_v<Dst, Src>) {
                      if (st[0] == 1 && st[1] == 1) {
                        std::memcpy(dp, sp, static_cast<size_t>(n) * sizeof(Dst));
                        return;
                      }
                    }
                    for (int64_t i = 0; i < n; ++i) dp[i * st[0]] = convert<Dst>(sp[i * st[1]]);
                  });
}

}  // namespace

void copy(const Tensor& dst, const Tensor& src) {
  visit_dtype(dst.dtype(), [&](auto d) {
    visit_dtype(src.dtype(), [&](auto s) { copy_typed<decltype(d), decltype(s)>(dst, src); });
  });
}

}  // namespace nf::cpu
