// Panels (panels.h): packing a weight's rows into them, and decode's product over them. Per block
// of a panel and row of x, the 16 rows' integer sums in one register's lanes:
//   isum = -offset sum q_x + sum_g dpbusd(line g, x's group g)      (offset 128: Q8_0's w + 128; 8: Q4_0)
//   y    = sum over blocks of fma(isum, d_w d_x, y)                 (16 rows at once; no horizontal sum)
// The portable tile computes the same integers and the same f32 steps, so the two give the same bits.
#include "ops/cpu/quant/panels.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <vector>

#include "nanoformer/core/error.h"
#include "ops/cpu/loops/loops.h"
#include "ops/cpu/quant/activation_quant.h"
#include "ops/cpu/quant/int8_dot.h"
#include "ops/cpu/quant/int8_isa.h"
#include "ops/cpu/quant/panels_driver.h"
#include "ops/cpu/quant/type_traits.h"
#include "ops/cpu/quant/weight_blocks.h"
#include "ops/cpu/simd/simd.h"

namespace nf::cpu {

bool panels_pay(QuantType type) {
  // (read at each call: it is asked once per weight, at load)
  const char* env = std::getenv("NANOFORMER_PANELS");
  const std::string_view wanted = env == nullptr ? "" : env;
  NF_CHECK(wanted.empty() || wanted == "0" || wanted == "1", "NANOFORMER_PANELS=", wanted, ": expected 0 or 1");
  if (wanted == "0" || quant_traits(type).gemv_panels == nullptr || int8_isa() != Int8Isa::avx512_vnni) return false;
  return true;
}

namespace {

// The offset the lanes start from (times sum q_x): Q8_0's stored w + 128, Q4_0's 8
template <class W>
constexpr int32_t kPanelOffset = W::kSigned ? 128 : W::kOffset;

template <class W>
void pack_panels(const void* rows, int64_t n, int64_t k, void* panels) {
  using Block = typename W::Block;
  constexpr int64_t L = panel_lines<W>();
  const int64_t nb = k / 32, count = (n + kPanelRows - 1) / kPanelRows;
  const size_t bytes = panel_bytes(L, k);
  parallel_for(count, 1, [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      auto* panel = static_cast<uint8_t*>(panels) + static_cast<size_t>(p) * bytes;
      std::memset(panel, 0, bytes);
      for (int64_t r = 0; r < kPanelRows && p * kPanelRows + r < n; ++r) {
        const Block* row = static_cast<const Block*>(rows) + (p * kPanelRows + r) * nb;
        for (int64_t b = 0; b < nb; ++b) {
          auto* lines = const_cast<uint8_t*>(panel_lines_of(panel, L, b));
          for (int64_t g = 0; g < L; ++g)
            for (int t = 0; t < 4; ++t) {
              // Q8_0: w + 128 (as a byte: w xor 0x80); Q4_0: the block's bytes as they are (panels.h)
              if constexpr (W::kSigned) lines[g * kPanelLine + 4 * r + t] = static_cast<uint8_t>(row[b].qs[4 * g + t]) ^ 0x80;
              else lines[g * kPanelLine + 4 * r + t] = row[b].qs[4 * g + t];
            }
          const_cast<uint16_t*>(panel_scales_of(panel, L, b))[r] = row[b].d;
        }
      }
      // the padding rows: Q8_0's w = 0 is stored as 128 (their scales are 0 either way)
      if constexpr (W::kSigned)
        for (int64_t r = n - p * kPanelRows; r < kPanelRows; ++r)
          for (int64_t b = 0; b < nb; ++b)
            for (int64_t g = 0; g < L; ++g) std::memset(const_cast<uint8_t*>(panel_lines_of(panel, L, b)) + g * kPanelLine + 4 * r, 0x80, 4);
    }
  });
}

// Row `row`'s blocks as the file has them, from its panel (pack_panels undone for one row)
template <class W>
void unpack_panel_row(const void* panels, int64_t k, int64_t row, void* blocks) {
  using Block = typename W::Block;
  constexpr int64_t L = panel_lines<W>();
  const int64_t nb = k / 32, r = row % kPanelRows;
  const auto* panel = static_cast<const uint8_t*>(panels) + static_cast<size_t>(row / kPanelRows) * panel_bytes(L, k);
  auto* out = static_cast<Block*>(blocks);
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* lines = panel_lines_of(panel, L, b);
    for (int64_t g = 0; g < L; ++g)
      for (int t = 0; t < 4; ++t) {
        const uint8_t stored = lines[g * kPanelLine + 4 * r + t];
        if constexpr (W::kSigned) out[b].qs[4 * g + t] = static_cast<int8_t>(stored ^ 0x80);
        else out[b].qs[4 * g + t] = stored;
      }
    out[b].d = panel_scales_of(panel, L, b)[r];
  }
}

// out[i][c] = row r0 + i of x times row c of the panel, the portable integers and f32 steps
template <class W, int R>
void tile_portable(const uint8_t* panel, const PanelX& x, int64_t r0, float (&out)[R][kPanelRows]) {
  constexpr int64_t L = panel_lines<W>();
  for (int i = 0; i < R; ++i)
    for (int64_t c = 0; c < kPanelRows; ++c) {
      float acc = 0.0f;
      for (int64_t b = 0; b < x.nb; ++b) {
        const uint8_t* lines = panel_lines_of(panel, L, b);
        const int8_t* q = x.a->row_q(r0 + i) + b * 32;
        int32_t isum = x.start[(r0 + i) * x.nb + b];
        for (int64_t g = 0; g < 8; ++g)
          for (int t = 0; t < 4; ++t) {
            const uint8_t stored = lines[(g % L) * kPanelLine + 4 * c + t];
            const int u = W::kSigned ? stored : g < 4 ? stored & 0x0f : stored >> 4;  // the unsigned operand
            isum += u * q[4 * g + t];
          }
        const float dw = f16_to_float(panel_scales_of(panel, L, b)[c]);
        acc = std::fma(static_cast<float>(isum), dw * x.a->row_d(r0 + i)[b], acc);
      }
      out[i][c] = acc;
    }
}

#if defined(__AVX2__) && defined(__FMA__)
// The same on AVX512-VNNI: per block, each row of x's lanes start at -offset sum q_x and take the
// block's groups in two chains (even and odd groups, so each waits on half the vpdpbusd latencies)
template <class W, int R>
NF_TARGET_AVX512_VNNI void tile_vnni(const uint8_t* panel, const PanelX& x, int64_t r0, float (&out)[R][kPanelRows]) {
  constexpr int64_t L = panel_lines<W>();
  const __m512i nibble = _mm512_set1_epi8(0x0f);
  __m512 acc[R];
  for (int i = 0; i < R; ++i) acc[i] = _mm512_setzero_ps();
  for (int64_t b = 0; b < x.nb; ++b) {
    const uint8_t* lines = panel_lines_of(panel, L, b);
    __m512i even[R], odd[R];
    for (int i = 0; i < R; ++i) even[i] = _mm512_set1_epi32(x.start[(r0 + i) * x.nb + b]), odd[i] = _mm512_setzero_si512();
    if constexpr (W::kSigned) {
      for (int g = 0; g < 8; g += 2) {
        const __m512i w0 = _mm512_load_si512(lines + g * kPanelLine), w1 = _mm512_load_si512(lines + (g + 1) * kPanelLine);
        for (int i = 0; i < R; ++i) {
          even[i] = _mm512_dpbusd_epi32(even[i], w0, _mm512_set1_epi32(x.word(r0 + i, b * 32 + 4 * g)));
          odd[i] = _mm512_dpbusd_epi32(odd[i], w1, _mm512_set1_epi32(x.word(r0 + i, b * 32 + 4 * (g + 1))));
        }
      }
    } else {
      for (int j = 0; j < 4; ++j) {
        const __m512i v = _mm512_load_si512(lines + j * kPanelLine);
        const __m512i lo = _mm512_and_si512(v, nibble), hi = _mm512_and_si512(_mm512_maskz_srli_epi32(0xffff, v, 4), nibble);
        for (int i = 0; i < R; ++i) {
          even[i] = _mm512_dpbusd_epi32(even[i], lo, _mm512_set1_epi32(x.word(r0 + i, b * 32 + 4 * j)));
          odd[i] = _mm512_dpbusd_epi32(odd[i], hi, _mm512_set1_epi32(x.word(r0 + i, b * 32 + 4 * (j + 4))));
        }
      }
    }
    const __m512 dw = _mm512_maskz_cvtph_ps(0xffff, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(panel_scales_of(panel, L, b))));
    for (int i = 0; i < R; ++i) {
      // (the masked form of cvtepi32_ps, whose unmasked one GCC 12 warns of: an undefined source)
      const __m512 isum = _mm512_maskz_cvtepi32_ps(0xffff, _mm512_add_epi32(even[i], odd[i]));
      acc[i] = _mm512_fmadd_ps(isum, _mm512_mul_ps(dw, _mm512_set1_ps(x.a->row_d(r0 + i)[b])), acc[i]);
    }
  }
  for (int i = 0; i < R; ++i) _mm512_storeu_ps(out[i], acc[i]);
}

// One row of x (decode) against S panels at once, panel s at panels[s]: S streams read side by
// side, block by block (panels_driver.h)
template <class W, int S>
NF_TARGET_AVX512_VNNI void streams_vnni(const uint8_t* const* panels, const PanelX& x, int64_t r, float (&out)[S][kPanelRows]) {
  constexpr int64_t L = panel_lines<W>();
  const __m512i nibble = _mm512_set1_epi8(0x0f);
  __m512 acc[S];
  for (int s = 0; s < S; ++s) acc[s] = _mm512_setzero_ps();
  constexpr int64_t pair_bytes = (2 * L + 1) * kPanelLine, ahead = stream_ahead(pair_bytes);
  for (int64_t b = 0; b < x.nb; ++b) {
    if (b % 2 == 0)  // a pair of blocks, ahead in each stream (which runs on into its next panel)
      for (int s = 0; s < S; ++s) prefetch_l2(panel_pair(panels[s], L, b) + ahead, pair_bytes);
    __m512i even[S], odd[S];
    const __m512i start = _mm512_set1_epi32(x.start[r * x.nb + b]);
    for (int s = 0; s < S; ++s) even[s] = start, odd[s] = _mm512_setzero_si512();
    if constexpr (W::kSigned) {
      for (int g = 0; g < 8; g += 2) {
        const __m512i x0 = _mm512_set1_epi32(x.word(r, b * 32 + 4 * g)), x1 = _mm512_set1_epi32(x.word(r, b * 32 + 4 * (g + 1)));
        for (int s = 0; s < S; ++s) {
          const uint8_t* lines = panel_lines_of(panels[s], L, b);
          even[s] = _mm512_dpbusd_epi32(even[s], _mm512_load_si512(lines + g * kPanelLine), x0);
          odd[s] = _mm512_dpbusd_epi32(odd[s], _mm512_load_si512(lines + (g + 1) * kPanelLine), x1);
        }
      }
    } else {
      for (int j = 0; j < 4; ++j) {
        const __m512i x0 = _mm512_set1_epi32(x.word(r, b * 32 + 4 * j)), x1 = _mm512_set1_epi32(x.word(r, b * 32 + 4 * (j + 4)));
        for (int s = 0; s < S; ++s) {
          const __m512i v = _mm512_load_si512(panel_lines_of(panels[s], L, b) + j * kPanelLine);
          const __m512i lo = _mm512_and_si512(v, nibble), hi = _mm512_and_si512(_mm512_maskz_srli_epi32(0xffff, v, 4), nibble);
          even[s] = _mm512_dpbusd_epi32(even[s], lo, x0);
          odd[s] = _mm512_dpbusd_epi32(odd[s], hi, x1);
        }
      }
    }
    const __m512 dx = _mm512_set1_ps(x.a->row_d(r)[b]);
    for (int s = 0; s < S; ++s) {
      const auto* scales = reinterpret_cast<const __m256i*>(panel_scales_of(panels[s], L, b));
      const __m512 dw = _mm512_maskz_cvtph_ps(0xffff, _mm256_loadu_si256(scales));
      const __m512 isum = _mm512_maskz_cvtepi32_ps(0xffff, _mm512_add_epi32(even[s], odd[s]));
      acc[s] = _mm512_fmadd_ps(isum, _mm512_mul_ps(dw, dx), acc[s]);
    }
  }
  for (int s = 0; s < S; ++s) _mm512_storeu_ps(out[s], acc[s]);
}
#endif

// the tiles of a 32-value type W, as panels_driver.h takes them
template <class W>
struct Tiles32 {
  static size_t bytes(int64_t k) { return panel_bytes(panel_lines<W>(), k); }
  template <int R>
  static void portable(const uint8_t* panel, const PanelX& x, int64_t r0, float (&out)[R][kPanelRows]) {
    tile_portable<W, R>(panel, x, r0, out);
  }
  template <int R>
  static void vnni(const uint8_t* panel, const PanelX& x, int64_t r0, float (&out)[R][kPanelRows]) {
#if defined(__AVX2__) && defined(__FMA__)
    tile_vnni<W, R>(panel, x, r0, out);
#else
    tile_portable<W, R>(panel, x, r0, out);
#endif
  }
  // decode's streams (panels_driver.h): Q8_0 one, Q4_0 four (panels.h says why)
  static constexpr int kStreams = W::kSigned ? 1 : 4;
  static void streams(const uint8_t* const* panels, const PanelX& x, int64_t r, float (&out)[kStreams][kPanelRows]) {
#if defined(__AVX2__) && defined(__FMA__)
    streams_vnni<W, kStreams>(panels, x, r, out);
#else
    for (int s = 0; s < kStreams; ++s) tile_portable<W, 1>(panels[s], x, r, reinterpret_cast<float(&)[1][kPanelRows]>(out[s]));
#endif
  }
};

template <class W>
void gemv_panels(std::span<TileArgs> bases, int64_t m, bool scalar) {
  const QuantizedActivations& a = quantise_x(bases, m, 32, scalar);
  const int64_t nb = bases[0].k / 32;
  thread_local std::vector<int32_t> start;
  start.resize(static_cast<size_t>(m * nb));
  for (int64_t r = 0; r < m; ++r)
    for (int64_t b = 0; b < nb; ++b) {
      int32_t sum = 0;
      for (int t = 0; t < 32; ++t) sum += a.row_q(r)[b * 32 + t];
      start[static_cast<size_t>(r * nb + b)] = -kPanelOffset<W> * sum;
    }
  const PanelX x{&a, start.data(), nb};
#if defined(__AVX2__) && defined(__FMA__)
  if (!scalar && int8_isa() == Int8Isa::avx512_vnni) return gemv_panels_on<Tiles32<W>, true>(bases, x, m);
#endif
  gemv_panels_on<Tiles32<W>, false>(bases, x, m);
}

}  // namespace

size_t panel_bytes_of(QuantType type, int64_t k) {
  switch (type) {
    case QuantType::q8_0: return panel_bytes(panel_lines<Q8_0W>(), k);
    case QuantType::q4_0: return panel_bytes(panel_lines<Q4_0W>(), k);
    case QuantType::q4_k: return q4_k_panel_bytes(k);
    default: NF_FAIL("panels: ", quant_type_name(type), " has none");
  }
}

std::shared_ptr<Storage> pack_panels(const QuantizedTensor& weight) {
  const QuantTypeTraits& traits = quant_traits(weight.type());
  if (!panels_pay(weight.type()) || weight.cols() % 32 != 0 || weight.rows() == 0) return nullptr;
  if (weight.cols() % quant_type_info(weight.type()).block_size != 0) return nullptr;
  const int64_t count = (weight.rows() + kPanelRows - 1) / kPanelRows;
  auto panels = Storage::huge_pages(static_cast<size_t>(count) * panel_bytes_of(weight.type(), weight.cols()));
  traits.pack_panels(weight.data(), weight.rows(), weight.cols(), panels->data());
  return panels;
}

void pack_panels_q8_0(const void* rows, int64_t n, int64_t k, void* panels) { pack_panels<Q8_0W>(rows, n, k, panels); }
void pack_panels_q4_0(const void* rows, int64_t n, int64_t k, void* panels) { pack_panels<Q4_0W>(rows, n, k, panels); }
void unpack_panel_row_q8_0(const void* panels, int64_t k, int64_t row, void* blocks) {
  unpack_panel_row<Q8_0W>(panels, k, row, blocks);
}
void unpack_panel_row_q4_0(const void* panels, int64_t k, int64_t row, void* blocks) {
  unpack_panel_row<Q4_0W>(panels, k, row, blocks);
}
void gemv_panels_q8_0(std::span<TileArgs> bases, int64_t m, bool scalar) { gemv_panels<Q8_0W>(bases, m, scalar); }
void gemv_panels_q4_0(std::span<TileArgs> bases, int64_t m, bool scalar) { gemv_panels<Q4_0W>(bases, m, scalar); }

}  // namespace nf::cpu
