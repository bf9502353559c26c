#pragma once
// The vector unit the build targets (-march=native): `Simd::V` holds `width` floats, with loads, a
// load of the first n < width floats (the rest zero) for the tail of a row, fused multiply-add and
// a horizontal sum, and loads that widen `width` stored values to floats (bf16, f16, int8, and a
// Q4_0 block's 32 nibbles: a KV cache's storage types). AVX-512, AVX2 + FMA, or scalar. Used by the hand-written f32 kernels of
// decoding (gemv.cpp, attention_decode.cpp).
#include <immintrin.h>

#include <cstdint>

#include "nanoformer/core/dtype.h"

namespace nf::cpu {

// An f16 bit pattern as a float: the F16C instruction where the build has it.
inline float f16_to_float(uint16_t h) {
#if defined(__F16C__)
  return _cvtsh_ss(h);
#else
  return f16_bits_to_float(h);
#endif
}

#if defined(__AVX512F__)
struct Simd {
  using V = __m512;
  static constexpr int64_t width = 16;
  static V zero() { return _mm512_setzero_ps(); }
  static V load(const float* p) { return _mm512_loadu_ps(p); }
  static V broadcast(float x) { return _mm512_set1_ps(x); }
  static void store(float* p, V v) { _mm512_storeu_ps(p, v); }
  static V load_first(const float* p, int64_t n) { return _mm512_maskz_loadu_ps(static_cast<__mmask16>((1u << n) - 1), p); }
  static V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  // width stored values widened to floats: bf16 (the high half of an f32), f16, int8 (the
  // zero-masked forms with every lane kept: GCC 12's unmasked ones trip -Wmaybe-uninitialized on
  // their filler, as in sum)
  static V load_bf16(const uint16_t* p) {
    const __m512i wide = _mm512_maskz_cvtepu16_epi32(0xffff, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    return _mm512_castsi512_ps(_mm512_maskz_slli_epi32(0xffff, wide, 16));
  }
  static V load_f16(const uint16_t* p) {
    return _mm512_maskz_cvtph_ps(0xffff, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  static V load_i8(const int8_t* p) {
    return _mm512_maskz_cvtepi32_ps(0xffff, _mm512_maskz_cvtepi8_epi32(0xffff, _mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
  }
  // x[c], c < 32 / width: values c width .. c width + width - 1 of a Q4_0 block whose 16 bytes are
  // at qs, as q - 8 (value i < 16 the low nibble of qs[i], value i >= 16 the high nibble of qs[i - 16])
  static void load_q4_0(const uint8_t* qs, V* x) {
    const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
    const __m128i lo = _mm_sub_epi8(_mm_and_si128(bytes, _mm_set1_epi8(15)), _mm_set1_epi8(8));
    const __m128i hi = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(bytes, 4), _mm_set1_epi8(15)), _mm_set1_epi8(8));
    x[0] = _mm512_maskz_cvtepi32_ps(0xffff, _mm512_maskz_cvtepi8_epi32(0xffff, lo));
    x[1] = _mm512_maskz_cvtepi32_ps(0xffff, _mm512_maskz_cvtepi8_epi32(0xffff, hi));
  }
  static float sum(V v) {  // halves, then quarters, added within the register (the masked forms:
                           // GCC 12's unmasked ones trip -Wmaybe-uninitialized on their filler)
    v = _mm512_add_ps(v, _mm512_mask_shuffle_f32x4(v, 0xffff, v, v, 0b01001110));
    v = _mm512_add_ps(v, _mm512_mask_shuffle_f32x4(v, 0xffff, v, v, 0b10110001));
    __m128 s = _mm512_mask_extractf32x4_ps(_mm_setzero_ps(), 0xf, v, 0);
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
  }
  // out[0..3] = sum(a), sum(b), sum(c), sum(d): pairs interleaved and added within each 128-bit
  // lane until every lane holds the four partial sums, then the four lanes added (masked forms, as
  // in sum)
  static void sum4(V a, V b, V c, V d, float* out) {
    const V ab = _mm512_add_ps(_mm512_mask_unpacklo_ps(a, 0xffff, a, b), _mm512_mask_unpackhi_ps(a, 0xffff, a, b));  // a0+a2 b0+b2 a1+a3 b1+b3
    const V cd = _mm512_add_ps(_mm512_mask_unpacklo_ps(c, 0xffff, c, d), _mm512_mask_unpackhi_ps(c, 0xffff, c, d));
    V x = _mm512_add_ps(_mm512_mask_shuffle_ps(ab, 0xffff, ab, cd, 0x44), _mm512_mask_shuffle_ps(ab, 0xffff, ab, cd, 0xee));  // a b c d per lane
    x = _mm512_add_ps(x, _mm512_mask_shuffle_f32x4(x, 0xffff, x, x, 0b01001110));
    x = _mm512_add_ps(x, _mm512_mask_shuffle_f32x4(x, 0xffff, x, x, 0b10110001));
    _mm_storeu_ps(out, _mm512_mask_extractf32x4_ps(_mm_setzero_ps(), 0xf, x, 0));
  }
};
#elif defined(__AVX2__) && defined(__FMA__)
struct Simd {
  using V = __m256;
  static constexpr int64_t width = 8;
  static V zero() { return _mm256_setzero_ps(); }
  static V load(const float* p) { return _mm256_loadu_ps(p); }
  static V broadcast(float x) { return _mm256_set1_ps(x); }
  static void store(float* p, V v) { _mm256_storeu_ps(p, v); }
  static V load_first(const float* p, int64_t n) {
    const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_maskload_ps(p, _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)), lanes));  // lane < n
  }
  static V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static V load_bf16(const uint16_t* p) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))), 16));
  }
  static V load_f16(const uint16_t* p) {
#if defined(__F16C__)
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
#else
    alignas(32) float x[8];
    for (int i = 0; i < 8; ++i) x[i] = f16_bits_to_float(p[i]);
    return _mm256_load_ps(x);
#endif
  }
  static V load_i8(const int8_t* p) {
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
  }
  static void load_q4_0(const uint8_t* qs, V* x) {  // as AVX-512's
    const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
    const __m128i lo = _mm_sub_epi8(_mm_and_si128(bytes, _mm_set1_epi8(15)), _mm_set1_epi8(8));
    const __m128i hi = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(bytes, 4), _mm_set1_epi8(15)), _mm_set1_epi8(8));
    x[0] = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(lo));
    x[1] = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(lo, 8)));
    x[2] = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(hi));
    x[3] = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(hi, 8)));
  }
  static float sum(V v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
  }
  // out[0..3] = sum(a), sum(b), sum(c), sum(d)
  static void sum4(V a, V b, V c, V d, float* out) {
    const __m256 h = _mm256_hadd_ps(_mm256_hadd_ps(a, b), _mm256_hadd_ps(c, d));  // per 128-bit lane: a b c d partials
    _mm_storeu_ps(out, _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1)));
  }
};
#else
struct Simd {
  using V = float;
  static constexpr int64_t width = 1;
  static V zero() { return 0.0f; }
  static V load(const float* p) { return *p; }
  static V broadcast(float x) { return x; }
  static void store(float* p, V v) { *p = v; }
  static V load_first(const float* p, int64_t) { return *p; }
  static V fma(V a, V b, V c) { return a * b + c; }
  static V load_bf16(const uint16_t* p) { return bf16_bits_to_float(*p); }
  static V load_f16(const uint16_t* p) { return f16_bits_to_float(*p); }
  static V load_i8(const int8_t* p) { return static_cast<float>(*p); }
  static void load_q4_0(const uint8_t* qs, V* x) {  // as AVX-512's
    for (int i = 0; i < 16; ++i) {
      x[i] = static_cast<float>((qs[i] & 15) - 8);
      x[i + 16] = static_cast<float>((qs[i] >> 4) - 8);
    }
  }
  static float sum(V v) { return v; }
  static void sum4(V a, V b, V c, V d, float* out) { out[0] = a, out[1] = b, out[2] = c, out[3] = d; }
};
#endif

}  // namespace nf::cpu
