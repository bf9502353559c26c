// The decode product's tiles for the float weight types (F32, F16, BF16): W converted and
// multiplied into x unquantised, f32 sums; up to 4 rows of x at once.
#include <immintrin.h>

#include <span>

#include "nanoformer/core/dtype.h"
#include "ops/cpu/quant/gemv_driver.h"
#include "ops/cpu/quant/gemv_tile.h"
#include "ops/cpu/quant/type_kernels.h"
#include "ops/cpu/simd/simd.h"

namespace nf::cpu {
namespace {

struct F32W {
  static float get(const unsigned char* w, int64_t i) { return reinterpret_cast<const float*>(w)[i]; }
#if defined(__AVX2__) && defined(__FMA__)
  static __m256 load8(const unsigned char* w, int64_t i) { return _mm256_loadu_ps(reinterpret_cast<const float*>(w) + i); }
#endif
  [[maybe_unused]] static constexpr int64_t kBytes = 4;
};
struct F16W {
  static float get(const unsigned char* w, int64_t i) { return f16_to_float(reinterpret_cast<const uint16_t*>(w)[i]); }
#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
  static __m256 load8(const unsigned char* w, int64_t i) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(reinterpret_cast<const uint16_t*>(w) + i)));
  }
#endif
  [[maybe_unused]] static constexpr int64_t kBytes = 2;
};
struct BF16W {
  static float get(const unsigned char* w, int64_t i) { return bf16_bits_to_float(reinterpret_cast<const uint16_t*>(w)[i]); }
#if defined(__AVX2__) && defined(__FMA__)
  static __m256 load8(const unsigned char* w, int64_t i) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(reinterpret_cast<const uint16_t*>(w) + i));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  }
#endif
  [[maybe_unused]] static constexpr int64_t kBytes = 2;
};

template <class W>
constexpr bool has_avx2_load() {
  return requires(const unsigned char* w) { W::load8(w, int64_t{0}); };
}

// y[r][c] = sum_k x[r][k] w[c][k]: 8 values at a time where the build has AVX2, the tail scalar
template <class W, int R, int C, bool kPrefetch>
void tile_float(const TileArgs& t) {
  float sums[R][C] = {};
  int64_t k = 0;
#if defined(__AVX2__) && defined(__FMA__)
  if constexpr (has_avx2_load<W>()) {
    __m256 acc[R][C];
    for (int r = 0; r < R; ++r)
      for (int c = 0; c < C; ++c) acc[r][c] = _mm256_setzero_ps();
    for (; k + 8 <= t.k; k += 8) {
      for (int c = 0; c < C; ++c) {
        const unsigned char* wc = t.w + c * t.row_bytes;
        if constexpr (kPrefetch)
          if ((k * W::kBytes) % 64 == 0) prefetch(t.ahead + c * t.row_bytes + k * W::kBytes);
        const __m256 wv = W::load8(wc, k);
        for (int r = 0; r < R; ++r) acc[r][c] = _mm256_fmadd_ps(_mm256_loadu_ps(t.x + (t.r0 + r) * t.ldx + k), wv, acc[r][c]);
      }
    }
    for (int r = 0; r < R; ++r)
      for (int c = 0; c < C; ++c) sums[r][c] = hsum(acc[r][c]);
  }
#endif
  for (; k < t.k; ++k)
    for (int c = 0; c < C; ++c)
      for (int r = 0; r < R; ++r) sums[r][c] += t.x[(t.r0 + r) * t.ldx + k] * W::get(t.w + c * t.row_bytes, k);
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) t.store(r, c, sums[r][c]);
}

template <class W>
struct FloatTiles {
  template <int R, int C, bool P>
  struct K {
    static void run(const TileArgs& t) { tile_float<W, R, C, P>(t); }
  };
};

}  // namespace

// (one path for the float types: `scalar` changes nothing)
void gemv_f32(std::span<TileArgs> bases, int64_t m, bool) { gemv_rows<FloatTiles<F32W>::K>(bases, m); }
void gemv_f16(std::span<TileArgs> bases, int64_t m, bool) { gemv_rows<FloatTiles<F16W>::K>(bases, m); }
void gemv_bf16(std::span<TileArgs> bases, int64_t m, bool) { gemv_rows<FloatTiles<BF16W>::K>(bases, m); }

}  // namespace nf::cpu
