// Q6_K's panels (panels.h: 8 parts a super-block, each 4 lines of nibbles after their top 2 bits,
// then the 16 signed scales and d). Decode per super-block, row of x and the 16 rows in the lanes:
//   sumi = sum_j sc_j (sum_{t in j} q_t x_t - 32 X_j)      (X_j: Q8_K's sum of x over sub-block j of 16)
//   acc = fma(sumi, d d_x, acc)
// each sub-block's lanes starting at -32 X_j, so the offset costs nothing a line. Prefill's K-type
// GEMM (quant_gemm_k.cpp) reads these panels too.
#include <immintrin.h>

#include <cmath>
#include <cstring>

#include "ops/cpu/quant/int8_dot.h"
#include "ops/cpu/quant/int8_isa.h"
#include "ops/cpu/quant/k_blocks.h"
#include "ops/cpu/quant/panels.h"
#include "ops/cpu/quant/panels_driver.h"
#include "ops/cpu/simd/simd.h"

namespace nf::cpu {
namespace {

const Q6_KPanelBlock& q6_block(const uint8_t* panel, int64_t b) { return k_panel_block<Q6_KPanelBlock>(panel, b); }

// the value (0..63) in row c's byte t of part p's line l, nibble n (0 low, 1 high)
int q6_value(const Q6_KPanelBlock& sb, int p, int l, int n, int64_t c, int t) {
  const Q6_KPanelBlock::Part& part = sb.parts[p];
  const uint8_t byte = part.lines[l][4 * c + t], bits = part.high[l / 2][4 * c + t];
  return ((n == 0 ? byte : byte >> 4) & 0x0f) | ((bits >> (2 * (2 * (l % 2) + n))) & 3) << 4;
}

// where part p's line l begins in the super-block's values (its low nibbles; the high ones 64 on)
constexpr int line_value(int p, int l) { return 128 * (p / 4) + 16 * (p % 4) + 4 * l; }

// X_j of row r, super-block b
int32_t sub_block_sum(const QuantizedActivations& a, int64_t r, int64_t b, int j) { return a.row_sums(r)[b * 16 + j]; }

template <int R>
void tile_portable(const uint8_t* panel, const PanelX& x, int64_t r0, float (&out)[R][kPanelRows]) {
  for (int i = 0; i < R; ++i)
    for (int64_t c = 0; c < kPanelRows; ++c) {
      float acc = 0.0f;
      for (int64_t b = 0; b < x.nb; ++b) {
        const Q6_KPanelBlock& sb = q6_block(panel, b);
        const int8_t* q = x.a->row_q(r0 + i) + b * 256;
        int32_t sumi = 0;
        for (int p = 0; p < 8; ++p)
          for (int n = 0; n < 2; ++n) {
            const int j = 8 * (p / 4) + 4 * n + p % 4;
            int32_t dot = -32 * sub_block_sum(*x.a, r0 + i, b, j);
            for (int l = 0; l < 4; ++l)
              for (int t = 0; t < 4; ++t) dot += q6_value(sb, p, l, n, c, t) * q[line_value(p, l) + 64 * n + t];
            sumi += sb.sc[j][c] * dot;
          }
        acc = std::fma(static_cast<float>(sumi), f16_to_float(sb.d[c]) * x.a->row_d(r0 + i)[b], acc);
      }
      out[i][c] = acc;
    }
}

#if defined(__AVX2__) && defined(__FMA__)
NF_TARGET_AVX512_VNNI inline __m512i scales_as_i32(const int8_t* at) {
  return _mm512_maskz_cvtepi8_epi32(0xffff, _mm_loadu_si128(reinterpret_cast<const __m128i*>(at)));
}

// R rows of x against a panel; kAhead: ask for the lines kAhead bytes on into L2 (decode's stream)
template <int R, int64_t kAhead = 0>
NF_TARGET_AVX512_VNNI void tile_vnni(const uint8_t* panel, const PanelX& x, int64_t r0, float (&out)[R][kPanelRows]) {
  __m512 acc[R];
  for (int i = 0; i < R; ++i) acc[i] = _mm512_setzero_ps();
  for (int64_t b = 0; b < x.nb; ++b) {
    const Q6_KPanelBlock& sb = q6_block(panel, b);
    if constexpr (kAhead > 0) prefetch_l2(reinterpret_cast<const uint8_t*>(&sb) + kAhead, sizeof(Q6_KPanelBlock));
    __m512i sumi[R];
    for (int i = 0; i < R; ++i) sumi[i] = _mm512_setzero_si512();
    for (int p = 0; p < 8; ++p) {
      const int j = 8 * (p / 4) + p % 4;  // the low nibbles' sub-block; the high ones' j + 4
      __m512i lo[R], hi[R];
      for (int i = 0; i < R; ++i) {
        lo[i] = _mm512_set1_epi32(-32 * sub_block_sum(*x.a, r0 + i, b, j));
        hi[i] = _mm512_set1_epi32(-32 * sub_block_sum(*x.a, r0 + i, b, j + 4));
      }
      for (int l = 0; l < 4; ++l) {
        __m512i low, high;
        q6_k_line(sb.parts[p], l, low, high);
        const int64_t at = b * 256 + line_value(p, l);
        for (int i = 0; i < R; ++i) {
          lo[i] = _mm512_dpbusd_epi32(lo[i], low, _mm512_set1_epi32(x.word(r0 + i, at)));
          hi[i] = _mm512_dpbusd_epi32(hi[i], high, _mm512_set1_epi32(x.word(r0 + i, at + 64)));
        }
      }
      const __m512i sc_lo = scales_as_i32(sb.sc[j]), sc_hi = scales_as_i32(sb.sc[j + 4]);
      for (int i = 0; i < R; ++i)
        sumi[i] = _mm512_add_epi32(sumi[i], _mm512_add_epi32(_mm512_mullo_epi32(lo[i], sc_lo), _mm512_mullo_epi32(hi[i], sc_hi)));
    }
    const __m512 d = panel_f16s(sb.d);
    for (int i = 0; i < R; ++i)
      acc[i] = _mm512_fmadd_ps(_mm512_maskz_cvtepi32_ps(0xffff, sumi[i]), _mm512_mul_ps(d, _mm512_set1_ps(x.a->row_d(r0 + i)[b])), acc[i]);
  }
  for (int i = 0; i < R; ++i) _mm512_storeu_ps(out[i], acc[i]);
}

// AVX2: a line's halves of 8 rows; two lines of a sub-block at a time summed as maddubs' i16 pairs
// (each at most 2 x 63 x 128, two of them below 2^15), then vpmaddwd by its signed scale into i32;
// the offset as 32 sum_j sc_j X_j at the end: the VNNI tile's integers, and its f32 step after them.
// Unrolled, and the block ahead asked for part by part, as Q4_K's (panels_k.cpp): Q6_K 1.12x.
template <int R>
void tile_avx2(const uint8_t* panel, const PanelX& x, int64_t r0, float (&out)[R][kPanelRows]) {
  for (int h = 0; h < 2; ++h) {
    __m256 acc[R];
    NF_UNROLL for (int i = 0; i < R; ++i) acc[i] = _mm256_setzero_ps();
    for (int64_t b = 0; b < x.nb; ++b) {
      const Q6_KPanelBlock& sb = q6_block(panel, b);
      const uint8_t* ahead = reinterpret_cast<const uint8_t*>(&sb) + stream_ahead(sizeof(Q6_KPanelBlock));
      __m256i sumi[R], offset[R];
      NF_UNROLL for (int i = 0; i < R; ++i) sumi[i] = _mm256_setzero_si256(), offset[i] = _mm256_setzero_si256();
      NF_UNROLL for (int p = 0; p < 8; ++p) {
        if (h == 0)  // the block ahead's part p, asked for as this one's is read (the first pass only)
          for (int line = 0; line < 6; ++line)
            __builtin_prefetch(ahead + p * static_cast<int64_t>(sizeof(Q6_KPanelBlock::Part)) + line * kPanelLine, 0, 2);
        const int j = 8 * (p / 4) + p % 4;
        const __m256i sc_lo = in_both_i16_halves(panel_i8s_as_i32(sb.sc[j] + 8 * h));
        const __m256i sc_hi = in_both_i16_halves(panel_i8s_as_i32(sb.sc[j + 4] + 8 * h));
        NF_UNROLL for (int l0 = 0; l0 < 4; l0 += 2) {
          __m256i lo[R], hi[R];
          NF_UNROLL for (int i = 0; i < R; ++i) lo[i] = _mm256_setzero_si256(), hi[i] = _mm256_setzero_si256();
          NF_UNROLL for (int l = l0; l < l0 + 2; ++l) {
            __m256i low, high;
            q6_k_line_avx2(sb.parts[p], l, h, low, high);
            const int64_t at = b * 256 + line_value(p, l);
            NF_UNROLL for (int i = 0; i < R; ++i) {
              lo[i] = _mm256_add_epi16(lo[i], _mm256_maddubs_epi16(low, _mm256_set1_epi32(x.word(r0 + i, at))));
              hi[i] = _mm256_add_epi16(hi[i], _mm256_maddubs_epi16(high, _mm256_set1_epi32(x.word(r0 + i, at + 64))));
            }
          }
          NF_UNROLL for (int i = 0; i < R; ++i)
            sumi[i] = _mm256_add_epi32(sumi[i], _mm256_add_epi32(_mm256_madd_epi16(lo[i], sc_lo), _mm256_madd_epi16(hi[i], sc_hi)));
        }
      }
      if (h == 0)  // the block ahead's scales and d
        for (int64_t line = 8 * static_cast<int64_t>(sizeof(Q6_KPanelBlock::Part)); line < static_cast<int64_t>(sizeof(Q6_KPanelBlock)); line += kPanelLine)
          __builtin_prefetch(ahead + line, 0, 2);
      NF_UNROLL for (int jj = 0; jj < 16; ++jj) {
        const __m256i sc = panel_i8s_as_i32(sb.sc[jj] + 8 * h);
        NF_UNROLL for (int i = 0; i < R; ++i)
          offset[i] = _mm256_add_epi32(offset[i], _mm256_mullo_epi32(sc, _mm256_set1_epi32(sub_block_sum(*x.a, r0 + i, b, jj))));
      }
      const __m256 d = panel_f16s_8(sb.d + 8 * h);
      NF_UNROLL for (int i = 0; i < R; ++i) {
        const __m256i total = _mm256_sub_epi32(sumi[i], _mm256_slli_epi32(offset[i], 5));
        acc[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(total), _mm256_mul_ps(d, _mm256_set1_ps(x.a->row_d(r0 + i)[b])), acc[i]);
      }
    }
    NF_UNROLL for (int i = 0; i < R; ++i) _mm256_storeu_ps(out[i] + 8 * h, acc[i]);
  }
}
#endif

// the tiles of Q6_K's panels, as panels_driver.h takes them; decode reads one stream
struct TilesQ6_K {
  static size_t bytes(int64_t k) { return k_panel_bytes<Q6_KPanelBlock>(k); }
  [[maybe_unused]] static constexpr int kStreams = 1;
  template <int R>
  static void portable(const uint8_t* panel, const PanelX& x, int64_t r0, float (&out)[R][kPanelRows]) {
    tile_portable<R>(panel, x, r0, out);
  }
#if defined(__AVX2__) && defined(__FMA__)
  template <int R>
  static void vnni(const uint8_t* panel, const PanelX& x, int64_t r0, float (&out)[R][kPanelRows]) {
    tile_vnni<R>(panel, x, r0, out);
  }
  static void streams(const uint8_t* const* panels, const PanelX& x, int64_t r, float (&out)[kStreams][kPanelRows]) {
    tile_vnni<1, stream_ahead(sizeof(Q6_KPanelBlock))>(panels[0], x, r, out);
  }
  template <int R>
  static void avx2(const uint8_t* panel, const PanelX& x, int64_t r0, float (&out)[R][kPanelRows]) {
    tile_avx2<R>(panel, x, r0, out);
  }
#endif
};

}  // namespace

void pack_panels_q6_k(const void* rows, int64_t n, int64_t k, void* panels) {
  const int64_t nb = k / 256;
  pack_each_row<BlockQ6_K>(rows, n, nb, k_panel_bytes<Q6_KPanelBlock>(k), panels, [&](uint8_t* panel, int64_t r, const BlockQ6_K* row) {
    for (int64_t b = 0; row != nullptr && b < nb; ++b) {  // (a padding row stays zero)
      auto& sb = const_cast<Q6_KPanelBlock&>(q6_block(panel, b));
      uint8_t q[256];
      Q6_KUnpack::integers(row[b], q);
      for (int p = 0; p < 8; ++p)
        for (int l = 0; l < 4; ++l)
          for (int t = 0; t < 4; ++t) {
            const int v = line_value(p, l) + t;
            Q6_KPanelBlock::Part& part = sb.parts[p];
            part.lines[l][4 * r + t] = static_cast<uint8_t>((q[v] & 0x0f) | (q[v + 64] & 0x0f) << 4);
            part.high[l / 2][4 * r + t] |= static_cast<uint8_t>((q[v] >> 4 | (q[v + 64] >> 4) << 2) << (4 * (l % 2)));
          }
      for (int j = 0; j < 16; ++j) sb.sc[j][r] = row[b].scales[j];
      sb.d[r] = row[b].d;
    }
  });
}

void unpack_panel_row_q6_k(const void* panels, int64_t k, int64_t row, void* blocks) {
  const int64_t nb = k / 256, r = row % kPanelRows;
  const auto* panel = static_cast<const uint8_t*>(panels) + static_cast<size_t>(row / kPanelRows) * k_panel_bytes<Q6_KPanelBlock>(k);
  auto* out = static_cast<BlockQ6_K*>(blocks);
  for (int64_t b = 0; b < nb; ++b) {
    const Q6_KPanelBlock& sb = q6_block(panel, b);
    uint8_t q[256];
    for (int p = 0; p < 8; ++p)
      for (int l = 0; l < 4; ++l)
        for (int n = 0; n < 2; ++n)
          for (int t = 0; t < 4; ++t) q[line_value(p, l) + 64 * n + t] = static_cast<uint8_t>(q6_value(sb, p, l, n, r, t));
    // Q6_KUnpack's layout back: value 128h + m (m < 64) is ql[64h + m]'s low nibble, 128h + 64 + m
    // its high one; value 128h + 32T + L has its top 2 bits at 2T of qh[32h + L]
    for (int h = 0; h < 2; ++h) {
      for (int m = 0; m < 64; ++m) out[b].ql[64 * h + m] = static_cast<uint8_t>((q[128 * h + m] & 0x0f) | (q[128 * h + 64 + m] & 0x0f) << 4);
      for (int L = 0; L < 32; ++L) {
        uint8_t bits = 0;
        for (int T = 0; T < 4; ++T) bits |= static_cast<uint8_t>((q[128 * h + 32 * T + L] >> 4) << (2 * T));
        out[b].qh[32 * h + L] = bits;
      }
    }
    for (int j = 0; j < 16; ++j) out[b].scales[j] = sb.sc[j][r];
    out[b].d = sb.d[r];
  }
}

void gemv_panels_q6_k(std::span<TileArgs> bases, int64_t m, bool scalar) {
  const QuantizedActivations& a = quantise_x(bases, m, 256, scalar);
  const PanelX x{&a, nullptr, nullptr, bases[0].k / 256};
#if defined(__AVX2__) && defined(__FMA__)
  if (!scalar && int8_isa() == Int8Isa::avx512_vnni) return gemv_panels_on<TilesQ6_K, PanelTiles::vnni>(bases, x, m);
  if (!scalar) return gemv_panels_on<TilesQ6_K, PanelTiles::avx2>(bases, x, m);
#endif
  gemv_panels_on<TilesQ6_K, PanelTiles::portable>(bases, x, m);
}

}  // namespace nf::cpu
