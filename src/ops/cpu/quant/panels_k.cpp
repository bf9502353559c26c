// Q4_K's and Q5_K's panels (panels.h): a super-block of 16 rows is 32 lines of nibbles (line 8p + i,
// byte 4r + t: row r's qs[32p + 4i + t], whose low nibble is value 64p + 4i + t, of sub-block 2p,
// and high nibble value 64p + 32 + 4i + t, of sub-block 2p + 1), Q5_K's fifth bits as 64 masks
// (one masked byte add of 16 a line's half), then sc[8][16] and mn[4][16][2] (the 6-bit scales a
// byte each, the mins a byte each in pairs of sub-blocks), then d[16] and dmin[16] (f16): 2,368 bytes (Q5_K 2,880), 64 more than the 16
// rows' blocks. Decode per super-block, row of x and the 16 rows in the lanes:
//   sumi = sum_j sc_j sum_{t in j} q_t x_t      corr = sum_j mn_j X_j   (X_j: Q8_K's sums of 16, paired;
//   corr a pair of sub-blocks at a time, mn_2q X_2q + mn_2q+1 X_2q+1 in one vpdpwssd / vpmaddwd)
//   acc = fma(sumi, d d_x, acc), then acc = fma(-corr, dmin d_x, acc)
// the steps of prefill's K-type GEMM (quant_gemm_k.cpp), which reads these panels too.
#include <immintrin.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "ops/cpu/quant/int8_dot.h"
#include "ops/cpu/quant/int8_isa.h"
#include "ops/cpu/quant/k_blocks.h"
#include "ops/cpu/quant/panels.h"
#include "ops/cpu/quant/panels_driver.h"
#include "ops/cpu/simd/simd.h"

namespace nf::cpu {
namespace {

// X_j of row r, super-block b: the sum of its q_x over sub-block j (32 values: two sums of 16)
int32_t sub_block_sum(const QuantizedActivations& a, int64_t r, int64_t b, int j) {
  const int16_t* sums = a.row_sums(r) + b * 16;
  return sums[2 * j] + sums[2 * j + 1];
}

// X_2q and X_2q+1 of row r, super-block b, as the low and high 16 bits of a word (each at most
// 32 x 128 in magnitude): a lane's pair against the mins' pair; made once a call (gemv_panels) into
// PanelX::start, [r][b][q]
int32_t sub_block_sum_pair(const QuantizedActivations& a, int64_t r, int64_t b, int q) {
  return static_cast<int32_t>((static_cast<uint32_t>(sub_block_sum(a, r, b, 2 * q + 1)) << 16) |
                              (static_cast<uint32_t>(sub_block_sum(a, r, b, 2 * q)) & 0xffff));
}
[[maybe_unused]] int32_t sum_pair(const PanelX& x, int64_t r, int64_t b, int q) { return x.start[(r * x.nb + b) * 4 + q]; }

// the integer of row c's value 4i + t of sub-block j in `byte` (line 8 (j / 2) + i), its fifth bit added
template <class PB>
int k_value(const PB& sb, uint8_t byte, int j, int i, int64_t c, int t) {
  int u = j % 2 == 0 ? byte & 0x0f : byte >> 4;
  if constexpr (kHasFifthBits<PB>) u |= static_cast<int>(sb.fifth(j, i) >> (4 * c + t) & 1) << 4;
  return u;
}

template <class PB, int R>
void tile_portable(const uint8_t* panel, const PanelX& x, int64_t r0, float (&out)[R][kPanelRows]) {
  for (int i = 0; i < R; ++i)
    for (int64_t c = 0; c < kPanelRows; ++c) {
      float acc = 0.0f;
      for (int64_t b = 0; b < x.nb; ++b) {
        const PB& sb = k_panel_block<PB>(panel, b);
        const int8_t* q = x.a->row_q(r0 + i) + b * 256;
        int32_t sumi = 0, corr = 0;
        for (int j = 0; j < 8; ++j) {
          int32_t dot = 0;
          for (int v = 0; v < 32; ++v) {
            const uint8_t byte = sb.line(8 * (j / 2) + v / 4)[4 * c + v % 4];
            dot += k_value(sb, byte, j, v / 4, c, v % 4) * q[32 * j + v];
          }
          sumi += sb.sc[j][c] * dot;
          corr += sb.min(j, c) * sub_block_sum(*x.a, r0 + i, b, j);
        }
        const float dx = x.a->row_d(r0 + i)[b];
        acc = std::fma(static_cast<float>(sumi), f16_to_float(sb.d[c]) * dx, acc);
        acc = std::fma(static_cast<float>(-corr), f16_to_float(sb.dmin[c]) * dx, acc);
      }
      out[i][c] = acc;
    }
}

#if defined(__AVX2__) && defined(__FMA__)
// line 8p + l as sub-blocks 2p (low) and 2p + 1 (high), the fifth bits added where PB has them.
// Q4_K's high stays in place, 16 times its values (v & 0xf0: one operation fewer a line; vpdpbusd's
// products do not saturate), and a sub-block's sums are shifted down once (high_sums).
template <class PB>
NF_TARGET_AVX512_VNNI inline void k_line(const PB& sb, int p, int l, __m512i& low, __m512i& high) {
  const __m512i nibble = _mm512_set1_epi8(0x0f), v = _mm512_load_si512(sb.line(8 * p + l));
  low = _mm512_and_si512(v, nibble);
  if constexpr (kHasFifthBits<PB>) high = _mm512_and_si512(_mm512_maskz_srli_epi32(0xffff, v, 4), nibble);
  else high = _mm512_and_si512(v, _mm512_set1_epi8(static_cast<char>(0xf0)));
  if constexpr (kHasFifthBits<PB>) {
    const __m512i sixteen = _mm512_set1_epi8(0x10);
    low = _mm512_mask_add_epi8(low, _cvtu64_mask64(sb.fifth(2 * p, l)), low, sixteen);
    high = _mm512_mask_add_epi8(high, _cvtu64_mask64(sb.fifth(2 * p + 1, l)), high, sixteen);
  }
}

// a sub-block's high sums from what k_line gave them (exact: Q4_K's are 16 times an integer)
template <class PB>
NF_TARGET_AVX512_VNNI inline __m512i high_sums(__m512i hi) {
  if constexpr (kHasFifthBits<PB>) return hi;
  return _mm512_maskz_srai_epi32(0xffff, hi, 4);
}

template <class PB, int R>
NF_TARGET_AVX512_VNNI void tile_vnni(const uint8_t* panel, const PanelX& x, int64_t r0, float (&out)[R][kPanelRows]) {
  __m512 acc[R];
  for (int i = 0; i < R; ++i) acc[i] = _mm512_setzero_ps();
  for (int64_t b = 0; b < x.nb; ++b) {
    const PB& sb = k_panel_block<PB>(panel, b);
    __m512i sumi[R], corr[R];
    for (int i = 0; i < R; ++i) sumi[i] = _mm512_setzero_si512(), corr[i] = _mm512_setzero_si512();
    for (int p = 0; p < 4; ++p) {
      __m512i lo[R], hi[R];
      for (int i = 0; i < R; ++i) lo[i] = _mm512_setzero_si512(), hi[i] = _mm512_setzero_si512();
      for (int l = 0; l < 8; ++l) {
        __m512i low, high;
        k_line(sb, p, l, low, high);
        for (int i = 0; i < R; ++i) {
          const int64_t at = b * 256 + 64 * p + 4 * l;
          lo[i] = _mm512_dpbusd_epi32(lo[i], low, _mm512_set1_epi32(x.word(r0 + i, at)));
          hi[i] = _mm512_dpbusd_epi32(hi[i], high, _mm512_set1_epi32(x.word(r0 + i, at + 32)));
        }
      }
      const __m512i sc_lo = panel_bytes_as_i32(sb.sc[2 * p]), sc_hi = panel_bytes_as_i32(sb.sc[2 * p + 1]);
      for (int i = 0; i < R; ++i)
        sumi[i] = _mm512_add_epi32(sumi[i], _mm512_add_epi32(_mm512_mullo_epi32(lo[i], sc_lo), _mm512_mullo_epi32(high_sums<PB>(hi[i]), sc_hi)));
    }
    // a pair's mins by one vpdpwssd; Q4_K's each by vpmulld: at several rows of x its tile is bound
    // by vpdpbusd, whose unit vpdpwssd shares (1408 x 512 in the cache, m = 4: 0.95x by pairs),
    // where Q5_K's spends more on its fifth bits (1.04x by pairs); the streams take pairs for both
    for (int q = 0; q < 4; ++q) {
      const __m512i pairs = panel_min_pairs(sb.mn[q]);
      if constexpr (kHasFifthBits<PB>) {
        for (int i = 0; i < R; ++i) corr[i] = _mm512_dpwssd_epi32(corr[i], pairs, _mm512_set1_epi32(sum_pair(x, r0 + i, b, q)));
      } else {
        const __m512i mn[2] = {_mm512_and_si512(pairs, _mm512_set1_epi32(0xffff)), _mm512_maskz_srli_epi32(0xffff, pairs, 16)};
        for (int i = 0; i < R; ++i)
          for (int e = 0; e < 2; ++e)
            corr[i] = _mm512_add_epi32(corr[i], _mm512_mullo_epi32(mn[e], _mm512_set1_epi32(sub_block_sum(*x.a, r0 + i, b, 2 * q + e))));
      }
    }
    const __m512 d = panel_f16s(sb.d);
    const __m512 dmin = panel_f16s(sb.dmin);
    for (int i = 0; i < R; ++i) {
      const __m512 dx = _mm512_set1_ps(x.a->row_d(r0 + i)[b]);
      acc[i] = _mm512_fmadd_ps(_mm512_maskz_cvtepi32_ps(0xffff, sumi[i]), _mm512_mul_ps(d, dx), acc[i]);
      const __m512i minus = _mm512_sub_epi32(_mm512_setzero_si512(), corr[i]);
      acc[i] = _mm512_fmadd_ps(_mm512_maskz_cvtepi32_ps(0xffff, minus), _mm512_mul_ps(dmin, dx), acc[i]);
    }
  }
  for (int i = 0; i < R; ++i) _mm512_storeu_ps(out[i], acc[i]);
}

// AVX2 (Q4_K, Q5_K): a line's halves of 8 rows (Q5_K's fifth bits added: fifth_bits_avx2); a
// sub-block's lines summed as maddubs' i16 pairs, each at most 2 x 15 x 128 (Q4_K: the 8 lines
// below 2^15) or 2 x 31 x 128 (Q5_K: 4 lines at a time), then vpmaddwd by its scale into i32: the
// same integers as the VNNI tile's, and the same f32 steps after them. The loops unrolled (GCC had
// kept them rolled, the sums on the stack) and the block ahead asked for a line per line read, not
// in a loop of its own: a token of minimind2-small Q4_K_M 1.21x, Q5_K_M 1.17x (AMD Zen 3, 2026-12-02).
template <class PB, int R>
void tile_avx2(const uint8_t* panel, const PanelX& x, int64_t r0, float (&out)[R][kPanelRows]) {
  constexpr int kLinesInI16 = kHasFifthBits<PB> ? 4 : 8;
  const __m256i nibble = _mm256_set1_epi8(0x0f);
  for (int h = 0; h < 2; ++h) {
    __m256 acc[R];
    NF_UNROLL for (int i = 0; i < R; ++i) acc[i] = _mm256_setzero_ps();
    for (int64_t b = 0; b < x.nb; ++b) {
      const PB& sb = k_panel_block<PB>(panel, b);
      const uint8_t* ahead = reinterpret_cast<const uint8_t*>(&sb) + stream_ahead(sizeof(PB));
      __m256i sumi[R], corr[R];
      NF_UNROLL for (int i = 0; i < R; ++i) sumi[i] = _mm256_setzero_si256(), corr[i] = _mm256_setzero_si256();
      NF_UNROLL for (int p = 0; p < 4; ++p) {
        const __m256i sc_lo = in_both_i16_halves(panel_u8s_as_i32(sb.sc[2 * p] + 8 * h));
        const __m256i sc_hi = in_both_i16_halves(panel_u8s_as_i32(sb.sc[2 * p + 1] + 8 * h));
        NF_UNROLL for (int l0 = 0; l0 < 8; l0 += kLinesInI16) {
          __m256i lo[R], hi[R];
          NF_UNROLL for (int i = 0; i < R; ++i) lo[i] = _mm256_setzero_si256(), hi[i] = _mm256_setzero_si256();
          NF_UNROLL for (int l = l0; l < l0 + kLinesInI16; ++l) {
            // the block ahead's lines, one a line read (the first pass only)
            if (h == 0) __builtin_prefetch(ahead + (8 * p + l) * kPanelLine, 0, 2);
            const __m256i v = _mm256_load_si256(reinterpret_cast<const __m256i*>(sb.line(8 * p + l) + 32 * h));
            __m256i low = _mm256_and_si256(v, nibble), high = _mm256_and_si256(_mm256_srli_epi16(v, 4), nibble);
            if constexpr (kHasFifthBits<PB>) {
              low = _mm256_or_si256(low, fifth_bits_avx2(&sb.fifth(2 * p, l), h));
              high = _mm256_or_si256(high, fifth_bits_avx2(&sb.fifth(2 * p + 1, l), h));
            }
            const int64_t at = b * 256 + 64 * p + 4 * l;
            NF_UNROLL for (int i = 0; i < R; ++i) {
              lo[i] = _mm256_add_epi16(lo[i], _mm256_maddubs_epi16(low, _mm256_set1_epi32(x.word(r0 + i, at))));
              hi[i] = _mm256_add_epi16(hi[i], _mm256_maddubs_epi16(high, _mm256_set1_epi32(x.word(r0 + i, at + 32))));
            }
          }
          NF_UNROLL for (int i = 0; i < R; ++i)
            sumi[i] = _mm256_add_epi32(sumi[i], _mm256_add_epi32(_mm256_madd_epi16(lo[i], sc_lo), _mm256_madd_epi16(hi[i], sc_hi)));
        }
      }
      if (h == 0)  // the rest of the block ahead: its scales, mins and d
        for (int64_t line = 32 * kPanelLine; line < static_cast<int64_t>(sizeof(PB)); line += kPanelLine) __builtin_prefetch(ahead + line, 0, 2);
      NF_UNROLL for (int q = 0; q < 4; ++q) {
        const __m256i mn = panel_min_pairs_8(&sb.mn[q][8 * h][0]);
        NF_UNROLL for (int i = 0; i < R; ++i)
          corr[i] = _mm256_add_epi32(corr[i], _mm256_madd_epi16(mn, _mm256_set1_epi32(sum_pair(x, r0 + i, b, q))));
      }
      const __m256 d = panel_f16s_8(sb.d + 8 * h), dmin = panel_f16s_8(sb.dmin + 8 * h);
      NF_UNROLL for (int i = 0; i < R; ++i) {
        const __m256 dx = _mm256_set1_ps(x.a->row_d(r0 + i)[b]);
        acc[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sumi[i]), _mm256_mul_ps(d, dx), acc[i]);
        acc[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_setzero_si256(), corr[i])), _mm256_mul_ps(dmin, dx), acc[i]);
      }
    }
    NF_UNROLL for (int i = 0; i < R; ++i) _mm256_storeu_ps(out[i] + 8 * h, acc[i]);
  }
}

// One row of x (decode) against S panels at once, panel s at panels[s]: S streams read side by
// side, line by line (panels_driver.h)
template <class PB, int S>
NF_TARGET_AVX512_VNNI void streams_vnni(const uint8_t* const* panels, const PanelX& x, int64_t r, float (&out)[S][kPanelRows]) {
  __m512 acc[S];
  for (int s = 0; s < S; ++s) acc[s] = _mm512_setzero_ps();
  constexpr int64_t block_bytes = sizeof(PB), ahead = stream_ahead(block_bytes);
  for (int64_t b = 0; b < x.nb; ++b) {
    for (int s = 0; s < S; ++s) prefetch_l2(reinterpret_cast<const uint8_t*>(&k_panel_block<PB>(panels[s], b)) + ahead, block_bytes);
    __m512i sumi[S];
    for (int s = 0; s < S; ++s) sumi[s] = _mm512_setzero_si512();
    for (int p = 0; p < 4; ++p) {
      __m512i lo[S], hi[S];
      for (int s = 0; s < S; ++s) lo[s] = _mm512_setzero_si512(), hi[s] = _mm512_setzero_si512();
      for (int l = 0; l < 8; ++l) {
        const int64_t at = b * 256 + 64 * p + 4 * l;
        const __m512i x_lo = _mm512_set1_epi32(x.word(r, at)), x_hi = _mm512_set1_epi32(x.word(r, at + 32));
        for (int s = 0; s < S; ++s) {
          __m512i low, high;
          k_line(k_panel_block<PB>(panels[s], b), p, l, low, high);
          lo[s] = _mm512_dpbusd_epi32(lo[s], low, x_lo);
          hi[s] = _mm512_dpbusd_epi32(hi[s], high, x_hi);
        }
      }
      for (int s = 0; s < S; ++s) {
        const PB& sb = k_panel_block<PB>(panels[s], b);
        sumi[s] = _mm512_add_epi32(sumi[s], _mm512_add_epi32(_mm512_mullo_epi32(lo[s], panel_bytes_as_i32(sb.sc[2 * p])),
                                                             _mm512_mullo_epi32(high_sums<PB>(hi[s]), panel_bytes_as_i32(sb.sc[2 * p + 1]))));
      }
    }
    const __m512 dx = _mm512_set1_ps(x.a->row_d(r)[b]);
    for (int s = 0; s < S; ++s) {
      const PB& sb = k_panel_block<PB>(panels[s], b);
      __m512i corr = _mm512_setzero_si512();
      for (int q = 0; q < 4; ++q) corr = _mm512_dpwssd_epi32(corr, panel_min_pairs(sb.mn[q]), _mm512_set1_epi32(sum_pair(x, r, b, q)));
      const __m512 d = panel_f16s(sb.d);
      const __m512 dmin = panel_f16s(sb.dmin);
      acc[s] = _mm512_fmadd_ps(_mm512_maskz_cvtepi32_ps(0xffff, sumi[s]), _mm512_mul_ps(d, dx), acc[s]);
      const __m512i minus = _mm512_sub_epi32(_mm512_setzero_si512(), corr);
      acc[s] = _mm512_fmadd_ps(_mm512_maskz_cvtepi32_ps(0xffff, minus), _mm512_mul_ps(dmin, dx), acc[s]);
    }
  }
  for (int s = 0; s < S; ++s) _mm512_storeu_ps(out[s], acc[s]);
}
#endif

// the tiles of a K type's panels (PB), as panels_driver.h takes them; decode reads one stream
// (panels.h says why)
template <class PB>
struct TilesK {
  static size_t bytes(int64_t k) { return k_panel_bytes<PB>(k); }
  static constexpr int kStreams = 1;
  template <int R>
  static void portable(const uint8_t* panel, const PanelX& x, int64_t r0, float (&out)[R][kPanelRows]) {
    tile_portable<PB, R>(panel, x, r0, out);
  }
#if defined(__AVX2__) && defined(__FMA__)
  template <int R>
  static void vnni(const uint8_t* panel, const PanelX& x, int64_t r0, float (&out)[R][kPanelRows]) {
    tile_vnni<PB, R>(panel, x, r0, out);
  }
  static void streams(const uint8_t* const* panels, const PanelX& x, int64_t r, float (&out)[kStreams][kPanelRows]) {
    streams_vnni<PB, kStreams>(panels, x, r, out);
  }
  template <int R>
  static void avx2(const uint8_t* panel, const PanelX& x, int64_t r0, float (&out)[R][kPanelRows]) {
    tile_avx2<PB, R>(panel, x, r0, out);
  }
#endif
};

template <class PB>
void pack_panels(const void* rows, int64_t n, int64_t k, void* panels) {
  const int64_t nb = k / 256;
  pack_each_row<typename PB::Block>(rows, n, nb, k_panel_bytes<PB>(k), panels, [&](uint8_t* panel, int64_t r, const auto* row) {
    for (int64_t b = 0; row != nullptr && b < nb; ++b) {  // (a padding row stays zero)
      auto& sb = const_cast<PB&>(k_panel_block<PB>(panel, b));
      for (int l = 0; l < 32; ++l) std::memcpy(const_cast<uint8_t*>(sb.line(l)) + 4 * r, row[b].qs + 4 * l, 4);
      if constexpr (kHasFifthBits<PB>)  // value v of sub-block j: bit j of qh[v]
        for (int j = 0; j < 8; ++j)
          for (int v = 0; v < 32; ++v) const_cast<uint64_t&>(sb.fifth(j, v / 4)) |= static_cast<uint64_t>(row[b].qh[v] >> j & 1) << (4 * r + v % 4);
      uint8_t sm[16];
      q4_k_scales(row[b].scales, sm);
      for (int j = 0; j < 8; ++j) sb.sc[j][r] = sm[j], sb.mn[j / 2][r][j % 2] = sm[8 + j];
      sb.d[r] = row[b].d, sb.dmin[r] = row[b].dmin;
    }
  });
}

template <class PB>
void unpack_panel_row(const void* panels, int64_t k, int64_t row, void* blocks) {
  using Block = typename PB::Block;
  const int64_t nb = k / 256, r = row % kPanelRows;
  const auto* panel = static_cast<const uint8_t*>(panels) + static_cast<size_t>(row / kPanelRows) * k_panel_bytes<PB>(k);
  auto* out = static_cast<Block*>(blocks);
  for (int64_t b = 0; b < nb; ++b) {
    const PB& sb = k_panel_block<PB>(panel, b);
    for (int l = 0; l < 32; ++l) std::memcpy(out[b].qs + 4 * l, sb.line(l) + 4 * r, 4);
    if constexpr (kHasFifthBits<PB>)
      for (int v = 0; v < 32; ++v) {
        out[b].qh[v] = 0;
        for (int j = 0; j < 8; ++j) out[b].qh[v] |= static_cast<uint8_t>((sb.fifth(j, v / 4) >> (4 * r + v % 4) & 1) << j);
      }
    // the 12 bytes q4_k_scales unpacked: sub-blocks 0-3 in the low 6 bits of bytes 0-3 (sc) and 4-7
    // (mn); 4-7's low nibbles in bytes 8-11 (sc below, mn above), their top 2 bits atop bytes 0-7
    for (int j = 0; j < 4; ++j) {
      const uint8_t sc = sb.sc[j][r], mn = sb.min(j, r), sc4 = sb.sc[j + 4][r], mn4 = sb.min(j + 4, r);
      out[b].scales[j] = static_cast<uint8_t>(sc | (sc4 >> 4) << 6);
      out[b].scales[j + 4] = static_cast<uint8_t>(mn | (mn4 >> 4) << 6);
      out[b].scales[j + 8] = static_cast<uint8_t>((sc4 & 15) | (mn4 & 15) << 4);
    }
    out[b].d = sb.d[r], out[b].dmin = sb.dmin[r];
  }
}

template <class PB>
void gemv_panels(std::span<TileArgs> bases, int64_t m, bool scalar) {
  const QuantizedActivations& a = quantise_x(bases, m, 256, scalar);
  const int64_t nb = bases[0].k / 256;
  thread_local std::vector<int32_t> pairs;
  pairs.resize(static_cast<size_t>(m * nb * 4));
  for (int64_t r = 0; r < m; ++r)
    for (int64_t b = 0; b < nb; ++b)
      for (int q = 0; q < 4; ++q) pairs[static_cast<size_t>((r * nb + b) * 4 + q)] = sub_block_sum_pair(a, r, b, q);
  const PanelX x{&a, pairs.data(), nullptr, nb};
#if defined(__AVX2__) && defined(__FMA__)
  if (!scalar && int8_isa() == Int8Isa::avx512_vnni) return gemv_panels_on<TilesK<PB>, PanelTiles::vnni>(bases, x, m);
  if (!scalar) return gemv_panels_on<TilesK<PB>, PanelTiles::avx2>(bases, x, m);
#endif
  gemv_panels_on<TilesK<PB>, PanelTiles::portable>(bases, x, m);
}

}  // namespace

void pack_panels_q4_k(const void* rows, int64_t n, int64_t k, void* panels) { pack_panels<Q4_KPanelBlock>(rows, n, k, panels); }
void pack_panels_q5_k(const void* rows, int64_t n, int64_t k, void* panels) { pack_panels<Q5_KPanelBlock>(rows, n, k, panels); }
void unpack_panel_row_q4_k(const void* panels, int64_t k, int64_t row, void* blocks) {
  unpack_panel_row<Q4_KPanelBlock>(panels, k, row, blocks);
}
void unpack_panel_row_q5_k(const void* panels, int64_t k, int64_t row, void* blocks) {
  unpack_panel_row<Q5_KPanelBlock>(panels, k, row, blocks);
}
void gemv_panels_q4_k(std::span<TileArgs> bases, int64_t m, bool scalar) { gemv_panels<Q4_KPanelBlock>(bases, m, scalar); }
void gemv_panels_q5_k(std::span<TileArgs> bases, int64_t m, bool scalar) { gemv_panels<Q5_KPanelBlock>(bases, m, scalar); }

}  // namespace nf::cpu
