#pragma once
// The K types (super-blocks of 256 values, quant_blocks.h) unpacked, shared by the reference
// dequantisers (quant_rows_k.cpp), decode's tiles (tiles_k.cpp) and prefill's integer GEMM
// (quant_gemm_k.cpp): each block's sub-block scales, its 256 stored integers in value order, and one
// struct per type in the one form prefill's GEMM multiplies:
//   w_t = d sc_j (q_t - kOffset) - dmin mn_j      over sub-blocks j of kSub values
// (mn only where kMin), q_t unsigned integers up to kMaxQ, sc_j and mn_j small signed integers;
// so a row's dot with a Q8_K block (d_x, q_x, X_j = the sum of q_x over sub-block j) is
//   d d_x (sum_j sc_j sum_{t in j} q_t x_t - kOffset sum_j sc_j X_j) - dmin d_x sum_j mn_j X_j,
// all integers until the last two products. Each struct gives:
//   d(b), dmin(b)        the f32 super-block scales (dmin 0 without kMin)
//   integers(b, q)       the 256 q_t in order
//   scales(b, sc, mn)    sc_j and mn_j for the kSubs sub-blocks (mn 0 without kMin)
// A new K type is one such struct plus its gemm entry.
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "ops/cpu/quant/quant_blocks.h"
#include "ops/cpu/simd/simd.h"

namespace nf::cpu {

// Q4_K's 12 bytes of 6-bit scales and mins -> 16 bytes, sc[0..7] then mn[0..7], as 4 words: sub-blocks
// 0-3 keep the low 6 bits of bytes 0-3 (sc) and 4-7 (mn); 4-7 take the nibbles of bytes 8-11 with
// the top 2 bits of bytes 0-3 (sc) and 4-7 (mn) above them (ggml's get_scale_min_k4).
struct Q4_KScaleWords {
  uint32_t w[4];
};
[[gnu::always_inline]] inline Q4_KScaleWords q4_k_scale_words(const uint8_t* s) {
  constexpr uint32_t kLow6 = 0x3f3f3f3f, kLow4 = 0x0f0f0f0f, kTop2 = 0x03030303;
  uint32_t a, b, c;
  std::memcpy(&a, s, 4), std::memcpy(&b, s + 4, 4), std::memcpy(&c, s + 8, 4);
  return {{a & kLow6, (c & kLow4) | (((a >> 6) & kTop2) << 4), b & kLow6, ((c >> 4) & kLow4) | (((b >> 6) & kTop2) << 4)}};
}

inline void q4_k_scales(const uint8_t* s, uint8_t* out) { std::memcpy(out, q4_k_scale_words(s).w, 16); }

// the same as sc[0..7] and mn[0..7] in 16 bits (Q4_K's and Q5_K's unpacking below)
inline void q4_k_scales_mins(const uint8_t* s, int16_t* sc, int16_t* mn) {
  uint8_t sm[16];
  q4_k_scales(s, sm);
  for (int j = 0; j < 8; ++j) sc[j] = sm[j], mn[j] = sm[8 + j];
}

#if defined(__AVX2__)
// the same 16 bytes in a register, built from the words (a 16-byte load of 4-byte stores would wait
// for them: store forwarding fails, which cost decode's Q4_K tile a quarter of its time)
[[gnu::always_inline]] inline __m128i q4_k_scales_128(const uint8_t* s) {
  const Q4_KScaleWords words = q4_k_scale_words(s);
  return _mm_setr_epi32(static_cast<int>(words.w[0]), static_cast<int>(words.w[1]), static_cast<int>(words.w[2]),
                        static_cast<int>(words.w[3]));
}
#endif

// Q4_K: w = (d sc_j) q - dmin mn_j, sub-blocks of 32; group g of 32 bytes of qs holds sub-block
// 2g in its low nibbles and 2g + 1 in its high ones.
struct Q4_KUnpack {
  using Block = BlockQ4_K;
  static constexpr int kSub = 32, kSubs = 8, kMaxQ = 15, kOffset = 0;
  static constexpr bool kMin = true;
  static float d(const Block& b) { return f16_to_float(b.d); }
  static float dmin(const Block& b) { return f16_to_float(b.dmin); }
  static void integers(const Block& b, uint8_t* q) {
    for (int g = 0; g < 4; ++g)
      for (int l = 0; l < 32; ++l) q[64 * g + l] = b.qs[32 * g + l] & 0x0f, q[64 * g + 32 + l] = b.qs[32 * g + l] >> 4;
  }
  static void scales(const Block& b, int16_t* sc, int16_t* mn) { q4_k_scales_mins(b.scales, sc, mn); }
};

// Q6_K: w = (d sc_j) (q - 32), sub-blocks of 16, q of value 128 h + 32 t + l (h < 2, t < 4,
// l < 32) in ql[64 h + 32 (t % 2) + l] >> 4 (t / 2) (4 bits) and qh[32 h + l] >> 2 t (2 bits).
struct Q6_KUnpack {
  using Block = BlockQ6_K;
  static constexpr int kSub = 16, kSubs = 16, kMaxQ = 63, kOffset = 32;
  static constexpr bool kMin = false;
  static float d(const Block& b) { return f16_to_float(b.d); }
  static float dmin(const Block&) { return 0.0f; }
  static void integers(const Block& b, uint8_t* q) {
    for (int h = 0; h < 2; ++h)
      for (int t = 0; t < 4; ++t)
        for (int l = 0; l < 32; ++l) {
          const uint8_t ql = b.ql[64 * h + 32 * (t % 2) + l], qh = b.qh[32 * h + l];
          q[128 * h + 32 * t + l] = static_cast<uint8_t>(((ql >> (4 * (t / 2))) & 0x0f) | (((qh >> (2 * t)) & 3) << 4));
        }
  }
  static void scales(const Block& b, int16_t* sc, int16_t* mn) {
    for (int j = 0; j < 16; ++j) sc[j] = b.scales[j], mn[j] = 0;
  }
};


// Q3_K's 12 bytes -> its 16 scales sc[j] (stored as sc + 32 in 6 bits: the low nibble of byte j
// (j < 8) or the high nibble of byte j - 8, the top 2 bits at bit 2 (j / 4) of byte 8 + j % 4), four
// at a time as 32-bit words: scales 4w..4w+3 take their nibbles from bytes 0-3 / 4-7 (low nibbles for
// w < 2, high for w >= 2) and their top bits from bits 2w, 2w + 1 of bytes 8-11
inline void q3_k_scales(const uint8_t* s, int8_t* out) {
  constexpr uint32_t kLow4 = 0x0f0f0f0f, kLow2 = 0x03030303;
  uint32_t a, b, c;
  std::memcpy(&a, s, 4);
  std::memcpy(&b, s + 4, 4);
  std::memcpy(&c, s + 8, 4);
  const uint32_t words[4] = {(a & kLow4) | ((c & kLow2) << 4), (b & kLow4) | (((c >> 2) & kLow2) << 4),
                             ((a >> 4) & kLow4) | (((c >> 4) & kLow2) << 4), ((b >> 4) & kLow4) | (((c >> 6) & kLow2) << 4)};
  uint8_t u[16];
  std::memcpy(u, words, 16);
  for (int j = 0; j < 16; ++j) out[j] = static_cast<int8_t>(u[j] - 32);
}

// Q5_K's 256 integers q in [0, 31] in value order: value 32j + l (sub-block j) is nibble j % 2 of
// qs[32 (j / 2) + l] with bit j of qh[l] as its fifth bit
inline void q5_k_values(const BlockQ5_K& b, uint8_t* q) {
  for (int j = 0; j < 8; ++j)
    for (int l = 0; l < 32; ++l)
      q[32 * j + l] = static_cast<uint8_t>(((b.qs[32 * (j / 2) + l] >> (4 * (j % 2))) & 0x0f) | ((b.qh[l] >> j) & 1) << 4);
}

// Q3_K's 256 integers as stored, u = q + 4 in [0, 7], in value order: value 128h + 32k + l has its
// low 2 bits at 2k of qs[32h + l] and its third at bit 4h + k of hmask[l]
inline void q3_k_values(const BlockQ3_K& b, uint8_t* u) {
  for (int h = 0; h < 2; ++h)
    for (int k = 0; k < 4; ++k)
      for (int l = 0; l < 32; ++l)
        u[128 * h + 32 * k + l] =
            static_cast<uint8_t>(((b.qs[32 * h + l] >> (2 * k)) & 3) | ((b.hmask[l] >> (4 * h + k)) & 1) << 2);
}

// Q5_K: Q4_K's scales and mins with a fifth bit in q (kMaxQ 31).
struct Q5_KUnpack {
  using Block = BlockQ5_K;
  static constexpr int kSub = 32, kSubs = 8, kMaxQ = 31, kOffset = 0;
  static constexpr bool kMin = true;
  static float d(const Block& b) { return f16_to_float(b.d); }
  static float dmin(const Block& b) { return f16_to_float(b.dmin); }
  static void integers(const Block& b, uint8_t* q) { q5_k_values(b, q); }
  static void scales(const Block& b, int16_t* sc, int16_t* mn) { q4_k_scales_mins(b.scales, sc, mn); }
};

// Q3_K: w = (d sc_j) (u - 4), sub-blocks of 16, u the stored 3 bits, sc_j its 6-bit scales less 32.
struct Q3_KUnpack {
  using Block = BlockQ3_K;
  static constexpr int kSub = 16, kSubs = 16, kMaxQ = 7, kOffset = 4;
  static constexpr bool kMin = false;
  static float d(const Block& b) { return f16_to_float(b.d); }
  static float dmin(const Block&) { return 0.0f; }
  static void integers(const Block& b, uint8_t* q) { q3_k_values(b, q); }
  static void scales(const Block& b, int16_t* sc, int16_t* mn) {
    int8_t s[16];
    q3_k_scales(b.scales, s);
    for (int j = 0; j < 16; ++j) sc[j] = s[j], mn[j] = 0;
  }
};

}  // namespace nf::cpu
