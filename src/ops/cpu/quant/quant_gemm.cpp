// y = x W^T over Q8_0 rows of x and block-quantised W, register-blocked for AVX2 without VNNI.
// W is repacked per call, a panel of 8 rows at a time, so that one 256-bit register holds 4
// consecutive values of each of the 8 rows (value t of row r at byte 4r + t % 4); x's matching 4
// bytes are broadcast, and _mm256_maddubs_epi16 (u8 x i8, adjacent products summed to i16) adds
// the 8 rows' partial dots into 16 i16 lanes: 32 multiply-adds an instruction, where an f32 FMA
// does 8. A tile is 6 rows of x by one panel; per block its integer dots are scaled by
// d_x * d_w (8 lanes) into f32 accumulators.
//  - Q4_0, Q5_0, Q4_1, Q5_1: the stored integers u (4 or 5 bits) are the unsigned operand and x the
//    signed one; each i16 lane starts at -o sum x over its 16 positions (o = 8, 16, 0: the
//    offset in w = d (u - o)) and collects the whole block, ending at sum (u - o) x, at most
//    16 * 16 * 127 in size: exact in i16 (additions wrap; only the result must fit). Q4_1's
//    w = d u + m adds m * (d_x sum q_x) per block. Q5_1 (w = d u + m, u < 32) sums (u - 16) x
//    in i16 and adds 16 sum x back in i32.
//  - Q8_0: both operands are signed, so |w| is the unsigned operand and x takes w's sign
//    (_mm256_sign_epi8); a pair of products reaches 2 * 128 * 127, so each group goes to i32
//    (_mm256_madd_epi16). Splitting w into two nibble planes instead (two maddubs, i16 sums)
//    measured slower on Zen 3: 1.0x sgemm against 1.3x (again on 2026-12-02, 4 rows of x a tile and
//    no spills: 0.62-0.95x the sign trick).
// With AVX512-VNNI (chosen at run time, int8_isa.h) a panel is 16 rows, one 512-bit register per
// group, and _mm512_dpbusd_epi32 (u8 x i8, four adjacent products summed into i32) takes each
// group of every type in one instruction: W's integers are the unsigned operand (Q8_0's as
// w + 128) and x the signed one, each i32 lane starting at -offset sum q_x (Q8_0: offset 128).
// With AVX-VNNI alone (256 bits) Q8_0's AVX2 tiles take vpdpbusd in place of maddubs + madd (one
// instruction for three, the sign trick kept). The 4- and 5-bit types keep AVX2's i16 sums: a
// vpdpbusd per group would chain each row's groups through its 5-cycle latency, where the i16
// additions take one (measured on a Xeon with both: 0.9-1.0x sgemm with vpdpbusd, 1.1x without).
// Every integer sum is exact on all paths and the f32 steps are the same, so their y are equal
// bit for bit.
#include "ops/cpu/quant/quant_gemm.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <type_traits>
#include <vector>

#include "nanoformer/core/dtype.h"
#include "nanoformer/core/error.h"
#include "ops/cpu/quant/int8_dot.h"
#include "ops/cpu/quant/int8_isa.h"
#include "ops/cpu/quant/panels.h"
#include "ops/cpu/quant/type_kernels.h"
#include "ops/cpu/quant/x_units.h"
#include "ops/cpu/quant/type_traits.h"
#include "ops/cpu/quant/weight_blocks.h"
#include "ops/cpu/loops/loops.h"
#include "ops/cpu/simd/simd.h"

namespace nf::cpu {
namespace {

constexpr int kGroups = kQK8_0 / 4;  // 4-value groups per block
// rows of W per panel (one lane each) and rows of x per tile (R accumulators + R dots + W + x in
// the registers): AVX2, 16 registers of 8 lanes; AVX512-VNNI, 32 of 16
constexpr int kPanelRowsAvx2 = 8, kTileRowsAvx2 = 6;
constexpr int kPanelRowsVnni = 16, kTileRowsVnni = 12;
static_assert(2 * kPanelRowsAvx2 == kPanelRows, "an AVX2 panel is half of one made at load");

// A weight type W (weight_blocks.h): its Block, w = d (u - W::kOffset) (+ m where W::kMin), u as
// stored (W::stored; Q8_0's signed: W::kSigned).
template <int P>
struct PanelScales {
  alignas(64) float d[P];
};
template <int P>
struct PanelScalesAndMins {
  alignas(64) float d[P];
  alignas(64) float m[P];
};
// One block of a panel of P rows: their scales (and mins), then group g's integers of row r at
// q[g][4r .. 4r + 3].
template <class W, int P>
struct PanelBlock : std::conditional_t<W::kMin, PanelScalesAndMins<P>, PanelScales<P>> {
  alignas(64) uint8_t q[kGroups][4 * P];
};

// Packs W's rows [row0, row0 + P) (those below n; the rest zero) into nb panel blocks (every byte
// of a full panel is written, so only a partial one is cleared first).
template <class W, int P>
void pack_panel(const void* w, int64_t nb, int64_t row0, int64_t n, PanelBlock<W, P>* panel) {
  using Block = typename W::Block;
  if (row0 + P > n) std::memset(static_cast<void*>(panel), 0, static_cast<size_t>(nb) * sizeof(PanelBlock<W, P>));
  for (int r = 0; r < P && row0 + r < n; ++r) {
    const Block* row = static_cast<const Block*>(w) + (row0 + r) * nb;
    for (int64_t b = 0; b < nb; ++b) {
      uint8_t u[kQK8_0];
      W::stored(row[b], u);
      panel[b].d[r] = f16_to_float(row[b].d);
      if constexpr (W::kMin) panel[b].m[r] = f16_to_float(row[b].m);
      for (int g = 0; g < kGroups; ++g) std::memcpy(&panel[b].q[g][4 * r], u + 4 * g, 4);
    }
  }
}

// What a tile needs of x's block (i, b) besides its integers: d as f32, s = d sum q (for a type
// with a min), the AVX2 tile's i16 starting values of a row's two lanes, -offset times the sum of q
// over positions t % 4 < 2 (low half) and t % 4 >= 2 (high half), and sum q itself (the VNNI
// tiles' i32 lanes start at -offset sum q).
struct XBlockInfo {
  float d, s;
  int32_t start, sum;
};

// The offset the AVX2 tile's i16 lanes take off: the type's, except Q5_1's (0) where 16 products
// of up to 31 * 127 would overflow i16; there the lanes sum (u - 16) x and 16 sum x is added back
// in i32 after.
template <class W>
constexpr int32_t kI16Offset = W::kBits == 5 ? 16 : W::kOffset;

template <class W>
XBlockInfo x_block_info(const BlockQ8_0& x) {
  int32_t low = 0, high = 0;
  for (int t = 0; t < kQK8_0; ++t) (t % 4 < 2 ? low : high) += x.qs[t];
  const auto half = [](int32_t sum) { return static_cast<uint32_t>(static_cast<uint16_t>(-kI16Offset<W> * sum)); };
  const float d = f16_to_float(x.d);
  return {d, d * static_cast<float>(low + high), static_cast<int32_t>(half(low) | (half(high) << 16)), low + high};
}


// y[i, l] for i < R, l < cols: the dots of R rows of x (nb blocks each, ldx apart) with a panel.
#if defined(__AVX2__) && defined(__FMA__)
// Keeps v in a register at this point: without it GCC may regroup the additions of a block's
// groups (integer additions reassociate) into a tree whose products wait on the stack, which
// measured 1.5x slower.
inline void in_register(__m256i& v) { __asm__("" : "+x"(v)); }

// Dot: the product of Q8_0's groups, Int8DotAvx2 or a VNNI form (int8_dot.h).
template <class W, int R, class Dot>
[[gnu::always_inline]] inline void tile_avx2(const PanelBlock<W, kPanelRowsAvx2>* panel, int64_t nb, const BlockQ8_0* x, const XBlockInfo* xinfo,
               int64_t ldx, float* y, int64_t ldy, int64_t cols) {
  constexpr bool kI16 = !W::kSigned;  // the 4- and 5-bit types: i16 pairs
  const __m256i ones = _mm256_set1_epi16(1);
  __m256 acc[R];
  NF_UNROLL for (int i = 0; i < R; ++i) acc[i] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    __m256i dot[R];
    NF_UNROLL for (int i = 0; i < R; ++i) {
      const XBlockInfo& xb = xinfo[i * ldx + b];
      dot[i] = kI16 ? _mm256_set1_epi32(xb.start) : _mm256_setzero_si256();
    }
    NF_UNROLL for (int g = 0; g < kGroups; ++g) {
      const __m256i wv = _mm256_load_si256(reinterpret_cast<const __m256i*>(panel[b].q[g]));
      if constexpr (W::kSigned) {
        const __m256i wabs = _mm256_abs_epi8(wv);
        NF_UNROLL for (int i = 0; i < R; ++i) {
          const __m256i xv = _mm256_set1_epi32(load_word(x[i * ldx + b].qs + 4 * g));
          dot[i] = Dot::add(dot[i], wabs, _mm256_sign_epi8(xv, wv));
        }
      } else {
        NF_UNROLL for (int i = 0; i < R; ++i) {
          const __m256i xv = _mm256_set1_epi32(load_word(x[i * ldx + b].qs + 4 * g));
          dot[i] = _mm256_add_epi16(dot[i], _mm256_maddubs_epi16(wv, xv));
        }
      }
      NF_UNROLL for (int i = 0; i < R; ++i) in_register(dot[i]);
    }
    const __m256 dw = _mm256_load_ps(panel[b].d);
    NF_UNROLL for (int i = 0; i < R; ++i) {
      const XBlockInfo& xb = xinfo[i * ldx + b];
      __m256i sum = kI16 ? _mm256_madd_epi16(dot[i], ones) : dot[i];
      if constexpr (kI16 && kI16Offset<W> != W::kOffset)
        sum = _mm256_add_epi32(sum, _mm256_set1_epi32((kI16Offset<W> - W::kOffset) * xb.sum));
      acc[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum), _mm256_mul_ps(_mm256_set1_ps(xb.d), dw), acc[i]);
      if constexpr (W::kMin) acc[i] = _mm256_fmadd_ps(_mm256_load_ps(panel[b].m), _mm256_set1_ps(xb.s), acc[i]);
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

// The same sums on AVX512-VNNI: per group of every row one dpbusd (w's integers unsigned, Q8_0's
// moved up by 128; x's 4 bytes broadcast), the i32 lane starting at -offset sum q_x. x comes
// packed (gemm_vnni): its words and block infos at fixed offsets from one pointer per block.
template <class W, int R>
NF_TARGET_AVX512_VNNI void tile_vnni(const PanelBlock<W, kPanelRowsVnni>* panel, int64_t nb, const int32_t* xwords,
                              const XBlockInfo* xinfo, float* y, int64_t ldy, int64_t cols) {
  constexpr int32_t offset = W::kSigned ? 128 : W::kOffset;
  __m512 acc[R];
  NF_UNROLL for (int i = 0; i < R; ++i) acc[i] = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const int32_t* words = xwords + b * kGroups * kUnitRows;
    const XBlockInfo* info = xinfo + b * kUnitRows;
    __m512i dot[R];
    NF_UNROLL for (int i = 0; i < R; ++i) dot[i] = _mm512_set1_epi32(-offset * info[i].sum);
    NF_UNROLL for (int g = 0; g < kGroups; ++g) {
      __m512i wv = _mm512_load_si512(panel[b].q[g]);
      if constexpr (W::kSigned) wv = _mm512_xor_si512(wv, _mm512_set1_epi8(static_cast<char>(0x80)));
      NF_UNROLL for (int i = 0; i < R; ++i)
        dot[i] = _mm512_dpbusd_epi32(dot[i], wv, _mm512_set1_epi32(words[g * kUnitRows + i]));
    }
    const __m512 dw = _mm512_load_ps(panel[b].d);
    NF_UNROLL for (int i = 0; i < R; ++i) {
      // (the masked form of cvtepi32_ps, whose unmasked one GCC 12 warns of: an undefined source)
      const __m512 sum = _mm512_maskz_cvtepi32_ps(0xffff, dot[i]);
      acc[i] = _mm512_fmadd_ps(sum, _mm512_mul_ps(_mm512_set1_ps(info[i].d), dw), acc[i]);
      if constexpr (W::kMin) acc[i] = _mm512_fmadd_ps(_mm512_load_ps(panel[b].m), _mm512_set1_ps(info[i].s), acc[i]);
    }
  }
  const __mmask16 columns = cols >= kPanelRowsVnni ? 0xffff : static_cast<__mmask16>((1u << cols) - 1);
  NF_UNROLL for (int i = 0; i < R; ++i) _mm512_mask_storeu_ps(y + i * ldy, columns, acc[i]);
}
// pack_panel for the 16-row panels by gathers, one per 4 bytes of the 16 rows' blocks (lane r
// reads row row0 + r; lanes past n are masked off and give zeros, as pack_panel clears them): the
// same bytes, a few instructions where pack_panel's scalar loops take hundreds a block. (The
// masked forms of shifts and conversions: their unmasked ones have an undefined source that GCC 12
// warns of.)
struct PanelGather {
  __mmask16 rows;   // the rows there are
  __m512i offsets;  // row r's block at r * a row's bytes
};

NF_TARGET_AVX512_VNNI inline __m512i gather_words(const PanelGather& g, const unsigned char* at) {
  return _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), g.rows, g.offsets, at, 1);
}

// the f16 at `at` (the low half of each gathered word) as f32
NF_TARGET_AVX512_VNNI inline __m512 gather_f16(const PanelGather& g, const unsigned char* at) {
  return _mm512_maskz_cvtph_ps(0xffff, _mm512_maskz_cvtepi32_epi16(0xffff, gather_words(g, at)));
}

NF_TARGET_AVX512_VNNI inline __m512i shift_right(__m512i x, unsigned bits) { return _mm512_maskz_srli_epi32(0xffff, x, bits); }

// bits 0-3 of each word to bit 4 of its bytes 0-3: the fifth bits of a group of 4 values
NF_TARGET_AVX512_VNNI inline __m512i bit_to(__m512i x, int i, unsigned to) {
  return _mm512_maskz_slli_epi32(0xffff, _mm512_and_si512(x, _mm512_set1_epi32(1 << i)), to - i);
}
NF_TARGET_AVX512_VNNI inline __m512i fifth_bits(__m512i x) {
  return _mm512_or_si512(_mm512_or_si512(bit_to(x, 0, 4), bit_to(x, 1, 12)), _mm512_or_si512(bit_to(x, 2, 20), bit_to(x, 3, 28)));
}

template <class W>
NF_TARGET_AVX512_VNNI void pack_panel_vnni(const void* w, int64_t nb, int64_t row0, int64_t n,
                                           PanelBlock<W, kPanelRowsVnni>* panel) {
  using Block = typename W::Block;
  const int64_t row_bytes = nb * static_cast<int64_t>(sizeof(Block));
  const PanelGather g{row0 + kPanelRowsVnni <= n ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << (n - row0)) - 1),
                      _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                         _mm512_set1_epi32(static_cast<int32_t>(row_bytes)))};
  const auto* first = static_cast<const unsigned char*>(w) + row0 * row_bytes;
  const __m512i nibble = _mm512_set1_epi8(0x0f);
  for (int64_t b = 0; b < nb; ++b) {
    const unsigned char* block = first + b * static_cast<int64_t>(sizeof(Block));
    PanelBlock<W, kPanelRowsVnni>& out = panel[b];
    _mm512_store_ps(out.d, gather_f16(g, block + offsetof(Block, d)));
    if constexpr (W::kMin) _mm512_store_ps(out.m, gather_f16(g, block + offsetof(Block, m)));
    if constexpr (W::kSigned) {
      NF_UNROLL for (int j = 0; j < kGroups; ++j) _mm512_store_si512(out.q[j], gather_words(g, block + offsetof(Block, qs) + 4 * j));
    } else {
      // byte t of word j holds value 4j + t (low nibble) and 16 + 4j + t (high): groups j and j + 4
      __m512i qh = _mm512_setzero_si512();
      if constexpr (W::kBits == 5) qh = gather_words(g, block + offsetof(Block, qh));
      NF_UNROLL for (int j = 0; j < kGroups / 2; ++j) {
        const __m512i v = gather_words(g, block + offsetof(Block, qs) + 4 * j);
        __m512i lo = _mm512_and_si512(v, nibble), hi = _mm512_and_si512(shift_right(v, 4), nibble);
        if constexpr (W::kBits == 5) {
          lo = _mm512_or_si512(lo, fifth_bits(shift_right(qh, 4 * j)));
          hi = _mm512_or_si512(hi, fifth_bits(shift_right(qh, 16 + 4 * j)));
        }
        _mm512_store_si512(out.q[j], lo);
        _mm512_store_si512(out.q[j + kGroups / 2], hi);
      }
    }
  }
}

// pack_panel_vnni's bytes from a panel made at load (panels.h), its lines already the 16 rows'
// groups: Q8_0's w + 128 back to w, the nibbles into groups j and j + 4 (16 added where a fifth bit
// is set), the scales (and mins) to f32
template <class W>
NF_TARGET_AVX512_VNNI void unpack_stored_panel(const uint8_t* stored, int64_t nb, PanelBlock<W, kPanelRowsVnni>* panel) {
  constexpr PanelShape shape = panel_shape<W>();
  const __m512i nibble = _mm512_set1_epi8(0x0f), sixteen = _mm512_set1_epi8(0x10);
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* lines = panel_lines_of(stored, shape, b);
    PanelBlock<W, kPanelRowsVnni>& out = panel[b];
    _mm512_store_ps(out.d, panel_f16s(panel_scales_of(stored, shape, b)));
    if constexpr (W::kMin) _mm512_store_ps(out.m, panel_f16s(panel_mins_of(stored, shape, b)));
    if constexpr (W::kSigned) {
      NF_UNROLL for (int j = 0; j < kGroups; ++j)
        _mm512_store_si512(out.q[j], _mm512_xor_si512(_mm512_load_si512(lines + j * kPanelLine), _mm512_set1_epi8(static_cast<char>(0x80))));
    } else {
      NF_UNROLL for (int j = 0; j < kGroups / 2; ++j) {
        const __m512i v = _mm512_load_si512(lines + j * kPanelLine);
        __m512i lo = _mm512_and_si512(v, nibble), hi = _mm512_and_si512(shift_right(v, 4), nibble);
        if constexpr (W::kBits == 5) {
          lo = _mm512_mask_add_epi8(lo, _cvtu64_mask64(panel_fifth_bits(lines, j)), lo, sixteen);
          hi = _mm512_mask_add_epi8(hi, _cvtu64_mask64(panel_fifth_bits(lines, j + kGroups / 2)), hi, sixteen);
        }
        _mm512_store_si512(out.q[j], lo);
        _mm512_store_si512(out.q[j + kGroups / 2], hi);
      }
    }
  }
}
// pack_panel's bytes for rows 8h .. 8h + 7 of a panel made at load (panels.h, 16 rows): line j's
// half h as groups j (low nibbles) and j + 4 (high), 16 added where a fifth bit is set, the scales
// (and mins) to f32; where unpacking its rows (unpack_panel_row_*) and packing them again had taken
// a scalar step per value
template <class W>
void unpack_stored_half(const uint8_t* stored, int64_t nb, int h, PanelBlock<W, kPanelRowsAvx2>* panel) {
  constexpr PanelShape shape = panel_shape<W>();
  const __m256i nibble = _mm256_set1_epi8(0x0f);
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* lines = panel_lines_of(stored, shape, b);
    PanelBlock<W, kPanelRowsAvx2>& out = panel[b];
    _mm256_store_ps(out.d, panel_f16s_8(panel_scales_of(stored, shape, b) + 8 * h));
    if constexpr (W::kMin) _mm256_store_ps(out.m, panel_f16s_8(panel_mins_of(stored, shape, b) + 8 * h));
    NF_UNROLL for (int j = 0; j < kGroups / 2; ++j) {
      const __m256i v = _mm256_load_si256(reinterpret_cast<const __m256i*>(lines + j * kPanelLine + 32 * h));
      __m256i lo = _mm256_and_si256(v, nibble), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), nibble);
      if constexpr (W::kBits == 5) {
        lo = _mm256_or_si256(lo, fifth_bits_avx2(lines - kPanelLine + 8 * j, h));
        hi = _mm256_or_si256(hi, fifth_bits_avx2(lines - kPanelLine + 8 * (j + kGroups / 2), h));
      }
      _mm256_store_si256(reinterpret_cast<__m256i*>(out.q[j]), lo);
      _mm256_store_si256(reinterpret_cast<__m256i*>(out.q[j + kGroups / 2]), hi);
    }
  }
}
#else
struct Int8DotAvx2 {};  // the portable tile below

template <class W, int R, class>
void tile_avx2(const PanelBlock<W, kPanelRowsAvx2>* panel, int64_t nb, const BlockQ8_0* x, const XBlockInfo* xinfo,
               int64_t ldx, float* y, int64_t ldy, int64_t cols) {
  for (int i = 0; i < R; ++i)
    for (int r = 0; r < cols; ++r) {
      float acc = 0.0f;
      for (int64_t b = 0; b < nb; ++b) {
        int32_t dot = 0;
        for (int t = 0; t < kQK8_0; ++t) {
          const uint8_t u = panel[b].q[t / 4][4 * r + t % 4];
          dot += x[i * ldx + b].qs[t] * (W::kSigned ? static_cast<int8_t>(u) : u - W::kOffset);
        }
        const XBlockInfo& xb = xinfo[i * ldx + b];
        acc = std::fma(static_cast<float>(dot), xb.d * panel[b].d[r], acc);
        if constexpr (W::kMin) acc = std::fma(panel[b].m[r], xb.s, acc);
      }
      y[i * ldy + r] = acc;
    }
}

template <class W, int R>
void tile_vnni(const PanelBlock<W, kPanelRowsVnni>*, int64_t, const int32_t*, const XBlockInfo*, float*, int64_t,
               int64_t) {
  NF_FAIL("quant_gemm: AVX512-VNNI kernels are not built without AVX2");
}

template <class W>
void pack_panel_vnni(const void*, int64_t, int64_t, int64_t, PanelBlock<W, kPanelRowsVnni>*) {
  NF_FAIL("quant_gemm: AVX512-VNNI kernels are not built without AVX2");
}

template <class W>
void unpack_stored_panel(const uint8_t*, int64_t, PanelBlock<W, kPanelRowsVnni>*) {
  NF_FAIL("quant_gemm: AVX512-VNNI kernels are not built without AVX2");
}

template <class W>
void unpack_stored_half(const uint8_t*, int64_t, int, PanelBlock<W, kPanelRowsAvx2>*) {
  NF_FAIL("quant_gemm: panels made at load are not built without AVX2");
}
#endif

// Whether a panel's rows of nb blocks can be gathered: the gathers' offsets, row r at r times a
// row's bytes, are 32-bit.
template <class W, int P>
bool gatherable(int64_t nb) {
  return P * nb * static_cast<int64_t>(sizeof(typename W::Block)) <= INT32_MAX;
}

// Rows [i0, i1) of x against a panel, in tiles of up to R rows.
// (always inlined, so that a VNNI caller's target reaches Dot::add in every compiler)
template <class W, class Dot, int R = kTileRowsAvx2>
[[gnu::always_inline]] inline void rows_against_panel(const PanelBlock<W, kPanelRowsAvx2>* panel, int64_t nb, const BlockQ8_0* x,
                        const XBlockInfo* xinfo, int64_t i0, int64_t i1, float* y, int64_t ldy, int64_t cols) {
  for (; i0 + R <= i1; i0 += R) tile_avx2<W, R, Dot>(panel, nb, x + i0 * nb, xinfo + i0 * nb, nb, y + i0 * ldy, ldy, cols);
  if constexpr (R > 1) {
    if (i0 < i1) rows_against_panel<W, Dot, R - 1>(panel, nb, x, xinfo, i0, i1, y, ldy, cols);
  }
}

template <class W>
using PanelRows = void (*)(const PanelBlock<W, kPanelRowsAvx2>*, int64_t, const BlockQ8_0*, const XBlockInfo*, int64_t,
                           int64_t, float*, int64_t, int64_t);
#if defined(__AVX2__) && defined(__FMA__)
// the tiles compiled for AVX-VNNI's vpdpbusd (int8_dot.h)
template <class W>
NF_TARGET_AVX_VNNI void rows_against_panel_avx_vnni(const PanelBlock<W, kPanelRowsAvx2>* panel, int64_t nb,
                                                    const BlockQ8_0* x, const XBlockInfo* xinfo, int64_t i0, int64_t i1,
                                                    float* y, int64_t ldy, int64_t cols) {
  rows_against_panel<W, Int8DotAvxVnni>(panel, nb, x, xinfo, i0, i1, y, ldy, cols);
}
#endif

// The 8-row panels: AVX2's tiles, or AVX-VNNI's. (`stored`: w is the panels made at load, panels.h,
// of 16 rows, each half of one unpacked into a panel of 8)
template <class W>
void gemm_avx2(const void* w, int64_t n, int64_t k, const BlockQ8_0* xq, int64_t m, float* y, int64_t ldy,
               bool stored = false) {
  PanelRows<W> rows = rows_against_panel<W, Int8DotAvx2>;
#if defined(__AVX2__) && defined(__FMA__)
  if (W::kSigned && int8_isa() == Int8Isa::avx_vnni) rows = rows_against_panel_avx_vnni<W>;
#endif
  constexpr int P = kPanelRowsAvx2;
  const int64_t nb = k / kQK8_0;
  std::vector<XBlockInfo> xinfo(static_cast<size_t>(m * nb));
  parallel_for(m, std::max<int64_t>(1, kParallelGrain / k), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin * nb; i < end * nb; ++i) xinfo[static_cast<size_t>(i)] = x_block_info<W>(xq[i]);
  });
  const int64_t panels = (n + P - 1) / P, row_units = (m + kUnitRows - 1) / kUnitRows;
  // Units are (panel, rows of x), panel-major, so a thread's run of units packs each panel once.
  parallel_for(panels * row_units, 1, [&](int64_t begin, int64_t end) {
    std::vector<PanelBlock<W, P>> packed(static_cast<size_t>(nb));
    int64_t packed_panel = -1;
    for (int64_t unit = begin; unit < end; ++unit) {
      const int64_t panel = unit / row_units, i0 = unit % row_units * kUnitRows, j0 = panel * P;
      if (panel != packed_panel) {
        if (stored) unpack_stored_half<W>(static_cast<const uint8_t*>(w) + panel / 2 * panel_bytes(panel_shape<W>(), k), nb, static_cast<int>(panel % 2), packed.data());
        else pack_panel<W, P>(w, nb, j0, n, packed.data());
        packed_panel = panel;
      }
      rows(packed.data(), nb, xq, xinfo.data(), i0, std::min(m, i0 + kUnitRows), y + j0, ldy, std::min<int64_t>(P, n - j0));
    }
  });
}

// Rows [i0, i1) of a unit of packed x against a panel, in tiles of up to R rows.
template <class W, int R = kTileRowsVnni>
void unit_against_panel(const PanelBlock<W, kPanelRowsVnni>* panel, int64_t nb, const int32_t* xwords,
                        const XBlockInfo* xinfo, int64_t i0, int64_t i1, float* y, int64_t ldy, int64_t cols) {
  for (; i0 + R <= i1; i0 += R) tile_vnni<W, R>(panel, nb, xwords + i0, xinfo + i0, y + i0 * ldy, ldy, cols);
  if constexpr (R > 1) {
    if (i0 < i1) unit_against_panel<W, R - 1>(panel, nb, xwords, xinfo, i0, i1, y, ldy, cols);
  }
}

// x packed per unit of kUnitRows rows (x_units.h), then the panels of W against the units; W its
// rows, or (`stored`) the panels made at load (panels.h).
template <class W>
void gemm_vnni(const void* w, int64_t n, int64_t k, const BlockQ8_0* xq, int64_t m, float* y, int64_t ldy,
               bool stored = false) {
  constexpr int P = kPanelRowsVnni;
  const int64_t nb = k / kQK8_0, units = (m + kUnitRows - 1) / kUnitRows;
  std::vector<int32_t> words;
  std::vector<XBlockInfo> info;
  pack_x_units(xq, m, nb, words, info, [](const BlockQ8_0& block) { return x_block_info<W>(block); });
  const int64_t panels = (n + P - 1) / P;
  const bool gathers = gatherable<W, P>(nb);
  // Units are (panel, unit of x), panel-major, so a thread's run of units packs each panel once.
  parallel_for(panels * units, 1, [&](int64_t begin, int64_t end) {
    std::vector<PanelBlock<W, P>> packed(static_cast<size_t>(nb));
    int64_t packed_panel = -1;
    for (int64_t at = begin; at < end; ++at) {
      const int64_t panel = at / units, unit = at % units, j0 = panel * P, i0 = unit * kUnitRows;
      if (panel != packed_panel) {
        if (stored) unpack_stored_panel<W>(static_cast<const uint8_t*>(w) + panel * panel_bytes(panel_shape<W>(), k), nb, packed.data());
        else if (gathers) pack_panel_vnni<W>(w, nb, j0, n, packed.data());
        else pack_panel<W, P>(w, nb, j0, n, packed.data());
        packed_panel = panel;
      }
      unit_against_panel<W>(packed.data(), nb, words.data() + unit * nb * kGroups * kUnitRows,
                            info.data() + unit * nb * kUnitRows, 0, std::min(kUnitRows, m - i0), y + i0 * ldy + j0,
                            ldy, std::min<int64_t>(P, n - j0));
    }
  });
}

template <class W>
void gemm(const void* w, int64_t n, int64_t k, const void* xq, int64_t m, float* y, int64_t ldy) {
  const auto* x = static_cast<const BlockQ8_0*>(xq);
  if (int8_isa() == Int8Isa::avx512_vnni) return gemm_vnni<W>(w, n, k, x, m, y, ldy);
  gemm_avx2<W>(w, n, k, x, m, y, ldy);
}

}  // namespace

void gemm_panels_q8_0(const void* panels, int64_t n, int64_t k, const void* xq, int64_t m, float* y, int64_t ldy) {
  gemm_vnni<Q8_0W>(panels, n, k, static_cast<const BlockQ8_0*>(xq), m, y, ldy, /*stored=*/true);
}
void gemm_panels_q4_0(const void* panels, int64_t n, int64_t k, const void* xq, int64_t m, float* y, int64_t ldy) {
  const auto* x = static_cast<const BlockQ8_0*>(xq);
  if (int8_isa() == Int8Isa::avx512_vnni) return gemm_vnni<Q4_0W>(panels, n, k, x, m, y, ldy, /*stored=*/true);
  gemm_avx2<Q4_0W>(panels, n, k, x, m, y, ldy, /*stored=*/true);  // (AVX2's panels, panels_pay)
}
void gemm_panels_q4_1(const void* panels, int64_t n, int64_t k, const void* xq, int64_t m, float* y, int64_t ldy) {
  const auto* x = static_cast<const BlockQ8_0*>(xq);
  if (int8_isa() == Int8Isa::avx512_vnni) return gemm_vnni<Q4_1W>(panels, n, k, x, m, y, ldy, /*stored=*/true);
  gemm_avx2<Q4_1W>(panels, n, k, x, m, y, ldy, /*stored=*/true);
}
void gemm_panels_q5_0(const void* panels, int64_t n, int64_t k, const void* xq, int64_t m, float* y, int64_t ldy) {
  const auto* x = static_cast<const BlockQ8_0*>(xq);
  if (int8_isa() == Int8Isa::avx512_vnni) return gemm_vnni<Q5_0W>(panels, n, k, x, m, y, ldy, /*stored=*/true);
  gemm_avx2<Q5_0W>(panels, n, k, x, m, y, ldy, /*stored=*/true);
}
void gemm_panels_q5_1(const void* panels, int64_t n, int64_t k, const void* xq, int64_t m, float* y, int64_t ldy) {
  const auto* x = static_cast<const BlockQ8_0*>(xq);
  if (int8_isa() == Int8Isa::avx512_vnni) return gemm_vnni<Q5_1W>(panels, n, k, x, m, y, ldy, /*stored=*/true);
  gemm_avx2<Q5_1W>(panels, n, k, x, m, y, ldy, /*stored=*/true);
}
void gemm_q8_0(const void* w, int64_t n, int64_t k, const void* xq, int64_t m, float* y, int64_t ldy) {
  gemm<Q8_0W>(w, n, k, xq, m, y, ldy);
}
void gemm_q4_0(const void* w, int64_t n, int64_t k, const void* xq, int64_t m, float* y, int64_t ldy) {
  gemm<Q4_0W>(w, n, k, xq, m, y, ldy);
}
void gemm_q4_1(const void* w, int64_t n, int64_t k, const void* xq, int64_t m, float* y, int64_t ldy) {
  gemm<Q4_1W>(w, n, k, xq, m, y, ldy);
}
void gemm_q5_0(const void* w, int64_t n, int64_t k, const void* xq, int64_t m, float* y, int64_t ldy) {
  gemm<Q5_0W>(w, n, k, xq, m, y, ldy);
}
void gemm_q5_1(const void* w, int64_t n, int64_t k, const void* xq, int64_t m, float* y, int64_t ldy) {
  gemm<Q5_1W>(w, n, k, xq, m, y, ldy);
}

bool quant_gemm_supports(QuantType wtype) { return quant_traits(wtype).gemm != nullptr; }

void quant_gemm(QuantType wtype, const void* w, int64_t n, int64_t k, const void* xq, int64_t m, float* y, int64_t ldy) {
  const QuantTypeTraits& traits = quant_traits(wtype);
  NF_CHECK(traits.gemm != nullptr, "quant_gemm: weights of type ", quant_type_name(wtype),
           " are not supported (the type has no integer GEMM)");
  NF_CHECK(k % traits.activation_block == 0, "quant_gemm: k = ", k, " is not a multiple of ", quant_type_name(wtype),
           "'s block size ", traits.activation_block);
  NF_CHECK(n >= 0 && m >= 0 && ldy >= n, "quant_gemm: bad shape m = ", m, ", n = ", n, ", ldy = ", ldy);
  if (m == 0 || n == 0) return;
  if (k == 0) {
    for (int64_t i = 0; i < m; ++i) std::fill(y + i * ldy, y + i * ldy + n, 0.0f);
    return;
  }
  traits.gemm(w, n, k, xq, m, y, ldy);
}

}  // namespace nf::cpu
