// y = x W^T over Q8_0 x and quantised W, register-blocked for AVX2 without VNNI. W is repacked
// per call, a panel of 8 rows at a time, so that one 256-bit register holds 4 consecutive values
// of each of the 8 rows (value t of row r at byte 4r + t % 4); x's matching 4 bytes are broadcast,
// and _mm256_maddubs_epi16 (u8 x i8, adjacent pairs summed to i16) + _mm256_madd_epi16 leave the
// 8 rows' partial dots in the 8 i32 lanes: 32 multiply-adds an instruction, where an f32 FMA does
// 8. Per block the 8 integer dots are scaled by d_x * d_w (8 lanes) into f32 accumulators.
//  - Q4_0: the nibbles q in [0, 15] are the unsigned operand and x the signed one; the i16 lanes
//    start at -8 sum x over their 16 positions and collect the whole block, so each ends at
//    sum (q - 8) x, |.| <= 16 * 8 * 127: exact in i16 (additions wrap, only the result must fit).
//  - Q8_0: both operands are signed, so |w| is the unsigned operand and x takes w's sign
//    (_mm256_sign_epi8); a pair of products reaches 2 * 128 * 127, so every group goes to i32.
#include "ops/cpu/quant_gemm.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "nanoformer/core/dtype.h"
#include "nanoformer/core/error.h"
#include "ops/cpu/loops.h"

namespace nf::cpu {
namespace {

// The tile's loops over rows, panels and groups unrolled, so its dots and accumulators stay in registers.
#define NF_UNROLL _Pragma("GCC unroll 8")

constexpr int kPanelRows = 8;         // rows of W per panel: one lane each
constexpr int kGroups = kQK8_0 / 4;   // 4-value groups per block
constexpr int64_t kUnitRows = 48;     // rows of x per work unit

// One block of a panel: the 8 rows' scales, then group g's values of row r at q[g][4r .. 4r + 3]
// (Q8_0: the int8 values; Q4_0: the nibbles q in [0, 15]).
struct PanelBlock {
  alignas(32) float d[kPanelRows];
  alignas(32) uint8_t q[kGroups][4 * kPanelRows];
};
static_assert(sizeof(PanelBlock) == 288);

// What a tile needs of x's block (i, b) besides its values: d as f32 and, for Q4_0, the i16
// starting values of a row lane, -8 times the sum of x over positions t % 4 < 2 (low half) and
// t % 4 >= 2 (high half).
struct XBlockInfo {
  float d;
  int32_t start;
};

inline int32_t load_word(const void* p) {
  int32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

XBlockInfo x_block_info(QuantType wtype, const BlockQ8_0& x) {
  int32_t low = 0, high = 0;
  if (wtype == QuantType::q4_0)
    for (int t = 0; t < kQK8_0; ++t) (t % 4 < 2 ? low : high) += x.qs[t];
  const auto half = [](int32_t sum) { return static_cast<uint32_t>(static_cast<uint16_t>(-8 * sum)); };
  return {f16_bits_to_float(x.d), static_cast<int32_t>(half(low) | (half(high) << 16))};
}

// Packs W's rows [row0, row0 + 8) (those below n; the rest zero) into nb panel blocks.
void pack_panel(QuantType wtype, const uint8_t* w, int64_t row_bytes, int64_t row0, int64_t n, int64_t nb,
                PanelBlock* panel) {
  std::memset(static_cast<void*>(panel), 0, static_cast<size_t>(nb) * sizeof(PanelBlock));
  for (int r = 0; r < kPanelRows && row0 + r < n; ++r) {
    const uint8_t* row = w + (row0 + r) * row_bytes;
    for (int64_t b = 0; b < nb; ++b) {
      PanelBlock& out = panel[b];
      uint8_t values[kQK8_0];
      if (wtype == QuantType::q8_0) {
        const auto* block = reinterpret_cast<const BlockQ8_0*>(row) + b;
        out.d[r] = f16_bits_to_float(block->d);
        std::memcpy(values, block->qs, kQK8_0);
      } else {
        const auto* block = reinterpret_cast<const BlockQ4_0*>(row) + b;
        out.d[r] = f16_bits_to_float(block->d);
        for (int j = 0; j < kQK4_0 / 2; ++j) {
          values[j] = block->qs[j] & 0x0f;
          values[j + kQK4_0 / 2] = block->qs[j] >> 4;
        }
      }
      for (int g = 0; g < kGroups; ++g) std::memcpy(&out.q[g][4 * r], values + 4 * g, 4);
    }
  }
}

// y[i, 8p + l] for i < R, p < P, 8p + l < cols: the dots of R rows of x with P panels (of nb
// blocks each, one after another) of W.
#if defined(__AVX2__) && defined(__FMA__)
template <QuantType W, int R, int P>
void tile(const PanelBlock* panels, int64_t nb, const BlockQ8_0* x, const XBlockInfo* xinfo, int64_t ldx, float* y,
          int64_t ldy, int64_t cols) {
  const __m256i ones = _mm256_set1_epi16(1);
  __m256 acc[R][P];
  NF_UNROLL for (int i = 0; i < R; ++i)
    NF_UNROLL for (int p = 0; p < P; ++p) acc[i][p] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    __m256i dot[R][P];  // Q4_0: i16 pairs; Q8_0: i32
    NF_UNROLL for (int i = 0; i < R; ++i)
      NF_UNROLL for (int p = 0; p < P; ++p)
        dot[i][p] = W == QuantType::q4_0 ? _mm256_set1_epi32(xinfo[i * ldx + b].start) : _mm256_setzero_si256();
    NF_UNROLL for (int g = 0; g < kGroups; ++g) {
      __m256i wv[P];
      NF_UNROLL for (int p = 0; p < P; ++p) wv[p] = _mm256_load_si256(reinterpret_cast<const __m256i*>(panels[p * nb + b].q[g]));
      if constexpr (W == QuantType::q4_0) {
        NF_UNROLL for (int i = 0; i < R; ++i) {
          const __m256i xv = _mm256_set1_epi32(load_word(x[i * ldx + b].qs + 4 * g));
          NF_UNROLL for (int p = 0; p < P; ++p) dot[i][p] = _mm256_add_epi16(dot[i][p], _mm256_maddubs_epi16(wv[p], xv));
        }
      } else {
        __m256i wabs[P];
        NF_UNROLL for (int p = 0; p < P; ++p) wabs[p] = _mm256_abs_epi8(wv[p]);
        NF_UNROLL for (int i = 0; i < R; ++i) {
          const __m256i xv = _mm256_set1_epi32(load_word(x[i * ldx + b].qs + 4 * g));
          NF_UNROLL for (int p = 0; p < P; ++p) {
            const __m256i pairs = _mm256_maddubs_epi16(wabs[p], _mm256_sign_epi8(xv, wv[p]));
            dot[i][p] = _mm256_add_epi32(dot[i][p], _mm256_madd_epi16(pairs, ones));
          }
        }
      }
    }
    __m256 dw[P];
    NF_UNROLL for (int p = 0; p < P; ++p) dw[p] = _mm256_load_ps(panels[p * nb + b].d);
    NF_UNROLL for (int i = 0; i < R; ++i) {
      const __m256 dx = _mm256_set1_ps(xinfo[i * ldx + b].d);
      NF_UNROLL for (int p = 0; p < P; ++p) {
        const __m256i sum = W == QuantType::q4_0 ? _mm256_madd_epi16(dot[i][p], ones) : dot[i][p];
        acc[i][p] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum), _mm256_mul_ps(dx, dw[p]), acc[i][p]);
      }
    }
  }
  NF_UNROLL for (int i = 0; i < R; ++i)
    NF_UNROLL for (int p = 0; p < P; ++p) {
      float* out = y + i * ldy + p * kPanelRows;
      const int64_t valid = cols - p * kPanelRows;
      if (valid >= kPanelRows) {
        _mm256_storeu_ps(out, acc[i][p]);
      } else if (valid > 0) {
        alignas(32) float lanes[kPanelRows];
        _mm256_store_ps(lanes, acc[i][p]);
        std::copy(lanes, lanes + valid, out);
      }
    }
}
#else
template <QuantType W, int R, int P>
void tile(const PanelBlock* panels, int64_t nb, const BlockQ8_0* x, const XBlockInfo* xinfo, int64_t ldx, float* y,
          int64_t ldy, int64_t cols) {
  for (int i = 0; i < R; ++i)
    for (int64_t j = 0; j < cols && j < P * kPanelRows; ++j) {
      const PanelBlock* panel = panels + j / kPanelRows * nb;
      const int r = static_cast<int>(j % kPanelRows);
      float acc = 0.0f;
      for (int64_t b = 0; b < nb; ++b) {
        int32_t dot = 0;
        for (int t = 0; t < kQK8_0; ++t) {
          const uint8_t q = panel[b].q[t / 4][4 * r + t % 4];
          dot += x[i * ldx + b].qs[t] * (W == QuantType::q4_0 ? q - 8 : static_cast<int8_t>(q));
        }
        acc = std::fma(static_cast<float>(dot), xinfo[i * ldx + b].d * panel[b].d[r], acc);
      }
      y[i * ldy + j] = acc;
    }
}
#endif

// Tile shapes: rows of x by panels of W (registers: R P accumulators, R P dots, P weights).
template <QuantType W>
struct TileShape;
template <>
struct TileShape<QuantType::q4_0> {
  static constexpr int rows = 6, panels = 1;
};
template <>
struct TileShape<QuantType::q8_0> {
  static constexpr int rows = 6, panels = 1;
};

// Rows [i0, i1) of x against one group of panels, in tiles of up to R rows.
template <QuantType W, int R = TileShape<W>::rows>
void rows_against_panels(const PanelBlock* panels, int64_t nb, const BlockQ8_0* x, const XBlockInfo* xinfo, int64_t i0,
                         int64_t i1, float* y, int64_t ldy, int64_t cols) {
  constexpr int P = TileShape<W>::panels;
  for (; i0 + R <= i1; i0 += R) tile<W, R, P>(panels, nb, x + i0 * nb, xinfo + i0 * nb, nb, y + i0 * ldy, ldy, cols);
  if constexpr (R > 1) {
    if (i0 < i1) rows_against_panels<W, R - 1>(panels, nb, x, xinfo, i0, i1, y, ldy, cols);
  }
}

template <QuantType W>
void gemm(const void* w, int64_t n, int64_t k, const BlockQ8_0* xq, int64_t m, float* y, int64_t ldy) {
  const int64_t nb = k / kQK8_0, row_bytes = static_cast<int64_t>(quant_row_bytes(W, k));
  std::vector<XBlockInfo> xinfo(static_cast<size_t>(m * nb));
  parallel_for(m, std::max<int64_t>(1, kParallelGrain / k), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin * nb; i < end * nb; ++i) xinfo[static_cast<size_t>(i)] = x_block_info(W, xq[i]);
  });
  constexpr int64_t group_rows = kPanelRows * TileShape<W>::panels;
  const int64_t groups = (n + group_rows - 1) / group_rows, row_units = (m + kUnitRows - 1) / kUnitRows;
  // Units are (group of panels, rows of x), panel-major, so a thread's run of units packs each
  // group once.
  parallel_for(groups * row_units, 1, [&](int64_t begin, int64_t end) {
    std::vector<PanelBlock> packed(static_cast<size_t>(TileShape<W>::panels * nb));
    int64_t packed_group = -1;
    for (int64_t u = begin; u < end; ++u) {
      const int64_t group = u / row_units, i0 = u % row_units * kUnitRows, j0 = group * group_rows;
      if (group != packed_group) {
        for (int p = 0; p < TileShape<W>::panels; ++p)
          pack_panel(W, static_cast<const uint8_t*>(w), row_bytes, j0 + p * kPanelRows, n, nb, &packed[p * nb]);
        packed_group = group;
      }
      rows_against_panels<W>(packed.data(), nb, xq, xinfo.data(), i0, std::min(m, i0 + kUnitRows), y + j0, ldy,
                             std::min(group_rows, n - j0));
    }
  });
}

}  // namespace

bool quant_gemm_supports(QuantType wtype) { return wtype == QuantType::q8_0 || wtype == QuantType::q4_0; }

void quant_gemm(QuantType wtype, const void* w, int64_t n, int64_t k, const BlockQ8_0* xq, int64_t m, float* y,
                int64_t ldy) {
  NF_CHECK(quant_gemm_supports(wtype), "quant_gemm: weights of type ", quant_type_name(wtype),
           " are not supported (expects q8_0 or q4_0)");
  NF_CHECK(k % kQK8_0 == 0, "quant_gemm: k = ", k, " is not a multiple of the block size ", kQK8_0);
  NF_CHECK(n >= 0 && m >= 0 && ldy >= n, "quant_gemm: bad shape m = ", m, ", n = ", n, ", ldy = ", ldy);
  if (m == 0 || n == 0) return;
  if (k == 0) {
    for (int64_t i = 0; i < m; ++i) std::fill(y + i * ldy, y + i * ldy + n, 0.0f);
    return;
  }
  if (wtype == QuantType::q8_0) gemm<QuantType::q8_0>(w, n, k, xq, m, y, ldy);
  else gemm<QuantType::q4_0>(w, n, k, xq, m, y, ldy);
}

}  // namespace nf::cpu
