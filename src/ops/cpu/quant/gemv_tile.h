#pragma once
// What the decode product's driver (gemv_driver.h) hands a tile: R rows of x, C rows of W, where
// the outputs go; and the few vector helpers the tiles of every weight type share. The tiles are
// per type family: tiles_q32.cpp (Q8_0 .. Q5_1), tiles_k.cpp and tiles_k_vnni.cpp (the K types), tiles_float.cpp (F32,
// F16, BF16).
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "ops/cpu/quant/activation_quant.h"

namespace nf::cpu {

struct PairedActivations;  // tiles_q32.cpp

// The rows of x a tile multiplies into: activation rows r0 .. r0 + R of `a` (quantised types) or
// of x itself (the float types), and where the outputs go.
struct TileArgs {
  const unsigned char* w;      // the first weight row of the tile
  size_t row_bytes;            // bytes between the tile's weight rows
  const unsigned char* ahead;  // rows further along the same streams, prefetched meanwhile
  int64_t k;                   // values per row
  const QuantizedActivations* a;
  const float* x;
  int64_t ldx;
  int64_t r0;
  float* y;  // y[r * ldy + c * ystride] for r < R, c < C
  int64_t ldy;
  const float* bias;  // bias[c * ystride], or null
  const PairedActivations* pairs = nullptr;  // x laid out for the 4- and 5-bit types (AVX2)
  int64_t ystride = 1;
  // tiles run back to back (the x4 tiles at one row of x): tile i's weight rows i * next bytes
  // further along each stream, its outputs i further along y (one call for a thread's range)
  int64_t count = 1;
  size_t next = 0;

  void store(int r, int c, float v, int64_t i = 0) const {
    y[r * ldy + c * ystride + i] = v + (bias ? bias[c * ystride + i] : 0.0f);
  }
};

[[maybe_unused]] inline void prefetch(const unsigned char* p) { _mm_prefetch(reinterpret_cast<const char*>(p), _MM_HINT_T1); }

[[maybe_unused]] inline void prefetch_bytes(const unsigned char* p, size_t bytes) {
  for (size_t off = 0; off < bytes; off += 64) _mm_prefetch(reinterpret_cast<const char*>(p + off), _MM_HINT_T1);
  _mm_prefetch(reinterpret_cast<const char*>(p + bytes - 1), _MM_HINT_T1);
}

#if defined(__AVX2__) && defined(__FMA__)
inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}
#endif

}  // namespace nf::cpu
