// The decode product's tiles for the K types: super-blocks of 256 values (Q3_K, Q4_K, Q5_K, Q6_K)
// against x quantised to Q8_K blocks (activation_quant.h), AVX2 or portable, up to 4 rows of x at once
// (AVX512-VNNI's, chosen at run time where the CPU has it: tiles_k_vnni.cpp).
// Q4_K: x = d sc_j q - dmin mn_j over sub-blocks j of 32, q in 0..15 (group g of 32 bytes of qs
// holds sub-block 2g in its low nibbles, 2g + 1 in its high ones); its dot with a Q8_K block is
//   d d_x sum_j sc_j sum_{i in j} q_i x_i  -  dmin d_x sum_j mn_j (sum of x over j).
// Q6_K: x = d sc_j (q - 32) over sub-blocks j of 16, q in 0..63; the dot is
//   d d_x (sum_j sc_j sum_{i in j} q_i x_i  -  32 sum_j sc_j (sum of x over j)).
// Q5_K: Q4_K's with q in 0..31 (a fifth bit from qh). Q3_K: x = d sc_j (u - 4) over sub-blocks j
// of 16, u in 0..7; the dot is Q6_K's with offset 4 and signed scales sc_j.
// The sums of x per 16 are Q8_K's; all sums are integers until the last multiplication.
#include <immintrin.h>

#include <cstring>
#include <span>

#include "ops/cpu/quant/gemv_driver.h"
#include "ops/cpu/quant/gemv_tile.h"
#include "ops/cpu/quant/int8_isa.h"
#include "ops/cpu/quant/k_blocks.h"
#include "ops/cpu/quant/tiles_k_vnni.h"
#include "ops/cpu/quant/type_kernels.h"
#include "ops/cpu/quant/weight_blocks.h"

namespace nf::cpu {
namespace {

#if defined(__AVX2__) && defined(__FMA__)
// int16 lane j of v (both 128-bit halves holding the same 8) in all 16 lanes
inline __m256i broadcast_i16(__m256i v, int j) { return _mm256_shuffle_epi8(v, _mm256_set1_epi16(static_cast<short>((2 * j + 1) << 8 | 2 * j))); }
// int8 scales j and j + 1 of 16 -> [s_j x8, s_j+1 x8] as int16
inline __m256i scale_halves(__m128i scales, int j) {
  return _mm256_cvtepi8_epi16(_mm_shuffle_epi8(scales, _mm_setr_epi8(j, j, j, j, j, j, j, j, j + 1, j + 1, j + 1, j + 1,
                                                                      j + 1, j + 1, j + 1, j + 1)));
}
#endif

struct Q4_KW {
  using Block = BlockQ4_K;
  static float dot_scalar(const Block& b, const int8_t* x, const int16_t* sums, float dx) {
    uint8_t sm[16];
    q4_k_scales(b.scales, sm);
    int32_t sumi = 0, summ = 0;
    for (int j = 0; j < 8; ++j) {
      int32_t isum = 0;
      for (int l = 0; l < 32; ++l) {
        const uint8_t byte = b.qs[32 * (j / 2) + l];
        isum += (j % 2 == 0 ? byte & 0x0f : byte >> 4) * x[32 * j + l];
      }
      sumi += sm[j] * isum;
      summ += sm[8 + j] * (sums[2 * j] + sums[2 * j + 1]);
    }
    return f16_to_float(b.d) * dx * static_cast<float>(sumi) - f16_to_float(b.dmin) * dx * static_cast<float>(summ);
  }
#if defined(__AVX2__) && defined(__FMA__)
  // per group of 64: maddubs of the nibbles with x, madd with the sub-block's scale; the minimum
  // as madd of mn with the sums of x per 32 (hadd of Q8_K's sums per 16)
  template <int R>
  [[gnu::always_inline]] static void block(const TileArgs& t, const Block& blk, int64_t b, __m256 (&acc)[R]) {
    const QuantizedActivations& a = *t.a;
    const __m256i nibble = _mm256_set1_epi8(0x0f);
    const __m128i sm8 = q4_k_scales_128(blk.scales);
    const __m256i sc16 = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(sm8));
    const __m128i mn16 = _mm_cvtepu8_epi16(_mm_srli_si128(sm8, 8));
    const float d = f16_to_float(blk.d), dmin = f16_to_float(blk.dmin);
    __m256i sumi[R];
    for (int r = 0; r < R; ++r) sumi[r] = _mm256_setzero_si256();
    for (int g = 0; g < 4; ++g) {
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk.qs + 32 * g));
      const __m256i lo = _mm256_and_si256(v, nibble), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), nibble);
      const __m256i s_lo = broadcast_i16(sc16, 2 * g), s_hi = broadcast_i16(sc16, 2 * g + 1);
      for (int r = 0; r < R; ++r) {
        const __m256i* x = reinterpret_cast<const __m256i*>(a.row_q(t.r0 + r) + b * 256 + 64 * g);
        const __m256i p_lo = _mm256_madd_epi16(_mm256_maddubs_epi16(lo, _mm256_loadu_si256(x)), s_lo);
        const __m256i p_hi = _mm256_madd_epi16(_mm256_maddubs_epi16(hi, _mm256_loadu_si256(x + 1)), s_hi);
        sumi[r] = _mm256_add_epi32(sumi[r], _mm256_add_epi32(p_lo, p_hi));
      }
    }
    for (int r = 0; r < R; ++r) {
      const float dx = a.row_d(t.r0 + r)[b];
      const __m128i* sums = reinterpret_cast<const __m128i*>(a.row_sums(t.r0 + r) + b * 16);
      const __m128i per32 = _mm_hadd_epi16(_mm_loadu_si128(sums), _mm_loadu_si128(sums + 1));
      const __m256i mins = _mm256_zextsi128_si256(_mm_madd_epi16(mn16, per32));
      acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(d * dx), _mm256_cvtepi32_ps(sumi[r]), acc[r]);
      acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(-dmin * dx), _mm256_cvtepi32_ps(mins), acc[r]);
    }
  }
#endif
};

struct Q6_KW {
  using Block = BlockQ6_K;
  // q of value 128 h + 32 t + l (h < 2, t < 4, l < 32), as ggml's dequantize_row_q6_K interleaves it
  static int value(const Block& b, int h, int t, int l) {
    const uint8_t ql = b.ql[64 * h + l + (t % 2) * 32], qh = b.qh[32 * h + l];
    return (t < 2 ? ql & 0x0f : ql >> 4) | (((qh >> (2 * t)) & 3) << 4);
  }
  static float dot_scalar(const Block& b, const int8_t* x, const int16_t* sums, float dx) {
    int32_t group[16] = {};
    for (int h = 0; h < 2; ++h)
      for (int t = 0; t < 4; ++t)
        for (int l = 0; l < 32; ++l) {
          const int i = 128 * h + 32 * t + l;
          group[i / 16] += value(b, h, t, l) * x[i];
        }
    int32_t sumi = 0;
    for (int j = 0; j < 16; ++j) sumi += b.scales[j] * (group[j] - 32 * sums[j]);
    return f16_to_float(b.d) * dx * static_cast<float>(sumi);
  }
#if defined(__AVX2__) && defined(__FMA__)
  // per half of 128: the four 32-value vectors assembled from ql's nibbles and qh's bit pairs,
  // maddubs with x, madd with their two sub-block scales; the offset as 32 sum_j sc_j sums_j
  template <int R>
  [[gnu::always_inline]] static void block(const TileArgs& t, const Block& blk, int64_t b, __m256 (&acc)[R]) {
    const QuantizedActivations& a = *t.a;
    const __m256i nibble = _mm256_set1_epi8(0x0f);
    const __m128i sc8 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk.scales));
    __m256i sumi[R];
    for (int r = 0; r < R; ++r) sumi[r] = _mm256_setzero_si256();
    for (int h = 0; h < 2; ++h) {
      const __m256i ql0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk.ql + 64 * h));
      const __m256i ql1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk.ql + 64 * h + 32));
      const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk.qh + 32 * h));
      const __m256i q[4] = {
          _mm256_or_si256(_mm256_and_si256(ql0, nibble), _mm256_slli_epi16(_mm256_and_si256(qh, _mm256_set1_epi8(0x03)), 4)),
          _mm256_or_si256(_mm256_and_si256(ql1, nibble), _mm256_slli_epi16(_mm256_and_si256(qh, _mm256_set1_epi8(0x0c)), 2)),
          _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), nibble), _mm256_and_si256(qh, _mm256_set1_epi8(0x30))),
          _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), nibble),
                          _mm256_srli_epi16(_mm256_and_si256(qh, _mm256_set1_epi8(static_cast<char>(0xc0))), 2))};
      for (int v = 0; v < 4; ++v) {
        const __m256i s = scale_halves(sc8, 8 * h + 2 * v);
        for (int r = 0; r < R; ++r) {
          const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.row_q(t.r0 + r) + b * 256 + 128 * h + 32 * v));
          sumi[r] = _mm256_add_epi32(sumi[r], _mm256_madd_epi16(_mm256_maddubs_epi16(q[v], x), s));
        }
      }
    }
    const __m256i sc16 = _mm256_cvtepi8_epi16(sc8);
    const float d = f16_to_float(blk.d);
    for (int r = 0; r < R; ++r) {
      const __m256i sums = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.row_sums(t.r0 + r) + b * 16));
      const __m256i offset = _mm256_slli_epi32(_mm256_madd_epi16(sc16, sums), 5);
      acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(d * a.row_d(t.r0 + r)[b]), _mm256_cvtepi32_ps(_mm256_sub_epi32(sumi[r], offset)),
                                  acc[r]);
    }
  }
#endif
};

struct Q5_KW {
  using Block = BlockQ5_K;
  static float dot_scalar(const Block& b, const int8_t* x, const int16_t* sums, float dx) {
    uint8_t sm[16], q[256];
    q4_k_scales(b.scales, sm);
    q5_k_values(b, q);
    int32_t sumi = 0, summ = 0;
    for (int j = 0; j < 8; ++j) {
      int32_t isum = 0;
      for (int l = 0; l < 32; ++l) isum += q[32 * j + l] * x[32 * j + l];
      sumi += sm[j] * isum;
      summ += sm[8 + j] * (sums[2 * j] + sums[2 * j + 1]);
    }
    return f16_to_float(b.d) * dx * static_cast<float>(sumi) - f16_to_float(b.dmin) * dx * static_cast<float>(summ);
  }
#if defined(__AVX2__) && defined(__FMA__)
  // Q4_K's block with the fifth bits: bit 2g (2g + 1) of qh's 32 bytes as 16 on the low (high) nibbles
  template <int R>
  [[gnu::always_inline]] static void block(const TileArgs& t, const Block& blk, int64_t b, __m256 (&acc)[R]) {
    const QuantizedActivations& a = *t.a;
    const __m256i nibble = _mm256_set1_epi8(0x0f), sixteen = _mm256_set1_epi8(0x10);
    const __m128i sm8 = q4_k_scales_128(blk.scales);  // (in a register: see Q4_KW)
    const __m256i sc16 = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(sm8));
    const __m128i mn16 = _mm_cvtepu8_epi16(_mm_srli_si128(sm8, 8));
    const float d = f16_to_float(blk.d), dmin = f16_to_float(blk.dmin);
    const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk.qh));
    __m256i sumi[R];
    for (int r = 0; r < R; ++r) sumi[r] = _mm256_setzero_si256();
    for (int g = 0; g < 4; ++g) {
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk.qs + 32 * g));
      // qh >> 2g: bit 0 -> sub-block 2g's fifth bit (shifted to 16), bit 1 -> 2g + 1's
      const __m256i h = _mm256_srli_epi16(qh, 2 * g);
      const __m256i lo = _mm256_or_si256(_mm256_and_si256(v, nibble), _mm256_and_si256(_mm256_slli_epi16(h, 4), sixteen));
      const __m256i hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(v, 4), nibble),
                                         _mm256_and_si256(_mm256_slli_epi16(h, 3), sixteen));
      const __m256i s_lo = broadcast_i16(sc16, 2 * g), s_hi = broadcast_i16(sc16, 2 * g + 1);
      for (int r = 0; r < R; ++r) {
        const __m256i* x = reinterpret_cast<const __m256i*>(a.row_q(t.r0 + r) + b * 256 + 64 * g);
        const __m256i p_lo = _mm256_madd_epi16(_mm256_maddubs_epi16(lo, _mm256_loadu_si256(x)), s_lo);
        const __m256i p_hi = _mm256_madd_epi16(_mm256_maddubs_epi16(hi, _mm256_loadu_si256(x + 1)), s_hi);
        sumi[r] = _mm256_add_epi32(sumi[r], _mm256_add_epi32(p_lo, p_hi));
      }
    }
    for (int r = 0; r < R; ++r) {
      const float dx = a.row_d(t.r0 + r)[b];
      const __m128i* sums = reinterpret_cast<const __m128i*>(a.row_sums(t.r0 + r) + b * 16);
      const __m128i per32 = _mm_hadd_epi16(_mm_loadu_si128(sums), _mm_loadu_si128(sums + 1));
      const __m256i mins = _mm256_zextsi128_si256(_mm_madd_epi16(mn16, per32));
      acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(d * dx), _mm256_cvtepi32_ps(sumi[r]), acc[r]);
      acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(-dmin * dx), _mm256_cvtepi32_ps(mins), acc[r]);
    }
  }
#endif
};

struct Q3_KW {
  using Block = BlockQ3_K;
  static float dot_scalar(const Block& b, const int8_t* x, const int16_t* sums, float dx) {
    int8_t sc[16];
    uint8_t u[256];
    q3_k_scales(b.scales, sc);
    q3_k_values(b, u);
    int32_t sumi = 0;
    for (int j = 0; j < 16; ++j) {
      int32_t isum = 0;
      for (int l = 0; l < 16; ++l) isum += u[16 * j + l] * x[16 * j + l];
      sumi += sc[j] * (isum - 4 * sums[j]);
    }
    return f16_to_float(b.d) * dx * static_cast<float>(sumi);
  }
#if defined(__AVX2__) && defined(__FMA__)
  // per half of 128: the four 32-value vectors of u = low 2 bits of qs | third bit of hmask << 2,
  // maddubs with x, madd with their two sub-block scales; the offset as 4 sum_j sc_j sums_j
  template <int R>
  [[gnu::always_inline]] static void block(const TileArgs& t, const Block& blk, int64_t b, __m256 (&acc)[R]) {
    const QuantizedActivations& a = *t.a;
    const __m256i three = _mm256_set1_epi8(3), four = _mm256_set1_epi8(4);
    alignas(16) int8_t sc[16];
    q3_k_scales(blk.scales, sc);
    const __m128i sc8 = _mm_load_si128(reinterpret_cast<const __m128i*>(sc));
    const __m256i hm = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk.hmask));
    __m256i sumi[R];
    for (int r = 0; r < R; ++r) sumi[r] = _mm256_setzero_si256();
    for (int h = 0; h < 2; ++h) {
      const __m256i qs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk.qs + 32 * h));
      for (int k = 0; k < 4; ++k) {
        const int bit = 4 * h + k;
        const __m256i low = _mm256_and_si256(_mm256_srli_epi16(qs, 2 * k), three);
        // bit `bit` of each hmask byte moved to bit 2
        const __m256i high = _mm256_and_si256(bit >= 2 ? _mm256_srli_epi16(hm, bit - 2) : _mm256_slli_epi16(hm, 2 - bit), four);
        const __m256i u = _mm256_or_si256(low, high);
        const __m256i s = scale_halves(sc8, 8 * h + 2 * k);
        for (int r = 0; r < R; ++r) {
          const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.row_q(t.r0 + r) + b * 256 + 128 * h + 32 * k));
          sumi[r] = _mm256_add_epi32(sumi[r], _mm256_madd_epi16(_mm256_maddubs_epi16(u, x), s));
        }
      }
    }
    const __m256i sc16 = _mm256_cvtepi8_epi16(sc8);
    const float d = f16_to_float(blk.d);
    for (int r = 0; r < R; ++r) {
      const __m256i sums = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.row_sums(t.r0 + r) + b * 16));
      const __m256i offset = _mm256_slli_epi32(_mm256_madd_epi16(sc16, sums), 2);
      acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(d * a.row_d(t.r0 + r)[b]), _mm256_cvtepi32_ps(_mm256_sub_epi32(sumi[r], offset)),
                                  acc[r]);
    }
  }
#endif
};

#if defined(__AVX2__) && defined(__FMA__)
// the K types on AVX2: W::block adds each super-block's products for the tile's R rows, column by column
template <class W, int R, int C, bool kPrefetch>
void tile_super(const TileArgs& t) {
  using Block = typename W::Block;
  __m256 acc[C][R];
  for (int c = 0; c < C; ++c)
    for (int r = 0; r < R; ++r) acc[c][r] = _mm256_setzero_ps();
  for (int64_t b = 0; b < t.k / 256; ++b)
    for (int c = 0; c < C; ++c) {
      const Block& blk = reinterpret_cast<const Block*>(t.w + c * t.row_bytes)[b];
      if constexpr (kPrefetch) prefetch_bytes(t.ahead + c * t.row_bytes + b * sizeof(Block), sizeof(Block));
      W::template block<R>(t, blk, b, acc[c]);
    }
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) t.store(r, c, hsum(acc[c][r]));
}

template <class W>
struct TilesK {
  template <int R, int C, bool P>
  struct K {
    static void run(const TileArgs& t) { tile_super<W, R, C, P>(t); }
  };
};
#endif

// the K types, portable: each block's integer sums in scalar code
template <class W, int R, int C>
void tile_super_scalar(const TileArgs& t) {
  using Block = typename W::Block;
  const QuantizedActivations& a = *t.a;
  float acc[R][C] = {};
  for (int64_t b = 0; b < t.k / 256; ++b)
    for (int c = 0; c < C; ++c) {
      const Block& blk = reinterpret_cast<const Block*>(t.w + c * t.row_bytes)[b];
      for (int r = 0; r < R; ++r)
        acc[r][c] += W::dot_scalar(blk, a.row_q(t.r0 + r) + b * 256, a.row_sums(t.r0 + r) + b * 16, a.row_d(t.r0 + r)[b]);
    }
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) t.store(r, c, acc[r][c]);
}

// the portable tiles (the only ones of a build without AVX2)
template <class W>
struct PortableTilesK {
  template <int R, int C, bool P>
  struct K {
    static void run(const TileArgs& t) { tile_super_scalar<W, R, C>(t); }
  };
};

// x quantised to Q8_K blocks, then the tiles: AVX512-VNNI's (tiles_k_vnni.cpp) where int8_isa()
// chose it and W has them (`vnni`), else AVX2's
template <class W>
void gemv_k(std::span<TileArgs> bases, int64_t m, bool scalar, void (*vnni)(std::span<TileArgs>, int64_t) = nullptr) {
  quantise_x(bases, m, 256, scalar);
#if defined(__AVX2__) && defined(__FMA__)
  if (!scalar && vnni != nullptr && int8_isa() == Int8Isa::avx512_vnni) return vnni(bases, m);
  if (!scalar) return gemv_rows<TilesK<W>::template K>(bases, m);
#else
  (void)vnni;
#endif
  gemv_rows<PortableTilesK<W>::template K>(bases, m);
}

#if defined(__AVX2__) && defined(__FMA__)
constexpr auto kQ4_KVnni = gemv_q4_k_vnni, kQ6_KVnni = gemv_q6_k_vnni, kQ5_KVnni = gemv_q5_k_vnni, kQ3_KVnni = gemv_q3_k_vnni;
#else
constexpr void (*kQ4_KVnni)(std::span<TileArgs>, int64_t) = nullptr, (*kQ6_KVnni)(std::span<TileArgs>, int64_t) = nullptr,
               (*kQ5_KVnni)(std::span<TileArgs>, int64_t) = nullptr, (*kQ3_KVnni)(std::span<TileArgs>, int64_t) = nullptr;
#endif

}  // namespace

void gemv_q4_k(std::span<TileArgs> bases, int64_t m, bool scalar) { gemv_k<Q4_KW>(bases, m, scalar, kQ4_KVnni); }
void gemv_q6_k(std::span<TileArgs> bases, int64_t m, bool scalar) { gemv_k<Q6_KW>(bases, m, scalar, kQ6_KVnni); }
void gemv_q5_k(std::span<TileArgs> bases, int64_t m, bool scalar) { gemv_k<Q5_KW>(bases, m, scalar, kQ5_KVnni); }
void gemv_q3_k(std::span<TileArgs> bases, int64_t m, bool scalar) { gemv_k<Q3_KW>(bases, m, scalar, kQ3_KVnni); }

}  // namespace nf::cpu
