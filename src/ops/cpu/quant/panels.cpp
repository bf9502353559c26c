// Panels (panels.h): packing a weight's rows into them, and decode's product over them. Per block
// of a panel and row of x, the 16 rows' integer sums in one register's lanes:
//   isum = -offset sum q_x + sum_g dpbusd(line g, x's group g)      (offset 128: Q8_0's w + 128; 8: Q4_0; 16: Q5_0; 0: Q4_1, Q5_1)
//   y    = sum over blocks of fma(isum, d_w d_x, y)                 (16 rows at once; no horizontal sum)
//          (then fma(m_w, d_x sum q_x, y) for Q4_1, Q5_1)
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
  if (wanted == "0" || quant_traits(type).gemv_panels == nullptr) return false;
  if (int8_isa() == Int8Isa::avx512_vnni) return true;
#if defined(__AVX2__) && defined(__FMA__)
  return type != QuantType::q8_0;
#else
  return false;
#endif
}

namespace {

// The offset the lanes start from (times sum q_x): Q8_0's stored w + 128, the others' kOffset
template <class W>
constexpr int32_t kPanelOffset = W::kSigned ? 128 : W::kOffset;
// the lines of a block's bytes or nibbles (the 5-bit types' fifth-bit line before them)
template <class W>
constexpr int64_t kValueLines = W::kSigned ? 8 : 4;

template <class W>
void pack_panels(const void* rows, int64_t n, int64_t k, void* panels) {
  constexpr PanelShape shape = panel_shape<W>();
  const int64_t nb = k / 32;
  pack_each_row<typename W::Block>(rows, n, nb, panel_bytes(shape, k), panels, [&](uint8_t* panel, int64_t r, const auto* row) {
    for (int64_t b = 0; b < nb; ++b) {
      auto* lines = const_cast<uint8_t*>(panel_lines_of(panel, shape, b));
      if (row == nullptr) {  // a padding row: Q8_0's w = 0 is stored as 128 (its scales are 0 either way)
        if constexpr (W::kSigned)
          for (int64_t g = 0; g < kValueLines<W>; ++g) std::memset(lines + g * kPanelLine + 4 * r, 0x80, 4);
        continue;
      }
      for (int64_t g = 0; g < kValueLines<W>; ++g)
        for (int t = 0; t < 4; ++t) {
          // Q8_0: w + 128 (as a byte: w xor 0x80); the others: the block's bytes as they are (panels.h)
          if constexpr (W::kSigned) lines[g * kPanelLine + 4 * r + t] = static_cast<uint8_t>(row[b].qs[4 * g + t]) ^ 0x80;
          else lines[g * kPanelLine + 4 * r + t] = row[b].qs[4 * g + t];
        }
      if constexpr (W::kBits == 5) {  // value v's fifth bit (bit v of qh) to bit 4r + v % 4 of mask v / 4
        const uint32_t qh = load_u32(row[b].qh);
        for (int v = 0; v < 32; ++v)
          lines[-kPanelLine + 8 * (v / 4) + (4 * r + v % 4) / 8] |= static_cast<uint8_t>((qh >> v & 1) << ((4 * r + v % 4) % 8));
      }
      const_cast<uint16_t*>(panel_scales_of(panel, shape, b))[r] = row[b].d;
      if constexpr (W::kMin) const_cast<uint16_t*>(panel_mins_of(panel, shape, b))[r] = row[b].m;
    }
  });
}

// Row `row`'s blocks as the file has them, from its panel (pack_panels undone for one row)
template <class W>
void unpack_panel_row(const void* panels, int64_t k, int64_t row, void* blocks) {
  using Block = typename W::Block;
  constexpr PanelShape shape = panel_shape<W>();
  const int64_t nb = k / 32, r = row % kPanelRows;
  const auto* panel = static_cast<const uint8_t*>(panels) + static_cast<size_t>(row / kPanelRows) * panel_bytes(shape, k);
  auto* out = static_cast<Block*>(blocks);
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* lines = panel_lines_of(panel, shape, b);
    for (int64_t g = 0; g < kValueLines<W>; ++g)
      for (int t = 0; t < 4; ++t) {
        const uint8_t stored = lines[g * kPanelLine + 4 * r + t];
        if constexpr (W::kSigned) out[b].qs[4 * g + t] = static_cast<int8_t>(stored ^ 0x80);
        else out[b].qs[4 * g + t] = stored;
      }
    if constexpr (W::kBits == 5) {
      uint32_t qh = 0;
      for (int v = 0; v < 32; ++v) qh |= static_cast<uint32_t>(panel_fifth_bits(lines, v / 4) >> (4 * r + v % 4) & 1) << v;
      std::memcpy(out[b].qh, &qh, 4);
    }
    out[b].d = panel_scales_of(panel, shape, b)[r];
    if constexpr (W::kMin) out[b].m = panel_mins_of(panel, shape, b)[r];
  }
}

// The tiles of a 32-value type W, as panels_driver.h takes them; decode's streams: Q8_0 and the
// 5-bit types one, Q4_0 and Q4_1 four (panels_driver.h says why)
template <class W>
struct Tiles32 {
  static size_t bytes(int64_t k) { return panel_bytes(panel_shape<W>(), k); }
  static constexpr int kStreams = W::kSigned || W::kBits == 5 ? 1 : 4;

  // out[i][c] = row r0 + i of x times row c of the panel, the portable integers and f32 steps
  template <int R>
  static void portable(const uint8_t* panel, const PanelX& x, int64_t r0, float (&out)[R][kPanelRows]) {
    constexpr PanelShape shape = panel_shape<W>();
    for (int i = 0; i < R; ++i)
      for (int64_t c = 0; c < kPanelRows; ++c) {
        float acc = 0.0f;
        for (int64_t b = 0; b < x.nb; ++b) {
          const uint8_t* lines = panel_lines_of(panel, shape, b);
          const int8_t* q = x.a->row_q(r0 + i) + b * 32;
          int32_t isum = x.start[(r0 + i) * x.nb + b];
          for (int g = 0; g < 8; ++g)
            for (int t = 0; t < 4; ++t) {
              const uint8_t stored = lines[(g % kValueLines<W>)*kPanelLine + 4 * c + t];
              int u = W::kSigned ? stored : g < 4 ? stored & 0x0f : stored >> 4;  // the unsigned operand
              if constexpr (W::kBits == 5) u |= static_cast<int>(panel_fifth_bits(lines, g) >> (4 * c + t) & 1) << 4;
              isum += u * q[4 * g + t];
            }
          const float dw = f16_to_float(panel_scales_of(panel, shape, b)[c]);
          acc = std::fma(static_cast<float>(isum), dw * x.a->row_d(r0 + i)[b], acc);
          if constexpr (W::kMin) acc = std::fma(f16_to_float(panel_mins_of(panel, shape, b)[c]), x.sums[(r0 + i) * x.nb + b], acc);
        }
        out[i][c] = acc;
      }
  }

#if defined(__AVX2__) && defined(__FMA__)
  // A block's line j of nibbles as groups j (lo) and j + 4 (hi), the fifth bits added where W has them.
  // The 4-bit types' hi stays in place, 16 times its values (v & 0xf0: one operation fewer a line;
  // vpdpbusd's products do not saturate), and its sums are shifted down once a block (high_sums).
  NF_TARGET_AVX512_VNNI static void nibble_groups(const uint8_t* lines, int j, __m512i& lo, __m512i& hi) {
    const __m512i nibble = _mm512_set1_epi8(0x0f), v = _mm512_load_si512(lines + j * kPanelLine);
    lo = _mm512_and_si512(v, nibble);
    if constexpr (W::kBits == 4) hi = _mm512_and_si512(v, _mm512_set1_epi8(static_cast<char>(0xf0)));
    else hi = _mm512_and_si512(_mm512_maskz_srli_epi32(0xffff, v, 4), nibble);
    if constexpr (W::kBits == 5) {
      const __m512i sixteen = _mm512_set1_epi8(0x10);
      lo = _mm512_mask_add_epi8(lo, _cvtu64_mask64(panel_fifth_bits(lines, j)), lo, sixteen);
      hi = _mm512_mask_add_epi8(hi, _cvtu64_mask64(panel_fifth_bits(lines, j + 4)), hi, sixteen);
    }
  }

  // the sums of a block's high groups from what nibble_groups gave them (exact: 16 times an integer)
  NF_TARGET_AVX512_VNNI static __m512i high_sums(__m512i odd) {
    if constexpr (!W::kSigned && W::kBits == 4) return _mm512_maskz_srai_epi32(0xffff, odd, 4);
    return odd;
  }

  // y's lanes += the block's sums: fma(isum, d_w d_x, y), then for a type with a min fma(m_w, d_x sum q_x, y)
  NF_TARGET_AVX512_VNNI static __m512 scale_block(const uint8_t* panel, int64_t b, const PanelX& x, int64_t r, __m512i isum, __m512 acc) {
    constexpr PanelShape shape = panel_shape<W>();
    // (the masked form of cvtepi32_ps, whose unmasked one GCC 12 warns of: an undefined source)
    acc = _mm512_fmadd_ps(_mm512_maskz_cvtepi32_ps(0xffff, isum), _mm512_mul_ps(panel_f16s(panel_scales_of(panel, shape, b)), _mm512_set1_ps(x.a->row_d(r)[b])), acc);
    if constexpr (W::kMin) acc = _mm512_fmadd_ps(panel_f16s(panel_mins_of(panel, shape, b)), _mm512_set1_ps(x.sums[r * x.nb + b]), acc);
    return acc;
  }

  // AVX2 (Q4_0, Q4_1, Q5_0, Q5_1): a line's halves of 8 rows, maddubs of the nibbles (the fifth
  // bits added: fifth_bits_avx2) with x's 4 bytes into i16 pairs (each at most 2 x 31 x 128), the
  // low nibbles' and the high ones' each summed over the block's 4 lines (below 2^15; the 4-bit
  // types' 8 together, 2 x 15 x 128 each), vpmaddwd by ones into i32 from the lanes' start: the
  // VNNI tile's integers, and its f32 steps
  template <int R>
  static void avx2(const uint8_t* panel, const PanelX& x, int64_t r0, float (&out)[R][kPanelRows]) {
    static_assert(!W::kSigned, "the 4- and 5-bit types' AVX2 tile");
    constexpr PanelShape shape = panel_shape<W>();
    const __m256i nibble = _mm256_set1_epi8(0x0f), ones = _mm256_set1_epi16(1);
    constexpr int64_t pair_bytes = (2 * shape.lines + shape.scale_lines) * kPanelLine, ahead = stream_ahead(pair_bytes);
    __m256 acc[R][2];
    for (int i = 0; i < R; ++i) acc[i][0] = acc[i][1] = _mm256_setzero_ps();
    for (int64_t b = 0; b < x.nb; ++b) {
      if (b % 2 == 0) prefetch_l2(panel_pair(panel, shape, b) + ahead, pair_bytes, kPrefetchStrideAvx2);  // (as decode's streams)
      const uint8_t* lines = panel_lines_of(panel, shape, b);
      __m256i low16[R][2], high16[R][2];
      for (int i = 0; i < R; ++i) low16[i][0] = low16[i][1] = high16[i][0] = high16[i][1] = _mm256_setzero_si256();
      for (int j = 0; j < 4; ++j)
        for (int h = 0; h < 2; ++h) {
          const __m256i v = _mm256_load_si256(reinterpret_cast<const __m256i*>(lines + j * kPanelLine + 32 * h));
          __m256i lo = _mm256_and_si256(v, nibble), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), nibble);
          if constexpr (W::kBits == 5) {
            lo = _mm256_or_si256(lo, fifth_bits_avx2(lines - kPanelLine + 8 * j, h));
            hi = _mm256_or_si256(hi, fifth_bits_avx2(lines - kPanelLine + 8 * (j + 4), h));
          }
          for (int i = 0; i < R; ++i) {
            low16[i][h] = _mm256_add_epi16(low16[i][h], _mm256_maddubs_epi16(lo, _mm256_set1_epi32(x.word(r0 + i, b * 32 + 4 * j))));
            high16[i][h] = _mm256_add_epi16(high16[i][h], _mm256_maddubs_epi16(hi, _mm256_set1_epi32(x.word(r0 + i, b * 32 + 4 * (j + 4)))));
          }
        }
      for (int h = 0; h < 2; ++h) {
        const __m256 dw = panel_f16s_8(panel_scales_of(panel, shape, b) + 8 * h);
        for (int i = 0; i < R; ++i) {
          const __m256i pairs = W::kBits == 4 ? _mm256_madd_epi16(_mm256_add_epi16(low16[i][h], high16[i][h]), ones)
                                              : _mm256_add_epi32(_mm256_madd_epi16(low16[i][h], ones), _mm256_madd_epi16(high16[i][h], ones));
          const __m256i isum = _mm256_add_epi32(pairs, _mm256_set1_epi32(x.start[(r0 + i) * x.nb + b]));
          acc[i][h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_mul_ps(dw, _mm256_set1_ps(x.a->row_d(r0 + i)[b])), acc[i][h]);
          if constexpr (W::kMin)
            acc[i][h] = _mm256_fmadd_ps(panel_f16s_8(panel_mins_of(panel, shape, b) + 8 * h), _mm256_set1_ps(x.sums[(r0 + i) * x.nb + b]), acc[i][h]);
        }
      }
    }
    for (int i = 0; i < R; ++i) _mm256_storeu_ps(out[i], acc[i][0]), _mm256_storeu_ps(out[i] + 8, acc[i][1]);
  }

  // The same on AVX512-VNNI: per block, each row of x's lanes start at -offset sum q_x and take the
  // block's groups in two chains (even and odd groups, so each waits on half the vpdpbusd latencies)
  template <int R>
  NF_TARGET_AVX512_VNNI static void vnni(const uint8_t* panel, const PanelX& x, int64_t r0, float (&out)[R][kPanelRows]) {
    constexpr PanelShape shape = panel_shape<W>();
    __m512 acc[R];
    for (int i = 0; i < R; ++i) acc[i] = _mm512_setzero_ps();
    for (int64_t b = 0; b < x.nb; ++b) {
      const uint8_t* lines = panel_lines_of(panel, shape, b);
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
          __m512i lo, hi;
          nibble_groups(lines, j, lo, hi);
          for (int i = 0; i < R; ++i) {
            even[i] = _mm512_dpbusd_epi32(even[i], lo, _mm512_set1_epi32(x.word(r0 + i, b * 32 + 4 * j)));
            odd[i] = _mm512_dpbusd_epi32(odd[i], hi, _mm512_set1_epi32(x.word(r0 + i, b * 32 + 4 * (j + 4))));
          }
        }
      }
      for (int i = 0; i < R; ++i) acc[i] = scale_block(panel, b, x, r0 + i, _mm512_add_epi32(even[i], high_sums(odd[i])), acc[i]);
    }
    for (int i = 0; i < R; ++i) _mm512_storeu_ps(out[i], acc[i]);
  }

  // One row of x (decode) against S panels at once, panel s at panels[s]: S streams read side by
  // side, block by block (panels_driver.h)
  NF_TARGET_AVX512_VNNI static void streams(const uint8_t* const* panels, const PanelX& x, int64_t r, float (&out)[kStreams][kPanelRows]) {
    constexpr int S = kStreams;
    constexpr PanelShape shape = panel_shape<W>();
    __m512 acc[S];
    for (int s = 0; s < S; ++s) acc[s] = _mm512_setzero_ps();
    constexpr int64_t pair_bytes = (2 * shape.lines + shape.scale_lines) * kPanelLine, ahead = stream_ahead(pair_bytes);
    for (int64_t b = 0; b < x.nb; ++b) {
      if (b % 2 == 0)  // a pair of blocks, ahead in each stream (which runs on into its next panel)
        for (int s = 0; s < S; ++s) prefetch_l2(panel_pair(panels[s], shape, b) + ahead, pair_bytes);
      __m512i even[S], odd[S];
      const __m512i start = _mm512_set1_epi32(x.start[r * x.nb + b]);
      for (int s = 0; s < S; ++s) even[s] = start, odd[s] = _mm512_setzero_si512();
      if constexpr (W::kSigned) {
        for (int g = 0; g < 8; g += 2) {
          const __m512i x0 = _mm512_set1_epi32(x.word(r, b * 32 + 4 * g)), x1 = _mm512_set1_epi32(x.word(r, b * 32 + 4 * (g + 1)));
          for (int s = 0; s < S; ++s) {
            const uint8_t* lines = panel_lines_of(panels[s], shape, b);
            even[s] = _mm512_dpbusd_epi32(even[s], _mm512_load_si512(lines + g * kPanelLine), x0);
            odd[s] = _mm512_dpbusd_epi32(odd[s], _mm512_load_si512(lines + (g + 1) * kPanelLine), x1);
          }
        }
      } else {
        for (int j = 0; j < 4; ++j) {
          const __m512i x0 = _mm512_set1_epi32(x.word(r, b * 32 + 4 * j)), x1 = _mm512_set1_epi32(x.word(r, b * 32 + 4 * (j + 4)));
          for (int s = 0; s < S; ++s) {
            __m512i lo, hi;
            nibble_groups(panel_lines_of(panels[s], shape, b), j, lo, hi);
            even[s] = _mm512_dpbusd_epi32(even[s], lo, x0);
            odd[s] = _mm512_dpbusd_epi32(odd[s], hi, x1);
          }
        }
      }
      for (int s = 0; s < S; ++s) acc[s] = scale_block(panels[s], b, x, r, _mm512_add_epi32(even[s], high_sums(odd[s])), acc[s]);
    }
    for (int s = 0; s < S; ++s) _mm512_storeu_ps(out[s], acc[s]);
  }
#endif
};

template <class W>
void gemv_panels(std::span<TileArgs> bases, int64_t m, bool scalar) {
  const QuantizedActivations& a = quantise_x(bases, m, 32, scalar);
  const int64_t nb = bases[0].k / 32;
  thread_local std::vector<int32_t> start;
  thread_local std::vector<float> sums;
  start.resize(static_cast<size_t>(m * nb));
  if constexpr (W::kMin) sums.resize(static_cast<size_t>(m * nb));
  for (int64_t r = 0; r < m; ++r)
    for (int64_t b = 0; b < nb; ++b) {
      int32_t sum = 0;
      for (int t = 0; t < 32; ++t) sum += a.row_q(r)[b * 32 + t];
      start[static_cast<size_t>(r * nb + b)] = -kPanelOffset<W> * sum;
      if constexpr (W::kMin) sums[static_cast<size_t>(r * nb + b)] = a.row_d(r)[b] * static_cast<float>(sum);
    }
  const PanelX x{&a, start.data(), W::kMin ? sums.data() : nullptr, nb};
#if defined(__AVX2__) && defined(__FMA__)
  if (!scalar && int8_isa() == Int8Isa::avx512_vnni) return gemv_panels_on<Tiles32<W>, PanelTiles::vnni>(bases, x, m);
  if constexpr (!W::kSigned)
    if (!scalar) return gemv_panels_on<Tiles32<W>, PanelTiles::avx2>(bases, x, m);
#endif
  gemv_panels_on<Tiles32<W>, PanelTiles::portable>(bases, x, m);
}

}  // namespace

size_t panel_bytes_of(QuantType type, int64_t k) {
  switch (type) {
    case QuantType::q8_0: return panel_bytes(panel_shape<Q8_0W>(), k);
    case QuantType::q4_0: return panel_bytes(panel_shape<Q4_0W>(), k);
    case QuantType::q4_1: return panel_bytes(panel_shape<Q4_1W>(), k);
    case QuantType::q5_0: return panel_bytes(panel_shape<Q5_0W>(), k);
    case QuantType::q5_1: return panel_bytes(panel_shape<Q5_1W>(), k);
    case QuantType::q4_k: return k_panel_bytes<Q4_KPanelBlock>(k);
    case QuantType::q5_k: return k_panel_bytes<Q5_KPanelBlock>(k);
    case QuantType::q6_k: return k_panel_bytes<Q6_KPanelBlock>(k);
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
void unpack_panel_row_q8_0(const void* panels, int64_t k, int64_t row, void* blocks) {
  unpack_panel_row<Q8_0W>(panels, k, row, blocks);
}
void gemv_panels_q8_0(std::span<TileArgs> bases, int64_t m, bool scalar) { gemv_panels<Q8_0W>(bases, m, scalar); }
void pack_panels_q4_0(const void* rows, int64_t n, int64_t k, void* panels) { pack_panels<Q4_0W>(rows, n, k, panels); }
void unpack_panel_row_q4_0(const void* panels, int64_t k, int64_t row, void* blocks) {
  unpack_panel_row<Q4_0W>(panels, k, row, blocks);
}
void gemv_panels_q4_0(std::span<TileArgs> bases, int64_t m, bool scalar) { gemv_panels<Q4_0W>(bases, m, scalar); }
void pack_panels_q4_1(const void* rows, int64_t n, int64_t k, void* panels) { pack_panels<Q4_1W>(rows, n, k, panels); }
void unpack_panel_row_q4_1(const void* panels, int64_t k, int64_t row, void* blocks) {
  unpack_panel_row<Q4_1W>(panels, k, row, blocks);
}
void gemv_panels_q4_1(std::span<TileArgs> bases, int64_t m, bool scalar) { gemv_panels<Q4_1W>(bases, m, scalar); }
void pack_panels_q5_0(const void* rows, int64_t n, int64_t k, void* panels) { pack_panels<Q5_0W>(rows, n, k, panels); }
void unpack_panel_row_q5_0(const void* panels, int64_t k, int64_t row, void* blocks) {
  unpack_panel_row<Q5_0W>(panels, k, row, blocks);
}
void gemv_panels_q5_0(std::span<TileArgs> bases, int64_t m, bool scalar) { gemv_panels<Q5_0W>(bases, m, scalar); }
void pack_panels_q5_1(const void* rows, int64_t n, int64_t k, void* panels) { pack_panels<Q5_1W>(rows, n, k, panels); }
void unpack_panel_row_q5_1(const void* panels, int64_t k, int64_t row, void* blocks) {
  unpack_panel_row<Q5_1W>(panels, k, row, blocks);
}
void gemv_panels_q5_1(std::span<TileArgs> bases, int64_t m, bool scalar) { gemv_panels<Q5_1W>(bases, m, scalar); }

}  // namespace nf::cpu
