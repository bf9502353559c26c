#include "ops/cpu/copy.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include "ops/cpu/loops/loops.h"
#include "ops/cpu/simd/scalar_convert.h"

namespace nf::cpu {
namespace {

// dst[i] = convert(src[i]) over n contiguous elements: a loop the compiler vectorises (bf16), or
// the F16C instructions for f16, whose round to nearest even gives the scalar conversion's bits
// (NaN payloads aside).
template <class Dst, class Src>
void convert_run(Dst* dst, const Src* src, int64_t n) {
  int64_t i = 0;
#if defined(__F16C__)
  if constexpr (std::is_same_v<Dst, f16> && std::is_same_v<Src, float>) {
    for (; i + 8 <= n; i += 8) {
      const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), h);
    }
  } else if constexpr (std::is_same_v<Dst, float> && std::is_same_v<Src, f16>) {
    for (; i + 8 <= n; i += 8) {
      _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
    }
  }
#endif
  for (; i < n; ++i) dst[i] = convert<Dst>(src[i]);
}

template <class Dst, class Src>
void copy_typed(const Tensor& dst, const Tensor& src) {
  Dst* d = static_cast<Dst*>(dst.raw_data());
  const Src* s = static_cast<const Src*>(src.raw_data());
  for_each_run<2>(dst.shape(), {dst.strides(), src.strides()},
                  [&](std::array<int64_t, 2> off, int64_t n, std::array<int64_t, 2> st) {
                    Dst* dp = d + off[0];
                    const Src* sp = s + off[1];
                    if (st[0] == 1 && st[1] == 1) {
                      if constexpr (std::is_same_v<Dst, Src>) {
                        std::memcpy(dp, sp, static_cast<size_t>(n) * sizeof(Dst));
                      } else {
                        convert_run(dp, sp, n);
                      }
                      return;
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

Tensor convert_keeping_layout(const Tensor& src, DType dtype) {
  // (stride, size) of the dims that step through memory, innermost first
  std::vector<std::pair<int64_t, int64_t>> dims;
  for (int64_t d = 0; d < src.dim(); ++d) {
    if (src.shape()[d] > 1 && src.strides()[d] != 0) dims.emplace_back(src.strides()[d], src.shape()[d]);
  }
  std::sort(dims.begin(), dims.end());
  int64_t span = 1;  // dense: each dim's stride is the product of the sizes inside it
  bool dense = true;
  for (const auto& [stride, size] : dims) {
    dense = dense && stride == span;
    span *= size;
  }
  if (!dense || src.numel() == 0) {
    Tensor out = Tensor::empty(src.shape(), dtype, src.device());
    copy(out, src);
    return out;
  }
  const Tensor block = Tensor::from_storage(src.storage(), {span}, {1}, src.offset(), src.dtype());
  Tensor converted = Tensor::empty({span}, dtype, src.device());
  copy(converted, block);
  return Tensor::from_storage(converted.storage(), src.shape(), src.strides(), 0, dtype);
}

}  // namespace nf::cpu
