// Prefill's integer GEMM for the K types (k_blocks.h): y = x W^T over x in Q8_K blocks (256 values,
// one f32 scale, sums per 16: activation_quant.h) and W in super-blocks of 256, the layout of
// quant_gemm.cpp's: W repacked per call a panel of P rows at a time, value 4g + t of row r at byte
// 4r + t of group g, x's matching 4 bytes broadcast, a tile of R rows of x by one panel. Per
// super-block and (row of x, row of W) the kernels sum in integers
//   sumi = sum_j sc_j sum_{t in j} q_t x_t,   corr = sum_j c_j X_j   (c = mn where kMin, else sc)
// and add to y's f32 accumulator
//   kMin:  acc = fma(sumi, d d_x, acc), then acc = fma(-corr, dmin d_x, acc)
//   else:  acc = fma(sumi - kOffset corr, d d_x, acc)
// in that order on every path, so all give the same bits (the portable tile is the reference).
//  - AVX2 (8-row panels, R = 4): _mm256_maddubs_epi16 (q unsigned, x signed) sums adjacent pairs
//    into i16, kFlush groups of 4 values at a time (kFlush such that 2 kFlush kMaxQ 127 <= 32767:
//    the i16 lane is exact), then _mm256_madd_epi16 with sc_j in both halves of each 32-bit lane
//    takes them to i32 scaled: Q4_K flushes once per sub-block of 32, Q6_K every 8 values.
//    corr: _mm256_madd_epi16 of (c_2p, c_2p+1) with (X_2p, X_2p+1).
//  - AVX512-VNNI (16-row panels, R = 8): _mm512_dpbusd_epi32 per group (exact i32), a sub-block's
//    dot times sc_j (_mm512_mullo_epi32) into sumi; corr by _mm512_dpwssd_epi32.
//  - AVX-VNNI alone takes AVX2's tiles.
#include <immintrin.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

#include "nanoformer/core/error.h"
#include "ops/cpu/loops/loops.h"
#include "ops/cpu/quant/int8_dot.h"
#include "ops/cpu/quant/int8_isa.h"
#include "ops/cpu/quant/k_blocks.h"
#include "ops/cpu/quant/panels.h"
#include "ops/cpu/quant/type_kernels.h"
#include "ops/cpu/quant/x_units.h"

namespace nf::cpu {
namespace {

constexpr int kGroups = kQK_K / 4;  // 4-value groups per super-block
constexpr int kPanelRowsAvx2 = 8, kTileRowsAvx2 = 4;
constexpr int kPanelRowsVnni = 16, kTileRowsVnni = 8;
static_assert(2 * kPanelRowsAvx2 == kPanelRows, "an AVX2 panel is half of one made at load");

// i16 pair of two small integers in one 32-bit word (a in the low half)
constexpr int32_t pair16(int32_t a, int32_t b) {
  return static_cast<int32_t>((static_cast<uint32_t>(a) & 0xffffu) | (static_cast<uint32_t>(b) << 16));
}

// One super-block of a panel of P rows: d, dmin, sc_j (as i32; `Pairs`: in both i16 halves, for
// madd_epi16), (c_2p, c_2p+1) as i16 pairs, and group g's integers of row r at q[g][4r .. 4r + 3].
template <class W, int P>
struct KPanelBlock {
  alignas(64) float d[P];
  alignas(64) float dmin[P];
  alignas(64) int32_t sc[W::kSubs][P];
  alignas(64) int32_t c[W::kSubs / 2][P];
  alignas(64) uint8_t q[kGroups][4 * P];
};

template <class W, int P, bool Pairs>
void pack_panel(const void* w, int64_t nb, int64_t row0, int64_t n, KPanelBlock<W, P>* panel) {
  using Block = typename W::Block;
  if (row0 + P > n) std::memset(static_cast<void*>(panel), 0, static_cast<size_t>(nb) * sizeof(KPanelBlock<W, P>));
  for (int r = 0; r < P && row0 + r < n; ++r) {
    const Block* row = static_cast<const Block*>(w) + (row0 + r) * nb;
    for (int64_t b = 0; b < nb; ++b) {
      KPanelBlock<W, P>& out = panel[b];
      alignas(32) uint8_t q[kQK_K];
      int16_t sc[W::kSubs], mn[W::kSubs];
      W::integers(row[b], q);
      W::scales(row[b], sc, mn);
      out.d[r] = W::d(row[b]);
      out.dmin[r] = W::dmin(row[b]);
      const int16_t* c = W::kMin ? mn : sc;
      for (int j = 0; j < W::kSubs; ++j) out.sc[j][r] = Pairs ? pair16(sc[j], sc[j]) : sc[j];
      for (int p = 0; p < W::kSubs / 2; ++p) out.c[p][r] = pair16(c[2 * p], c[2 * p + 1]);
      for (int g = 0; g < kGroups; ++g) std::memcpy(&out.q[g][4 * r], q + 4 * g, 4);
    }
  }
}

// What a tile needs of x's super-block (i, b) besides its integers: d_x, and (X_2p, X_2p+1) as i16
// pairs (X_j: the sum of q_x over sub-block j, from Q8_K's sums per 16).
struct KXInfo {
  float d;
  int32_t xs[8];
};

template <class W>
KXInfo x_info(const BlockQ8_K& x) {
  KXInfo info{x.d, {}};
  int32_t sums[16];
  constexpr int per = W::kSub / 16;
  for (int j = 0; j < W::kSubs; ++j) {
    sums[j] = 0;
    for (int s = 0; s < per; ++s) sums[j] += x.bsums[per * j + s];
  }
  for (int p = 0; p < W::kSubs / 2; ++p) info.xs[p] = pair16(sums[2 * p], sums[2 * p + 1]);
  return info;
}


// sumi - kOffset corr (kOffset a power of two)
template <class W>
[[maybe_unused]] constexpr int kOffsetShift = std::countr_zero(static_cast<unsigned>(W::kOffset));

// The portable tile: y[i, r] for i < R, r < cols, the integers summed in scalar code, the f32
// steps of the vector tiles. `words` and `info` as gemm_k packs them.
template <class W, int P>
void tile_portable(const KPanelBlock<W, P>* panel, int64_t nb, const int32_t* xwords, const KXInfo* xinfo, int R, float* y,
                   int64_t ldy, int64_t cols) {
  constexpr bool kPairs = P == kPanelRowsAvx2;
  for (int i = 0; i < R; ++i)
    for (int r = 0; r < cols; ++r) {
      float acc = 0.0f;
      for (int64_t b = 0; b < nb; ++b) {
        const KPanelBlock<W, P>& blk = panel[b];
        const KXInfo& xi = xinfo[b * kUnitRows + i];
        int32_t sumi = 0, corr = 0;
        for (int j = 0; j < W::kSubs; ++j) {
          int32_t dot = 0;
          for (int t = j * W::kSub; t < (j + 1) * W::kSub; ++t) {
            const int8_t x = static_cast<int8_t>(load_word(&xwords[(b * kGroups + t / 4) * kUnitRows + i]) >> (8 * (t % 4)));
            dot += blk.q[t / 4][4 * r + t % 4] * x;
          }
          sumi += static_cast<int16_t>(kPairs ? blk.sc[j][r] & 0xffff : blk.sc[j][r]) * dot;
        }
        for (int p = 0; p < W::kSubs / 2; ++p) {
          const int32_t cw = blk.c[p][r], xw = xi.xs[p];
          corr += static_cast<int16_t>(cw) * static_cast<int16_t>(xw) + (cw >> 16) * (xw >> 16);
        }
        const float dd = blk.d[r] * xi.d;
        if constexpr (W::kMin) {
          acc = std::fma(static_cast<float>(sumi), dd, acc);
          acc = std::fma(-static_cast<float>(corr), blk.dmin[r] * xi.d, acc);
        } else {
          acc = std::fma(static_cast<float>(sumi - corr * W::kOffset), dd, acc);
        }
      }
      y[i * ldy + r] = acc;
    }
}

#if defined(__AVX2__) && defined(__FMA__)
inline void in_register(__m256i& v) { __asm__("" : "+x"(v)); }

template <class W>
constexpr int kFlush = [] {  // groups summed in i16 before madd: an i16 lane takes 2 products a group
  int f = W::kSub / 4;
  while (2 * f * W::kMaxQ * 127 > 32767) f /= 2;
  return f;
}();

template <class W, int R>
[[gnu::always_inline]] inline void tile_avx2(const KPanelBlock<W, kPanelRowsAvx2>* panel, int64_t nb, const int32_t* xwords,
                                             const KXInfo* xinfo, float* y, int64_t ldy, int64_t cols) {
  constexpr int kSubGroups = W::kSub / 4, F = kFlush<W>;
  static_assert(F >= 1 && kSubGroups % F == 0);
  __m256 acc[R];
  NF_UNROLL for (int i = 0; i < R; ++i) acc[i] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const KPanelBlock<W, kPanelRowsAvx2>& blk = panel[b];
    const int32_t* words = xwords + b * kGroups * kUnitRows;
    const KXInfo* info = xinfo + b * kUnitRows;
    __m256i sumi[R];
    NF_UNROLL for (int i = 0; i < R; ++i) sumi[i] = _mm256_setzero_si256();
    for (int j = 0; j < W::kSubs; ++j) {
      const __m256i sc = _mm256_load_si256(reinterpret_cast<const __m256i*>(blk.sc[j]));
      NF_UNROLL for (int f = 0; f < kSubGroups; f += F) {
        __m256i dot[R];
        NF_UNROLL for (int g = 0; g < F; ++g) {
          const int at = j * kSubGroups + f + g;
          const __m256i wv = _mm256_load_si256(reinterpret_cast<const __m256i*>(blk.q[at]));
          NF_UNROLL for (int i = 0; i < R; ++i) {
            const __m256i p = _mm256_maddubs_epi16(wv, _mm256_set1_epi32(words[at * kUnitRows + i]));
            dot[i] = g == 0 ? p : _mm256_add_epi16(dot[i], p);
          }
          NF_UNROLL for (int i = 0; i < R; ++i) in_register(dot[i]);
        }
        NF_UNROLL for (int i = 0; i < R; ++i) sumi[i] = _mm256_add_epi32(sumi[i], _mm256_madd_epi16(dot[i], sc));
      }
    }
    __m256i corr[R];
    NF_UNROLL for (int i = 0; i < R; ++i) corr[i] = _mm256_setzero_si256();
    NF_UNROLL for (int p = 0; p < W::kSubs / 2; ++p) {
      const __m256i c = _mm256_load_si256(reinterpret_cast<const __m256i*>(blk.c[p]));
      NF_UNROLL for (int i = 0; i < R; ++i) corr[i] = _mm256_add_epi32(corr[i], _mm256_madd_epi16(c, _mm256_set1_epi32(info[i].xs[p])));
    }
    const __m256 dw = _mm256_load_ps(blk.d);
    NF_UNROLL for (int i = 0; i < R; ++i) {
      const __m256 dx = _mm256_set1_ps(info[i].d);
      if constexpr (W::kMin) {
        acc[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sumi[i]), _mm256_mul_ps(dw, dx), acc[i]);
        acc[i] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(corr[i]), _mm256_mul_ps(_mm256_load_ps(blk.dmin), dx), acc[i]);
      } else {
        const __m256i s = _mm256_sub_epi32(sumi[i], _mm256_slli_epi32(corr[i], kOffsetShift<W>));
        acc[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_mul_ps(dw, dx), acc[i]);
      }
    }
  }
  NF_UNROLL for (int i = 0; i < R; ++i) {
    if (cols >= kPanelRowsAvx2) {
      _mm256_storeu_ps(y + i * ldy, acc[i]);
    } else {
      alignas(32) float lanes[kPanelRowsAvx2];
      _mm256_store_ps(lanes, acc[i]);
      std::copy(lanes, lanes + cols, y + i * ldy);
    }
  }
}

template <class W, int R>
NF_TARGET_AVX512_VNNI void tile_vnni(const KPanelBlock<W, kPanelRowsVnni>* panel, int64_t nb, const int32_t* xwords,
                                     const KXInfo* xinfo, float* y, int64_t ldy, int64_t cols) {
  constexpr int kSubGroups = W::kSub / 4;
  __m512 acc[R];
  NF_UNROLL for (int i = 0; i < R; ++i) acc[i] = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const KPanelBlock<W, kPanelRowsVnni>& blk = panel[b];
    const int32_t* words = xwords + b * kGroups * kUnitRows;
    const KXInfo* info = xinfo + b * kUnitRows;
    __m512i sumi[R];
    NF_UNROLL for (int i = 0; i < R; ++i) sumi[i] = _mm512_setzero_si512();
    for (int j = 0; j < W::kSubs; ++j) {
      __m512i dot[R];
      NF_UNROLL for (int i = 0; i < R; ++i) dot[i] = _mm512_setzero_si512();
      NF_UNROLL for (int g = 0; g < kSubGroups; ++g) {
        const int at = j * kSubGroups + g;
        const __m512i wv = _mm512_load_si512(blk.q[at]);
        NF_UNROLL for (int i = 0; i < R; ++i) dot[i] = _mm512_dpbusd_epi32(dot[i], wv, _mm512_set1_epi32(words[at * kUnitRows + i]));
      }
      const __m512i sc = _mm512_load_si512(blk.sc[j]);
      NF_UNROLL for (int i = 0; i < R; ++i) sumi[i] = _mm512_add_epi32(sumi[i], _mm512_mullo_epi32(dot[i], sc));
    }
    __m512i corr[R];
    NF_UNROLL for (int i = 0; i < R; ++i) corr[i] = _mm512_setzero_si512();
    NF_UNROLL for (int p = 0; p < W::kSubs / 2; ++p) {
      const __m512i c = _mm512_load_si512(blk.c[p]);
      NF_UNROLL for (int i = 0; i < R; ++i) corr[i] = _mm512_dpwssd_epi32(corr[i], c, _mm512_set1_epi32(info[i].xs[p]));
    }
    const __m512 dw = _mm512_load_ps(blk.d);
    NF_UNROLL for (int i = 0; i < R; ++i) {
      const __m512 dx = _mm512_set1_ps(info[i].d);
      // (the masked forms of cvtepi32_ps and the shift, whose unmasked ones GCC 12 warns of)
      if constexpr (W::kMin) {
        acc[i] = _mm512_fmadd_ps(_mm512_maskz_cvtepi32_ps(0xffff, sumi[i]), _mm512_mul_ps(dw, dx), acc[i]);
        acc[i] = _mm512_fnmadd_ps(_mm512_maskz_cvtepi32_ps(0xffff, corr[i]), _mm512_mul_ps(_mm512_load_ps(blk.dmin), dx), acc[i]);
      } else {
        const __m512i s = _mm512_sub_epi32(sumi[i], _mm512_maskz_slli_epi32(0xffff, corr[i], kOffsetShift<W>));
        acc[i] = _mm512_fmadd_ps(_mm512_maskz_cvtepi32_ps(0xffff, s), _mm512_mul_ps(dw, dx), acc[i]);
      }
    }
  }
  const __mmask16 columns = cols >= kPanelRowsVnni ? 0xffff : static_cast<__mmask16>((1u << cols) - 1);
  NF_UNROLL for (int i = 0; i < R; ++i) _mm512_mask_storeu_ps(y + i * ldy, columns, acc[i]);
}
#endif

#if defined(__AVX2__) && defined(__FMA__)
// pack_panel's 16-row panel from Q4_K's or Q5_K's panels made at load (panels.h, PB): the lines'
// nibbles into groups 16p + i (low) and 16p + 8 + i (high), 16 added where a fifth bit is set, the
// scales to i32, the mins paired
template <class PB, class W>
  requires(!std::is_same_v<PB, Q6_KPanelBlock>)
NF_TARGET_AVX512_VNNI void unpack_stored_panel(const uint8_t* stored, int64_t nb, KPanelBlock<W, kPanelRowsVnni>* panel) {
  const __m512i nibble = _mm512_set1_epi8(0x0f), sixteen = _mm512_set1_epi8(0x10);
  for (int64_t b = 0; b < nb; ++b) {
    const PB& sb = k_panel_block<PB>(stored, b);
    KPanelBlock<W, kPanelRowsVnni>& out = panel[b];
    _mm512_store_ps(out.d, panel_f16s(sb.d));
    _mm512_store_ps(out.dmin, panel_f16s(sb.dmin));
    NF_UNROLL for (int j = 0; j < 8; ++j) _mm512_store_si512(out.sc[j], panel_bytes_as_i32(sb.sc[j]));
    NF_UNROLL for (int p = 0; p < 4; ++p)
      _mm512_store_si512(out.c[p], panel_min_pairs(sb.mn[p]));
    NF_UNROLL for (int l = 0; l < 32; ++l) {
      const __m512i v = _mm512_load_si512(sb.line(l));
      const int p = l / 8, i = l % 8;
      __m512i low = _mm512_and_si512(v, nibble), high = _mm512_and_si512(_mm512_maskz_srli_epi32(0xffff, v, 4), nibble);
      if constexpr (kHasFifthBits<PB>) {
        low = _mm512_mask_add_epi8(low, _cvtu64_mask64(sb.fifth(2 * p, i)), low, sixteen);
        high = _mm512_mask_add_epi8(high, _cvtu64_mask64(sb.fifth(2 * p + 1, i)), high, sixteen);
      }
      _mm512_store_si512(out.q[16 * p + i], low);
      _mm512_store_si512(out.q[16 * p + 8 + i], high);
    }
  }
}
// the same from Q6_K's panels: each part's lines into groups 32h + 4s + l (low nibbles) and + 16
// (high), the scales to i32 and in pairs (c: the offset's sum_j sc_j X_j), dmin 0
template <class PB, class W>
  requires std::is_same_v<PB, Q6_KPanelBlock>
NF_TARGET_AVX512_VNNI void unpack_stored_panel(const uint8_t* stored, int64_t nb, KPanelBlock<W, kPanelRowsVnni>* panel) {
  for (int64_t b = 0; b < nb; ++b) {
    const Q6_KPanelBlock& sb = k_panel_block<Q6_KPanelBlock>(stored, b);
    KPanelBlock<W, kPanelRowsVnni>& out = panel[b];
    _mm512_store_ps(out.d, panel_f16s(sb.d));
    _mm512_store_ps(out.dmin, _mm512_setzero_ps());
    __m512i sc[16];
    NF_UNROLL for (int j = 0; j < 16; ++j) _mm512_store_si512(out.sc[j], sc[j] = _mm512_maskz_cvtepi8_epi32(0xffff, _mm_loadu_si128(reinterpret_cast<const __m128i*>(sb.sc[j]))));
    NF_UNROLL for (int p = 0; p < 8; ++p)
      _mm512_store_si512(out.c[p], _mm512_or_si512(_mm512_and_si512(sc[2 * p], _mm512_set1_epi32(0xffff)), _mm512_maskz_slli_epi32(0xffff, sc[2 * p + 1], 16)));
    NF_UNROLL for (int p = 0; p < 8; ++p)
      NF_UNROLL for (int l = 0; l < 4; ++l) {
        __m512i low, high;
        q6_k_line(sb.parts[p], l, low, high);
        const int g = 32 * (p / 4) + 4 * (p % 4) + l;
        _mm512_store_si512(out.q[g], low);
        _mm512_store_si512(out.q[g + 16], high);
      }
  }
}
// AVX2's panels of 8 rows: rows 8h .. 8h + 7 of a panel made at load, as the VNNI unpacking
// above takes all 16 (the scales in both i16 halves, the lines' halves as the decode tiles read them)
template <class PB, class W>
  requires(!std::is_same_v<PB, Q6_KPanelBlock>)
void unpack_stored_half(const uint8_t* stored, int64_t nb, int h, KPanelBlock<W, kPanelRowsAvx2>* panel) {
  const __m256i nibble = _mm256_set1_epi8(0x0f);
  for (int64_t b = 0; b < nb; ++b) {
    const PB& sb = k_panel_block<PB>(stored, b);
    KPanelBlock<W, kPanelRowsAvx2>& out = panel[b];
    _mm256_store_ps(out.d, panel_f16s_8(sb.d + 8 * h));
    _mm256_store_ps(out.dmin, panel_f16s_8(sb.dmin + 8 * h));
    NF_UNROLL for (int j = 0; j < 8; ++j)
      _mm256_store_si256(reinterpret_cast<__m256i*>(out.sc[j]), in_both_i16_halves(panel_u8s_as_i32(sb.sc[j] + 8 * h)));
    NF_UNROLL for (int p = 0; p < 4; ++p)
      _mm256_store_si256(reinterpret_cast<__m256i*>(out.c[p]), panel_min_pairs_8(&sb.mn[p][8 * h][0]));
    NF_UNROLL for (int l = 0; l < 32; ++l) {
      const int p = l / 8, i = l % 8;
      const __m256i v = _mm256_load_si256(reinterpret_cast<const __m256i*>(sb.line(l) + 32 * h));
      __m256i low = _mm256_and_si256(v, nibble), high = _mm256_and_si256(_mm256_srli_epi16(v, 4), nibble);
      if constexpr (kHasFifthBits<PB>) {
        low = _mm256_or_si256(low, fifth_bits_avx2(&sb.fifth(2 * p, i), h));
        high = _mm256_or_si256(high, fifth_bits_avx2(&sb.fifth(2 * p + 1, i), h));
      }
      _mm256_store_si256(reinterpret_cast<__m256i*>(out.q[16 * p + i]), low);
      _mm256_store_si256(reinterpret_cast<__m256i*>(out.q[16 * p + 8 + i]), high);
    }
  }
}
template <class PB, class W>
  requires std::is_same_v<PB, Q6_KPanelBlock>
void unpack_stored_half(const uint8_t* stored, int64_t nb, int h, KPanelBlock<W, kPanelRowsAvx2>* panel) {
  for (int64_t b = 0; b < nb; ++b) {
    const Q6_KPanelBlock& sb = k_panel_block<Q6_KPanelBlock>(stored, b);
    KPanelBlock<W, kPanelRowsAvx2>& out = panel[b];
    _mm256_store_ps(out.d, panel_f16s_8(sb.d + 8 * h));
    _mm256_store_ps(out.dmin, _mm256_setzero_ps());
    __m256i sc[16];
    NF_UNROLL for (int j = 0; j < 16; ++j) {
      sc[j] = panel_i8s_as_i32(sb.sc[j] + 8 * h);
      _mm256_store_si256(reinterpret_cast<__m256i*>(out.sc[j]), in_both_i16_halves(sc[j]));
    }
    NF_UNROLL for (int p = 0; p < 8; ++p)
      _mm256_store_si256(reinterpret_cast<__m256i*>(out.c[p]),
                         _mm256_or_si256(_mm256_and_si256(sc[2 * p], _mm256_set1_epi32(0xffff)), _mm256_slli_epi32(sc[2 * p + 1], 16)));
    NF_UNROLL for (int p = 0; p < 8; ++p)
      NF_UNROLL for (int l = 0; l < 4; ++l) {
        __m256i low, high;
        q6_k_line_avx2(sb.parts[p], l, h, low, high);
        const int g = 32 * (p / 4) + 4 * (p % 4) + l;
        _mm256_store_si256(reinterpret_cast<__m256i*>(out.q[g]), low);
        _mm256_store_si256(reinterpret_cast<__m256i*>(out.q[g + 16]), high);
      }
  }
}
#else
template <class PB, class W>
void unpack_stored_panel(const uint8_t*, int64_t, KPanelBlock<W, kPanelRowsVnni>*) {
  NF_FAIL("quant_gemm: AVX512-VNNI kernels are not built without AVX2");
}
template <class PB, class W>
void unpack_stored_half(const uint8_t*, int64_t, int, KPanelBlock<W, kPanelRowsAvx2>*) {
  NF_FAIL("quant_gemm: panels made at load are not built without AVX2");
}
#endif

// Rows [0, rows) of a unit of packed x against a panel, in tiles of up to R rows.
template <class W, int P, int R>
void unit_against_panel(const KPanelBlock<W, P>* panel, int64_t nb, const int32_t* xwords, const KXInfo* xinfo, int64_t i0,
                        int64_t rows, float* y, int64_t ldy, int64_t cols) {
#if defined(__AVX2__) && defined(__FMA__)
  for (; i0 + R <= rows; i0 += R) {
    if constexpr (P == kPanelRowsVnni) tile_vnni<W, R>(panel, nb, xwords + i0, xinfo + i0, y + i0 * ldy, ldy, cols);
    else tile_avx2<W, R>(panel, nb, xwords + i0, xinfo + i0, y + i0 * ldy, ldy, cols);
  }
  if constexpr (R > 1) {
    if (i0 < rows) unit_against_panel<W, P, R - 1>(panel, nb, xwords, xinfo, i0, rows, y, ldy, cols);
  }
#else
  tile_portable<W, P>(panel, nb, xwords + i0, xinfo + i0, static_cast<int>(rows - i0), y + i0 * ldy, ldy, cols);
#endif
}

// x packed per unit of kUnitRows rows (x_units.h); then units of (panel, unit of x), panel-major,
// so a thread's run of units packs each panel once.
// (Stored: w is the panels made at load, panels.h, of that panel block type; AVX2's panels of 8
// each unpack a half of one)
template <class W, int P, int R, class Stored = void>
void gemm_k(const void* w, int64_t n, int64_t k, const BlockQ8_K* xq, int64_t m, float* y, int64_t ldy) {
  const int64_t nb = k / kQK_K, units = (m + kUnitRows - 1) / kUnitRows;
  std::vector<int32_t> words;
  std::vector<KXInfo> info;
  pack_x_units(xq, m, nb, words, info, [](const BlockQ8_K& block) { return x_info<W>(block); });
  const int64_t panels = (n + P - 1) / P;
  parallel_for(panels * units, 1, [&](int64_t begin, int64_t end) {
    std::vector<KPanelBlock<W, P>> packed(static_cast<size_t>(nb));
    int64_t packed_panel = -1;
    for (int64_t at = begin; at < end; ++at) {
      const int64_t panel = at / units, unit = at % units, j0 = panel * P, i0 = unit * kUnitRows;
      if (panel != packed_panel) {
        if constexpr (std::is_void_v<Stored>) pack_panel<W, P, P == kPanelRowsAvx2>(w, nb, j0, n, packed.data());
        else if constexpr (P == kPanelRowsVnni)
          unpack_stored_panel<Stored, W>(static_cast<const uint8_t*>(w) + panel * k_panel_bytes<Stored>(k), nb, packed.data());
        else  // AVX2's panels of 8 rows: half of a stored one
          unpack_stored_half<Stored, W>(static_cast<const uint8_t*>(w) + panel / 2 * k_panel_bytes<Stored>(k), nb,
                                        static_cast<int>(panel % 2), packed.data());
        packed_panel = panel;
      }
      unit_against_panel<W, P, R>(packed.data(), nb, words.data() + unit * nb * kGroups * kUnitRows,
                                  info.data() + unit * nb * kUnitRows, 0, std::min(kUnitRows, m - i0), y + i0 * ldy + j0,
                                  ldy, std::min<int64_t>(P, n - j0));
    }
  });
}

template <class W>
void gemm(const void* w, int64_t n, int64_t k, const void* xq, int64_t m, float* y, int64_t ldy) {
  static_assert(W::kMin ? W::kOffset == 0 : std::has_single_bit(static_cast<unsigned>(W::kOffset)));
  const auto* x = static_cast<const BlockQ8_K*>(xq);
  if (int8_isa() == Int8Isa::avx512_vnni) return gemm_k<W, kPanelRowsVnni, kTileRowsVnni>(w, n, k, x, m, y, ldy);
  gemm_k<W, kPanelRowsAvx2, kTileRowsAvx2>(w, n, k, x, m, y, ldy);
}

// the GEMM on the panels made at load (PB), unpacked a panel of the tiles' rows at a time
template <class W, class PB>
void gemm_stored(const void* panels, int64_t n, int64_t k, const void* xq, int64_t m, float* y, int64_t ldy) {
  const auto* x = static_cast<const BlockQ8_K*>(xq);
  if (int8_isa() == Int8Isa::avx512_vnni) return gemm_k<W, kPanelRowsVnni, kTileRowsVnni, PB>(panels, n, k, x, m, y, ldy);
  gemm_k<W, kPanelRowsAvx2, kTileRowsAvx2, PB>(panels, n, k, x, m, y, ldy);
}

}  // namespace

void gemm_panels_q4_k(const void* panels, int64_t n, int64_t k, const void* xq, int64_t m, float* y, int64_t ldy) {
  gemm_stored<Q4_KUnpack, Q4_KPanelBlock>(panels, n, k, xq, m, y, ldy);
}
void gemm_panels_q5_k(const void* panels, int64_t n, int64_t k, const void* xq, int64_t m, float* y, int64_t ldy) {
  gemm_stored<Q5_KUnpack, Q5_KPanelBlock>(panels, n, k, xq, m, y, ldy);
}
void gemm_panels_q6_k(const void* panels, int64_t n, int64_t k, const void* xq, int64_t m, float* y, int64_t ldy) {
  gemm_stored<Q6_KUnpack, Q6_KPanelBlock>(panels, n, k, xq, m, y, ldy);
}
void gemm_q4_k(const void* w, int64_t n, int64_t k, const void* xq, int64_t m, float* y, int64_t ldy) {
  gemm<Q4_KUnpack>(w, n, k, xq, m, y, ldy);
}
void gemm_q6_k(const void* w, int64_t n, int64_t k, const void* xq, int64_t m, float* y, int64_t ldy) {
  gemm<Q6_KUnpack>(w, n, k, xq, m, y, ldy);
}
void gemm_q5_k(const void* w, int64_t n, int64_t k, const void* xq, int64_t m, float* y, int64_t ldy) {
  gemm<Q5_KUnpack>(w, n, k, xq, m, y, ldy);
}
void gemm_q3_k(const void* w, int64_t n, int64_t k, const void* xq, int64_t m, float* y, int64_t ldy) {
  gemm<Q3_KUnpack>(w, n, k, xq, m, y, ldy);
}

}  // namespace nf::cpu
