#include "ops/cpu/gemv.h"

#include <immintrin.h>

#include <algorithm>

#include "nanoformer/core/error.h"
#include "ops/cpu/loops.h"


namespace nf::cpu {
namespace {

// The vector unit the build targets: `width` floats per register, fused multiply-add, and a load
// of the first n < width floats (the rest zero) for the tail of a row.
#if defined(__AVX512F__)
struct Simd {
  using V = __m512;
  static constexpr int64_t width = 16;
  static V zero() { return _mm512_setzero_ps(); }
  static V load(const float* p) { return _mm512_loadu_ps(p); }
  static V load_first(const float* p, int64_t n) { return _mm512_maskz_loadu_ps(static_cast<__mmask16>((1u << n) - 1), p); }
  static V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static float sum(V v) {  // halves, then quarters, added within the register (the masked forms:
                           // GCC 12's unmasked ones trip -Wmaybe-uninitialized on their filler)
    v = _mm512_add_ps(v, _mm512_mask_shuffle_f32x4(v, 0xffff, v, v, 0b01001110));
    v = _mm512_add_ps(v, _mm512_mask_shuffle_f32x4(v, 0xffff, v, v, 0b10110001));
    __m128 s = _mm512_mask_extractf32x4_ps(_mm_setzero_ps(), 0xf, v, 0);
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
  }
};
#elif defined(__AVX2__) && defined(__FMA__)
struct Simd {
  using V = __m256;
  static constexpr int64_t width = 8;
  static V zero() { return _mm256_setzero_ps(); }
  static V load(const float* p) { return _mm256_loadu_ps(p); }
  static V load_first(const float* p, int64_t n) {
    const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_maskload_ps(p, _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)), lanes));  // lane < n
  }
  static V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static float sum(V v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
  }
};
#else
struct Simd {
  using V = float;
  static constexpr int64_t width = 1;
  static V zero() { return 0.0f; }
  static V load(const float* p) { return *p; }
  static V load_first(const float* p, int64_t) { return *p; }
  static V fma(V a, V b, V c) { return a * b + c; }
  static float sum(V v) { return v; }
};
#endif

// Output rows of W streamed together per block: 4 x 4 accumulators + 4 + 1 loads fit AVX-512's
// 32 registers; four sequential streams are what the hardware prefetchers follow best.
constexpr int64_t kBlockRows = 4;
constexpr int64_t kLineFloats = 16;  // a 64-byte cache line

// y[r, j] = sum_k x[r, k] w[j, k] + b[j] for r < R, j < Cols: Cols rows of W read once each, every
// element multiplied into all R input rows. The same columns of the rows at `ahead` (the next
// block) are prefetched into L2 meanwhile: a row of a few KiB is too short a stream for the
// hardware prefetchers to ramp up on (measured: 11 -> 18 GB/s on one Zen 4 core reading 24).
template <int R, int Cols>
[[gnu::always_inline]] inline void dot_block(const float* x, int64_t ldx, const float* w, int64_t ldw, int64_t K,
                                             const float* bias, float* y, int64_t ldy, const float* ahead) {
  typename Simd::V acc[R][Cols];
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < Cols; ++c) acc[r][c] = Simd::zero();
  const auto step = [&](int64_t k, auto load) {
    typename Simd::V wv[Cols];
    for (int c = 0; c < Cols; ++c) wv[c] = load(w + c * ldw + k);
    if (Simd::width >= kLineFloats || k % kLineFloats == 0)  // once per cache line
      for (int c = 0; c < Cols; ++c) _mm_prefetch(reinterpret_cast<const char*>(ahead + c * ldw + k), _MM_HINT_T1);
    for (int r = 0; r < R; ++r) {
      const typename Simd::V xv = load(x + r * ldx + k);
      for (int c = 0; c < Cols; ++c) acc[r][c] = Simd::fma(xv, wv[c], acc[r][c]);
    }
  };
  int64_t k = 0;
  for (; k + Simd::width <= K; k += Simd::width) step(k, [](const float* p) { return Simd::load(p); });
  if (k < K) step(k, [n = K - k](const float* p) { return Simd::load_first(p, n); });
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < Cols; ++c) y[r * ldy + c] = Simd::sum(acc[r][c]) + (bias ? bias[c] : 0.0f);
}

template <int R>
void gemv_rows(const float* x, int64_t ldx, const float* w, int64_t ldw, int64_t N, int64_t K, const float* bias, float* y) {
  const int64_t blocks = (N + kBlockRows - 1) / kBlockRows;
  const int64_t grain = std::max<int64_t>(1, kParallelGrain / (kBlockRows * std::max<int64_t>(K, 1)));
  parallel_for(blocks, grain, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) {
      const int64_t n0 = b * kBlockRows;
      if (n0 + kBlockRows <= N) {
        const bool next_is_full = b + 1 < end && n0 + 2 * kBlockRows <= N;  // else the block prefetches itself
        const float* ahead = w + (next_is_full ? n0 + kBlockRows : n0) * ldw;
        dot_block<R, kBlockRows>(x, ldx, w + n0 * ldw, ldw, K, bias ? bias + n0 : nullptr, y + n0, N, ahead);
        continue;
      }
      for (int64_t n = n0; n < N; ++n) dot_block<R, 1>(x, ldx, w + n * ldw, ldw, K, bias ? bias + n : nullptr, y + n, N, w + n * ldw);
    }
  });
}

}  // namespace

bool gemv_applies(const Tensor& x, const Tensor& weight) {
  return x.dtype() == DType::f32 && weight.dtype() == DType::f32 && x.dim() == 2 && weight.dim() == 2 &&
         x.size(0) >= 1 && x.size(0) <= kGemvMaxRows && (x.size(1) <= 1 || x.stride(1) == 1) &&
         (weight.size(1) <= 1 || weight.stride(1) == 1);
}

void linear_gemv(const Tensor& y, const Tensor& x, const Tensor& weight, const Tensor& bias) {
  NF_CHECK(gemv_applies(x, weight) && y.is_contiguous(), "linear_gemv: unsupported operands x ", shape_str(x.shape()),
           " and weight ", shape_str(weight.shape()));
  const int64_t R = x.size(0), N = weight.size(0), K = x.size(1);
  const Tensor b = bias.defined() ? bias.contiguous() : Tensor();
  for (int64_t r0 = 0; r0 < R; r0 += kGemvRowsPerPass) {  // one pass over W per 4 rows
    const auto run = [&]<int Rows>() {
      gemv_rows<Rows>(x.data<float>() + r0 * x.stride(0), x.stride(0), weight.data<float>(), weight.stride(0), N, K,
                      b.defined() ? b.data<float>() : nullptr, y.data<float>() + r0 * N);
    };
    switch (std::min(R - r0, kGemvRowsPerPass)) {
      case 1: run.operator()<1>(); break;
      case 2: run.operator()<2>(); break;
      case 3: run.operator()<3>(); break;
      default: run.operator()<4>(); break;
    }
  }
}

}  // namespace nf::cpu
