#pragma once
// The 32-value weight types (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1) as the integer products unpack them, one
// struct per type over its block (quant_blocks.h gives the bytes and the formulas): scale() d,
// minimum() m (kMin: the types with a minimum), kOffset the offset of its stored integers
// (w = d (q - kOffset) (+ m)), kBits their bits (kSigned: Q8_0's signed bytes), and its 32 integers:
//   stored(b, u)  q as stored, in order (Q8_0's bytes as they are): prefill's panels (quant_gemm.cpp)
//   values(b, v)  q - kOffset as int8: decode's portable tiles (tiles_q32.cpp)
//   AVX2: Q8_0 gives its signed values per block (values(b)); the 4- and 5-bit types (kPairs)
//   unpack two blocks at once, unsigned, into lo = [q 0..15 of block b, of block b + 1] and
//   hi = [q 16..31 of b, of b + 1] (the nibbles as they lie in one 32-byte register, no lane
//   crossing); decode's activations are laid out to match (tiles_q32.cpp's PairedActivations) and
//   the offset is taken off in integers as offset * sum x.
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "ops/cpu/quant/quant_blocks.h"
#include "ops/cpu/simd/simd.h"

namespace nf::cpu {

inline uint32_t load_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// 16 bytes of nibbles -> 32 values: q[j] the low nibble of byte j, q[j + 16] its high one
inline void nibbles(const uint8_t* qs, uint8_t* u) {
  for (int j = 0; j < 16; ++j) u[j] = qs[j] & 0x0f, u[j + 16] = qs[j] >> 4;
}

// the nibbles and the fifth bits (bit j of qh is value j's)
inline void nibbles_and_fifth_bits(const uint8_t* qs, const uint8_t* qh_bytes, uint8_t* u) {
  const uint32_t qh = load_u32(qh_bytes);
  for (int j = 0; j < 16; ++j) {
    u[j] = static_cast<uint8_t>((qs[j] & 0x0f) | ((qh >> j & 1) << 4));
    u[j + 16] = static_cast<uint8_t>((qs[j] >> 4) | ((qh >> (j + 16) & 1) << 4));
  }
}

#if defined(__AVX2__) && defined(__FMA__)
// the nibbles of two blocks' 16 bytes (the second null: zeros) as lo / hi above
inline void nibble_pair(const uint8_t* qs0, const uint8_t* qs1, __m256i& lo, __m256i& hi) {
  const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs0));
  const __m128i b = qs1 ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs1)) : _mm_setzero_si128();
  const __m256i v = _mm256_inserti128_si256(_mm256_castsi128_si256(a), b, 1);
  const __m256i mask = _mm256_set1_epi8(0x0f);
  lo = _mm256_and_si256(v, mask);
  hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), mask);
}

// 32 bits -> 32 bytes, byte j 0xff where bit j is set: byte j/8 of the bits spread to byte j, then
// every bit but bit j%8 set, so the byte is all ones exactly when bit j was
inline __m256i bits_to_bytes(uint32_t bits) {
  const __m256i spread = _mm256_shuffle_epi8(
      _mm256_set1_epi32(static_cast<int>(bits)),
      _mm256_setr_epi64x(0x0000000000000000, 0x0101010101010101, 0x0202020202020202, 0x0303030303030303));
  return _mm256_cmpeq_epi8(_mm256_or_si256(spread, _mm256_set1_epi64x(0x7fbfdfeff7fbfdfe)), _mm256_set1_epi64x(-1));
}

// the fifth bits (bit j of qh is value j's) added as 16 to lo / hi of a pair
inline void add_fifth_bits(uint32_t qh0, uint32_t qh1, __m256i& lo, __m256i& hi) {
  const __m256i sixteen = _mm256_set1_epi8(0x10);
  lo = _mm256_or_si256(lo, _mm256_and_si256(bits_to_bytes((qh0 & 0xffffu) | (qh1 << 16)), sixteen));
  hi = _mm256_or_si256(hi, _mm256_and_si256(bits_to_bytes((qh0 >> 16) | (qh1 & 0xffff0000u)), sixteen));
}
#endif

struct Q8_0W {
  using Block = BlockQ8_0;
  static constexpr bool kMin = false, kPairs = false, kSigned = true;
  static constexpr int kOffset = 0, kBits = 8;
  static float scale(const Block& b) { return f16_to_float(b.d); }
  static float minimum(const Block&) { return 0.0f; }
  static void stored(const Block& b, uint8_t* u) { std::memcpy(u, b.qs, 32); }
  static void values(const Block& b, int8_t* v) { std::memcpy(v, b.qs, 32); }
#if defined(__AVX2__) && defined(__FMA__)
  static __m256i values(const Block& b) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs)); }
#endif
};

// The 4- and 5-bit types: Bits-bit integers (the fifth bit of value j is bit j of qh), w = d (q - Offset)
// (+ m where Min).
template <class B, int Offset, int Bits, bool Min>
struct PackedW {
  using Block = B;
  static constexpr bool kMin = Min, kPairs = true, kSigned = false;
  static constexpr int kOffset = Offset, kBits = Bits;
  static float scale(const Block& b) { return f16_to_float(b.d); }
  static float minimum(const Block& b) {
    if constexpr (Min) return f16_to_float(b.m);
    else return 0.0f;
  }
  static void stored(const Block& b, uint8_t* u) {
    if constexpr (Bits == 5) nibbles_and_fifth_bits(b.qs, b.qh, u);
    else nibbles(b.qs, u);
  }
  static void values(const Block& b, int8_t* v) {
    uint8_t u[32];
    stored(b, u);
    for (int j = 0; j < 32; ++j) v[j] = static_cast<int8_t>(u[j] - Offset);
  }
#if defined(__AVX2__) && defined(__FMA__)
  static void pair(const Block& b0, const Block* b1, __m256i& lo, __m256i& hi) {
    nibble_pair(b0.qs, b1 ? b1->qs : nullptr, lo, hi);
    if constexpr (Bits == 5) add_fifth_bits(load_u32(b0.qh), b1 ? load_u32(b1->qh) : 0u, lo, hi);
  }
#endif
};

using Q4_0W = PackedW<BlockQ4_0, 8, 4, false>;
using Q4_1W = PackedW<BlockQ4_1, 0, 4, true>;
using Q5_0W = PackedW<BlockQ5_0, 16, 5, false>;
using Q5_1W = PackedW<BlockQ5_1, 0, 5, true>;

}  // namespace nf::cpu
