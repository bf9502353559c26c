// The decode product's tiles for the K types on AVX512-VNNI (chosen at run time, int8_isa.h; the
// AVX2 and portable tiles are in tiles_k.cpp): the blocks as stored, four weight rows (a tile's
// streams) against up to 4 rows of x quantised to Q8_K, a thread's tiles in one call at one row of x.
// Per super-block and weight row, 64 stored integers q (unsigned) to a 512-bit register, in an
// order whose 16 int32 lanes each hold 4 values of one sub-block; vpdpbusd (q unsigned, x signed)
// sums each lane's 4 products, exactly; two such sums packed to int16 (they fit: |4 q x| <= 4 * 63
// * 128) meet the sub-block scales in vpdpwssd, so a lane holds sum_j sc_j (sum over its values of
// j of q x). The four rows' lanes are gathered ([row 0..3] in each 128-bit lane, as
// tiles_q32.cpp's gather_row_sums), and the per-sub-block corrections
//   Q4_K / Q5_K: sum_j mn_j X_j (X_j: x summed over sub-block j of 32, from Q8_K's sums per 16)
//   Q6_K:        32 sum_j sc_j X_j (sub-blocks of 16: Q8_K's sums themselves)
// are laid out in the same lanes by vpmaddwd of the four rows' mn_j (sc_j) pairs with X's pairs,
// so each super-block ends in one conversion and one fma (two with the minimum) for the four rows:
//   Q4_K, Q5_K: y += d d_x sum_j sc_j sum_{t in j} q_t x_t - dmin d_x sum_j mn_j X_j
//   Q6_K:       y += d d_x (sum_j sc_j sum_{t in j} q_t x_t - 32 sum_j sc_j X_j)
// The 16 f32 lanes are added per row once, at the end of the row: a row's lanes and their order do
// not depend on the other rows of its tile, so a row gives the same bits however the rows are cut.
#include "ops/cpu/quant/tiles_k_vnni.h"

// GCC 12 warns of the self-initialised __Y of avx512fintrin.h's _mm512_undefined_* (its bug 105593)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "ops/cpu/quant/gemv_driver.h"
#include "ops/cpu/quant/int8_dot.h"
#include "ops/cpu/quant/k_blocks.h"

namespace nf::cpu {

#if defined(__AVX2__) && defined(__FMA__)
namespace {

// one row of x at super-block b: its 256 integers, its scale, its 16 sums per 16
struct KRow {
  const int8_t* q;
  float d;
  const int16_t* sums;
};

// 16 i32 lanes of four rows -> [row 0..3] of each 128-bit lane, each the sum of that row's 4
// lanes there (unpacks and adds, as gather_row_sums in tiles_q32.cpp)
NF_TARGET_AVX512_VNNI inline __m512i gather4(__m512i s0, __m512i s1, __m512i s2, __m512i s3) {
  const __m512i t01 = _mm512_add_epi32(_mm512_unpacklo_epi32(s0, s1), _mm512_unpackhi_epi32(s0, s1));
  const __m512i t23 = _mm512_add_epi32(_mm512_unpacklo_epi32(s2, s3), _mm512_unpackhi_epi32(s2, s3));
  return _mm512_add_epi32(_mm512_unpacklo_epi64(t01, t23), _mm512_unpackhi_epi64(t01, t23));
}

// four blocks' f16 scales -> [s0, s1, s2, s3] in each 128-bit lane
NF_TARGET_AVX512_VNNI inline __m512 scales4(uint16_t a, uint16_t b, uint16_t c, uint16_t d) {
  const uint64_t packed = a | static_cast<uint64_t>(b) << 16 | static_cast<uint64_t>(c) << 32 | static_cast<uint64_t>(d) << 48;
  return _mm512_broadcast_f32x4(_mm_cvtph_ps(_mm_cvtsi64_si128(static_cast<long long>(packed))));
}

// i32 lane 4k + c <- pair k of row c, from four rows' 4 pairs each in 128-bit lanes [row 0..3]
NF_TARGET_AVX512_VNNI inline __m512i transpose4(__m512i rows) {
  return _mm512_permutexvar_epi32(_mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15), rows);
}
// i32 lane 4k + c <- pair `first + k` of x's sums, for every c
NF_TARGET_AVX512_VNNI inline __m512i spread_pairs(__m512i pairs, int first) {
  const __m512i k = _mm512_srli_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15), 2);
  return _mm512_permutexvar_epi32(_mm512_add_epi32(k, _mm512_set1_epi32(first)), pairs);
}

// Q4_K's and Q5_K's first 16 bytes (d, dmin, 12 bytes of scales and mins) of four blocks, unpacked
// together: 128-bit lane c of each register for row c
struct Q45_KHeaders {
  __m512i sc16;      // sc_0..7 of row c as int16 in lane c (32 int16: the table the scales are spread from)
  __m512i mins;      // lane 4k + c: (mn_2k, mn_2k+1) of row c as int16
  __m512 d, dmin;    // lane 4k + c: d (dmin) of row c
};

template <class Block>
[[gnu::always_inline]] NF_TARGET_AVX512_VNNI inline Q45_KHeaders q45_k_headers(const Block* const (&blk)[4]) {
  const auto head = [&](int c) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk[c])); };
  const __m512i h = _mm512_inserti32x4(
      _mm512_inserti32x4(_mm512_inserti32x4(_mm512_castsi128_si512(head(0)), head(1), 1), head(2), 2), head(3), 3);
  // bytes 4..15 are the 12 of scales s: sc_0..3 = s_0..3 & 63, sc_4..7 = (s_8..11 & 15) | (s_0..3 >> 6) << 4,
  // mn_0..3 = s_4..7 & 63, mn_4..7 = (s_8..11 >> 4) | (s_4..7 >> 6) << 4 (ggml's get_scale_min_k4)
  const __m512i low_at = _mm512_broadcast_i32x4(_mm_setr_epi8(4, 5, 6, 7, 12, 13, 14, 15, 8, 9, 10, 11, 12, 13, 14, 15));
  const __m512i top_at = _mm512_broadcast_i32x4(_mm_setr_epi8(-1, -1, -1, -1, 4, 5, 6, 7, -1, -1, -1, -1, 8, 9, 10, 11));
  const __m512i t = _mm512_shuffle_epi8(h, low_at);  // [s_0..3, s_8..11, s_4..7, s_8..11]
  const __m512i low = _mm512_and_si512(_mm512_mask_blend_epi32(0x8888, t, _mm512_srli_epi16(t, 4)),
                                       _mm512_set1_epi64(0x0f0f0f0f3f3f3f3fll));
  const __m512i top = _mm512_and_si512(_mm512_srli_epi16(_mm512_shuffle_epi8(h, top_at), 2), _mm512_set1_epi8(0x30));
  const __m512i sm = _mm512_or_si512(low, top);  // [sc_0..7, mn_0..7] in each lane
  const __m512i widen_sc = _mm512_broadcast_i32x4(_mm_setr_epi8(0, -1, 1, -1, 2, -1, 3, -1, 4, -1, 5, -1, 6, -1, 7, -1));
  const __m512i widen_mn = _mm512_broadcast_i32x4(_mm_setr_epi8(8, -1, 9, -1, 10, -1, 11, -1, 12, -1, 13, -1, 14, -1, 15, -1));
  // int16 0 (1) of lane c, d (dmin) of row c, to lanes 4k + c
  const __m512i d_at = _mm512_set_epi64(0, 0, 0, 0, 0x0018001000080000ll, 0x0018001000080000ll, 0x0018001000080000ll,
                                        0x0018001000080000ll);
  const __m512i dmin_at = _mm512_add_epi16(d_at, _mm512_set1_epi16(1));
  return {_mm512_shuffle_epi8(sm, widen_sc), transpose4(_mm512_shuffle_epi8(sm, widen_mn)),
          _mm512_cvtph_ps(_mm512_castsi512_si256(_mm512_permutexvar_epi16(d_at, h))),
          _mm512_cvtph_ps(_mm512_castsi512_si256(_mm512_permutexvar_epi16(dmin_at, h)))};
}

// Q4_K and Q5_K (kFifth): qs loaded 64 bytes (groups 2p, 2p + 1) at a time; its low nibbles are
// sub-blocks 4p (bytes 0-31) and 4p + 2, its high ones 4p + 1 and 4p + 3, so x is taken in the
// same order (two 256-bit halves). Packing the low and high sums gives, per 128-bit lane, [4 lanes
// of 4p | 4 of 4p + 1] (lanes 0, 1) and [4p + 2 | 4p + 3] (lanes 2, 3): the scales' pattern.
template <bool kFifth>
struct Q45_KVnni {
  using Block = std::conditional_t<kFifth, BlockQ5_K, BlockQ4_K>;

  // int16 e of 128-bit lane L <- sc_j of row c: j = 4p + (e >= 4) + 2 (L >= 2), from sc16
  [[gnu::always_inline]] NF_TARGET_AVX512_VNNI static __m512i scale_at(int c, int p) {
    const auto four = [](int j) { return static_cast<long long>(0x0001000100010001ull * static_cast<unsigned>(j)); };
    const int j = 8 * c + 4 * p;
    return _mm512_set_epi64(four(j + 3), four(j + 2), four(j + 3), four(j + 2), four(j + 1), four(j), four(j + 1), four(j));
  }

  template <int R>
  [[gnu::always_inline]] NF_TARGET_AVX512_VNNI static void step(const Block* const (&blk)[4], const KRow (&x)[R],
                                                                __m512 (&acc)[R]) {
    const __m512i nibble = _mm512_set1_epi8(0x0f), sixteen = _mm512_set1_epi8(0x10);
    __m512i xq[R][4];  // [x of 4p | 4p + 2], [x of 4p + 1 | 4p + 3] for p = 0, 1
    for (int r = 0; r < R; ++r)
      for (int p = 0; p < 2; ++p)
        for (int h = 0; h < 2; ++h) {
          const int8_t* at = x[r].q + 128 * p + 32 * h;
          xq[r][2 * p + h] = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(at))),
                                                _mm256_loadu_si256(reinterpret_cast<const __m256i*>(at + 64)), 1);
        }
    const Q45_KHeaders head = q45_k_headers(blk);
    __m512i sumi[R][4];
    for (int c = 0; c < 4; ++c) {
      __m512i fifth;
      if constexpr (kFifth) {  // qh in both halves, the upper one shifted by 2: bit 4p (4p + 1) of a byte is the fifth
        const __m512i qh = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk[c]->qh)));
        fifth = _mm512_mask_srli_epi16(qh, 0xffff0000u, qh, 2);  // bit of sub-block 4p + {0, 2} (4p + {1, 3})
      }
      for (int r = 0; r < R; ++r) sumi[r][c] = _mm512_setzero_si512();
      for (int p = 0; p < 2; ++p) {
        const __m512i v = _mm512_loadu_si512(blk[c]->qs + 64 * p);
        __m512i lo = _mm512_and_si512(v, nibble), hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), nibble);
        if constexpr (kFifth) {
          // bit 4p of `fifth` to bit 4 for lo, bit 4p + 1 for hi (shifts within a byte's bits 0-5)
          const __m512i b_lo = p == 0 ? _mm512_slli_epi16(fifth, 4) : fifth;
          const __m512i b_hi = p == 0 ? _mm512_slli_epi16(fifth, 3) : _mm512_srli_epi16(fifth, 1);
          lo = _mm512_or_si512(lo, _mm512_and_si512(b_lo, sixteen));
          hi = _mm512_or_si512(hi, _mm512_and_si512(b_hi, sixteen));
        }
        const __m512i sc = _mm512_permutexvar_epi16(scale_at(c, p), head.sc16);
        for (int r = 0; r < R; ++r) {
          const __m512i s_lo = _mm512_dpbusd_epi32(_mm512_setzero_si512(), lo, xq[r][2 * p]);
          const __m512i s_hi = _mm512_dpbusd_epi32(_mm512_setzero_si512(), hi, xq[r][2 * p + 1]);
          sumi[r][c] = _mm512_dpwssd_epi32(sumi[r][c], sc, _mm512_packs_epi32(s_lo, s_hi));
        }
      }
    }
    for (int r = 0; r < R; ++r) {
      const __m128i* sums = reinterpret_cast<const __m128i*>(x[r].sums);
      const __m128i per32 = _mm_hadd_epi16(_mm_loadu_si128(sums), _mm_loadu_si128(sums + 1));  // X_0 .. X_7
      const __m512i m = _mm512_madd_epi16(head.mins, spread_pairs(_mm512_castsi128_si512(per32), 0));
      const __m512 dx = _mm512_set1_ps(x[r].d);
      acc[r] = _mm512_fmadd_ps(_mm512_mul_ps(head.d, dx),
                               _mm512_cvtepi32_ps(gather4(sumi[r][0], sumi[r][1], sumi[r][2], sumi[r][3])), acc[r]);
      acc[r] = _mm512_fnmadd_ps(_mm512_mul_ps(head.dmin, dx), _mm512_cvtepi32_ps(m), acc[r]);
    }
  }
};

// The types of 16 sub-blocks of 16 with signed scales and an offset, Q6_K (32) and Q3_K (4): W
// gives, per half h of 128 values, two registers of 64 unsigned integers in value order (values
// 0-63 and 64-127 of the half), so each 128-bit lane of a sum is one sub-block of 16 and the pack
// of the two gives [8h + L | 8h + 4 + L] in lane L; and the four rows' scales as int16 tables,
// rows 0-1 and 2-3 (16 each).
template <class W>
struct Sub16Vnni {
  using Block = typename W::Block;

  // int16 e of 128-bit lane L <- sc_j of row c % 2 of its table: j = 8h + L + 4 (e >= 4)
  [[gnu::always_inline]] NF_TARGET_AVX512_VNNI static __m512i scale_at(int c, int h) {
    const auto four = [](int j) { return static_cast<long long>(0x0001000100010001ull * static_cast<unsigned>(j)); };
    const int j = 16 * (c % 2) + 8 * h;
    return _mm512_set_epi64(four(j + 7), four(j + 3), four(j + 6), four(j + 2), four(j + 5), four(j + 1), four(j + 4), four(j));
  }

  template <int R>
  [[gnu::always_inline]] NF_TARGET_AVX512_VNNI static void step(const Block* const (&blk)[4], const KRow (&x)[R],
                                                                __m512 (&acc)[R]) {
    __m512i rows01, rows23;
    W::scales(blk, rows01, rows23);
    __m512i sumi[R][4];
    for (int c = 0; c < 4; ++c) {
      for (int r = 0; r < R; ++r) sumi[r][c] = _mm512_setzero_si512();
      for (int h = 0; h < 2; ++h) {
        __m512i lo, hi;
        W::integers(*blk[c], h, lo, hi);
        const __m512i sc = _mm512_permutexvar_epi16(scale_at(c, h), c < 2 ? rows01 : rows23);
        for (int r = 0; r < R; ++r) {
          const __m512i* xq = reinterpret_cast<const __m512i*>(x[r].q + 128 * h);
          const __m512i s_lo = _mm512_dpbusd_epi32(_mm512_setzero_si512(), lo, _mm512_loadu_si512(xq));
          const __m512i s_hi = _mm512_dpbusd_epi32(_mm512_setzero_si512(), hi, _mm512_loadu_si512(xq + 1));
          sumi[r][c] = _mm512_dpwssd_epi32(sumi[r][c], sc, _mm512_packs_epi32(s_lo, s_hi));
        }
      }
    }
    // the four rows' sc pairs: lane 4k + c <- (sc_2k, sc_2k+1) of row c (first), pair 4 + k (second)
    const __m512i idx = _mm512_setr_epi32(0, 8, 16, 24, 1, 9, 17, 25, 2, 10, 18, 26, 3, 11, 19, 27);
    const __m512i first = _mm512_permutex2var_epi32(rows01, idx, rows23);
    const __m512i second = _mm512_permutex2var_epi32(rows01, _mm512_add_epi32(idx, _mm512_set1_epi32(4)), rows23);
    const __m512 d = scales4(blk[0]->d, blk[1]->d, blk[2]->d, blk[3]->d);
    for (int r = 0; r < R; ++r) {
      const __m512i sums = _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[r].sums)));
      const __m512i offset =
          _mm512_dpwssd_epi32(_mm512_madd_epi16(first, spread_pairs(sums, 0)), second, spread_pairs(sums, 4));
      const __m512i total =
          _mm512_sub_epi32(gather4(sumi[r][0], sumi[r][1], sumi[r][2], sumi[r][3]), _mm512_slli_epi32(offset, W::kOffsetShift));
      acc[r] = _mm512_fmadd_ps(_mm512_mul_ps(d, _mm512_set1_ps(x[r].d)), _mm512_cvtepi32_ps(total), acc[r]);
    }
  }
};

// Q6_K: per half h, ql's 64 bytes in one register: its low nibbles are values 0-63 of the half
// (t = 0, 1), its high ones 64-127 (t = 2, 3); qh's 2-bit pairs shifted in beside them. Offset 32.
struct Q6_KUnpackVnni {
  using Block = BlockQ6_K;
  static constexpr int kOffsetShift = 5;
  [[gnu::always_inline]] NF_TARGET_AVX512_VNNI static void integers(const Block& b, int h, __m512i& lo, __m512i& hi) {
    const __m512i nibble = _mm512_set1_epi8(0x0f), pair = _mm512_set1_epi8(0x30);
    const __m512i ql = _mm512_loadu_si512(b.ql + 64 * h);
    const __m512i qh = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qh + 32 * h)));
    const __m512i bits = _mm512_mask_srli_epi16(qh, 0xffff0000u, qh, 2);  // t = 0 (1): bits 0-1 (2-3 -> 0-1)
    lo = _mm512_or_si512(_mm512_and_si512(ql, nibble), _mm512_and_si512(_mm512_slli_epi16(bits, 4), pair));
    hi = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), nibble), _mm512_and_si512(bits, pair));
  }
  [[gnu::always_inline]] NF_TARGET_AVX512_VNNI static __m512i two(const Block& a, const Block& b) {
    return _mm512_cvtepi8_epi16(_mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a.scales))),
                                                        _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales)), 1));
  }
  [[gnu::always_inline]] NF_TARGET_AVX512_VNNI static void scales(const Block* const (&blk)[4], __m512i& rows01, __m512i& rows23) {
    rows01 = two(*blk[0], *blk[1]), rows23 = two(*blk[2], *blk[3]);
  }
};

// Q3_K: per half h, qs's 32 bytes in both halves of a register, the upper shifted by 2: bits 0-1
// are values 0-31 (k = 0) and 32-63 (k = 1) of the half, bits 4-5 values 64-127 (k = 2, 3); the
// third bit, bit 4h + k of hmask, shifted to bit 2 beside them. Offset 4.
struct Q3_KUnpackVnni {
  using Block = BlockQ3_K;
  static constexpr int kOffsetShift = 2;
  [[gnu::always_inline]] NF_TARGET_AVX512_VNNI static void integers(const Block& b, int h, __m512i& lo, __m512i& hi) {
    const __m512i three = _mm512_set1_epi8(3), four = _mm512_set1_epi8(4);
    const __m512i qs = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs + 32 * h)));
    const __m512i hm = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.hmask)));
    const __m512i q = _mm512_mask_srli_epi16(qs, 0xffff0000u, qs, 2);
    const __m512i m = _mm512_mask_srli_epi16(hm, 0xffff0000u, hm, 1);  // bit 4h (4h + 2) of the lower half, 4h + 1 (4h + 3) of the upper
    const __m512i m_lo = h == 0 ? _mm512_slli_epi16(m, 2) : _mm512_srli_epi16(m, 2);  // bit 4h -> 2
    const __m512i m_hi = h == 0 ? m : _mm512_srli_epi16(m, 4);                        // bit 4h + 2 -> 2
    lo = _mm512_or_si512(_mm512_and_si512(q, three), _mm512_and_si512(m_lo, four));
    hi = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(q, 4), three), _mm512_and_si512(m_hi, four));
  }
  // the 12 bytes of scales of four blocks (a 16-byte load from byte 94, inside the block: s at bytes
  // 2-13 of each lane) -> sc_j = (6 bits) - 32: sc_0..3 = (s_0..3 & 15) | (s_8..11 & 3) << 4,
  // sc_4..7 = (s_4..7 & 15) | (s_8..11 >> 2 & 3) << 4, sc_8..11 = s_0..3 >> 4 | (s_8..11 >> 4 & 3) << 4,
  // sc_12..15 = s_4..7 >> 4 | (s_8..11 >> 6) << 4 (q3_k_scales in k_blocks.h)
  [[gnu::always_inline]] NF_TARGET_AVX512_VNNI static void scales(const Block* const (&blk)[4], __m512i& rows01, __m512i& rows23) {
    static_assert(offsetof(Block, scales) == 96 && sizeof(Block) == 110);
    const auto head = [&](int c) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(reinterpret_cast<const uint8_t*>(blk[c]) + 94)); };
    const __m512i h = _mm512_inserti32x4(
        _mm512_inserti32x4(_mm512_inserti32x4(_mm512_castsi128_si512(head(0)), head(1), 1), head(2), 2), head(3), 3);
    const __m512i t = _mm512_shuffle_epi8(h, _mm512_broadcast_i32x4(_mm_setr_epi8(2, 3, 4, 5, 6, 7, 8, 9, 2, 3, 4, 5, 6, 7, 8, 9)));
    const __m512i low = _mm512_and_si512(_mm512_mask_blend_epi32(0xcccc, t, _mm512_srli_epi16(t, 4)), _mm512_set1_epi8(0x0f));
    const __m512i c = _mm512_shuffle_epi8(h, _mm512_broadcast_i32x4(_mm_setr_epi8(10, 11, 12, 13, 10, 11, 12, 13, 10, 11, 12, 13, 10, 11, 12, 13)));
    // dword i of a lane: (c >> 2i & 3) << 4 (the shifts move each byte's bits within it)
    const __m512i top = _mm512_and_si512(_mm512_slli_epi32(_mm512_srlv_epi32(c, _mm512_broadcast_i32x4(_mm_setr_epi32(0, 2, 4, 6))), 4),
                                         _mm512_set1_epi8(0x30));
    const __m512i sc = _mm512_sub_epi8(_mm512_or_si512(low, top), _mm512_set1_epi8(32));
    rows01 = _mm512_cvtepi8_epi16(_mm512_castsi512_si256(sc));
    rows23 = _mm512_cvtepi8_epi16(_mm512_extracti64x4_epi64(sc, 1));
  }
};

// kCols < 4 when the four rows are one row repeated (row_bytes 0, the rows left over): only the
// first stored
template <class W, int R, bool kPrefetch>
NF_TARGET_AVX512_VNNI void tile_k_vnni(const TileArgs& t, int cols) {
  using Block = typename W::Block;
  const int64_t nb = t.k / 256;
  const QuantizedActivations& a = *t.a;
  for (int64_t i = 0; i < t.count; ++i) {
    const unsigned char *w = t.w + i * t.next, *ahead = t.ahead + i * t.next;
    __m512 acc[R];
    for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
      const Block* blk[4];
      for (int c = 0; c < 4; ++c) {
        blk[c] = reinterpret_cast<const Block*>(w + c * t.row_bytes) + b;
        if constexpr (kPrefetch) prefetch_bytes(ahead + c * t.row_bytes + b * sizeof(Block), sizeof(Block));
      }
      KRow x[R];
      for (int r = 0; r < R; ++r) x[r] = {a.row_q(t.r0 + r) + b * 256, a.row_d(t.r0 + r)[b], a.row_sums(t.r0 + r) + b * 16};
      W::template step<R>(blk, x, acc);
    }
    for (int r = 0; r < R; ++r) {  // lane 4k + c is part k of row c
      const __m256 half = _mm256_add_ps(_mm512_castps512_ps256(acc[r]), _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(acc[r]), 1)));
      alignas(16) float out[4];
      _mm_store_ps(out, _mm_add_ps(_mm256_castps256_ps128(half), _mm256_extractf128_ps(half, 1)));
      for (int c = 0; c < cols; ++c) t.store(r, c, out[c], i);
    }
  }
}

// the tiles: always 4 rows of W (C = 1: one row repeated, row_bytes 0), any R
template <class W>
struct TilesKVnni {
  template <int R, int C, bool P>
  struct K {
    static constexpr bool kFourRows = true;
    NF_TARGET_AVX512_VNNI static void run(const TileArgs& t) {
      TileArgs u = t;
      if constexpr (C == 1) u.row_bytes = 0;
      tile_k_vnni<W, R, P>(u, C);
    }
  };
};

}  // namespace

void gemv_q4_k_vnni(std::span<TileArgs> bases, int64_t m) { gemv_rows<TilesKVnni<Q45_KVnni<false>>::template K>(bases, m); }
void gemv_q6_k_vnni(std::span<TileArgs> bases, int64_t m) { gemv_rows<TilesKVnni<Sub16Vnni<Q6_KUnpackVnni>>::template K>(bases, m); }
void gemv_q5_k_vnni(std::span<TileArgs> bases, int64_t m) { gemv_rows<TilesKVnni<Q45_KVnni<true>>::template K>(bases, m); }
void gemv_q3_k_vnni(std::span<TileArgs> bases, int64_t m) { gemv_rows<TilesKVnni<Sub16Vnni<Q3_KUnpackVnni>>::template K>(bases, m); }
#endif

}  // namespace nf::cpu
