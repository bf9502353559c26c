#pragma once
// A weight's rows interleaved for AVX512-VNNI, made once at load (with_kernel_layout,
// ops/quantized.h), as ik_llama.cpp's Q8_0_R8 / Q4_0_R8 repack a file's rows at load (`-rtr`,
// ikawrakow/ik_llama.cpp at 8337e4cd3, ggml/src/iqk/iqk_gemm_legacy_quants.cpp): W's rows in
// panels of 16 (the last padded with zero rows), and within a panel, block b's 4-value groups of
// the 16 rows side by side in one 64-byte line, group g of row r at bytes 4r .. 4r + 3. One
// vpdpbusd (u8 x s8, four adjacent products summed into each i32 lane) then takes a group of all 16
// rows against x's 4 bytes broadcast, each lane one row's sum: no horizontal sums, and one scale
// vector serves the 16 rows. The stored integers are the unsigned operand:
//   Q8_0  8 lines a block, w + 128 (the lane starts at -128 sum q_x)
//   Q4_0  4 lines a block of nibbles, line j's low nibbles group j, its high ones group j + 4 (the
//         lane starts at -8 sum q_x); Q4_1 the same (from 0, and m_w d_x sum q_x added per block)
//   Q5_0  Q4_0's lines and a line of the fifth bits as masks, one masked byte add a group (from -16);
//   Q5_1  Q5_0's (from 0, with Q4_1's m)
// A panel: its blocks in pairs, each pair's lines and then their 16 f16 scales each (32 bytes a
// block); so a full panel is 16 rows' bytes of the file, the lines stay 64-byte aligned, and a
// panel is one stream.
// Decode (gemv_panels) reads a panel once for up to 4 rows of x at a time; prefill's GEMM
// (quant_gemm.cpp) unpacks a panel's lines instead of gathering them from 16 rows. Q4_K's, Q5_K's
// and Q6_K's super-blocks take the same idea below.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <type_traits>

#include <memory>

#include "nanoformer/core/quant_type.h"
#include "nanoformer/core/quantized_tensor.h"
#include "ops/cpu/quant/gemv_tile.h"
#include "ops/cpu/quant/int8_dot.h"
#include "ops/cpu/quant/quant_blocks.h"

namespace nf::cpu {

inline constexpr int64_t kPanelRows = 16;
inline constexpr int64_t kPanelLine = 64;  // bytes of one 4-value group of the 16 rows

// Decode's streams (panels_driver.h) ask for the lines they will read kStreamAheadBytes ahead (into
// the next panel at a panel's end) into L2, every kPrefetchStride-th line: the hardware prefetchers
// bring the lines between. Q8_0 and Q4_K read one stream a thread with these prefetches where they
// had read four, each asking for every line 2 KiB ahead: a token's matrix-vector products of a
// model's shapes in a scratch program, the two ways alternated pass by pass on one Zen 4 (2
// threads, panels on huge pages; medians; docs/quantisation.md, "One stream"): minimind2-small Q8_0 in the L3 cache 493 -> 341 us, gpt2-124m Q8_0 from memory
// 4.19 -> 3.57 ms, qwen2.5-0.5b Q8_0 18.7 -> 15.9 ms (gpt2-124m Q4_K, bench_quant_gemv's token,
// 2.9-3.6 -> 2.7-2.9 ms). Without any prefetch the one stream is as fast in the cache and 0.93-0.98x
// from memory.
inline constexpr int64_t kStreamAheadBytes = 4096;
inline constexpr int64_t kPrefetchStride = 4;
// AVX2's tiles ask for every line (the K types' tiles, which asked for none, too): on a Zen 3 (AVX2
// alone; 2026-12-01, bench_quant_gemv, from memory) every 4th line left a panel stream at 0.55-0.69x
// the file's rows' speed (Q4_0 3072 x 768 at one thread 204-211 us against 145-149), every line
// brought it level (145-153); 1 to 16 pairs ahead and prefetcht0 or t1 measured alike. A token's
// products, before / after, 3 alternating rounds, medians: one thread 1.27x (Q4_K, gpt2-124m) to
// 1.92x (Q5_0, minimind2-small), two threads 1.12x to 1.76x (docs/quantisation.md, "Zen 3").
inline constexpr int64_t kPrefetchStrideAvx2 = 1;
// The distance ahead in whole units of `unit` bytes (a pair of blocks, a super-block), at least one.
constexpr int64_t stream_ahead(int64_t unit) { return (kStreamAheadBytes / unit > 0 ? kStreamAheadBytes / unit : 1) * unit; }
inline void prefetch_l2(const uint8_t* at, int64_t bytes, int64_t stride = kPrefetchStride) {
  for (int64_t line = 0; line < bytes; line += stride * kPanelLine) __builtin_prefetch(at + line, 0, 2);
}

// The shape of a 32-value type's panel: the lines of a block, 8 (Q8_0) or 4 of nibbles (Q4_0, Q4_1),
// and for Q5_0 / Q5_1 one more before them: the fifth bits as 8 masks of 64 bits, mask g's bit
// 4r + t set where row r's value 4g + t has it (so one masked byte add puts 16 on a group's 16
// rows; read before the lines that use them, which from memory measured faster than after); and
// the lines of a pair's scales, 1 (d) or 2 (d, then m: Q4_1, Q5_1).
struct PanelShape {
  int64_t lines, scale_lines;
  bool fifth_bits = false;
};
template <class W>
constexpr PanelShape panel_shape() {
  return {W::kSigned ? 8 : W::kBits == 5 ? 5 : 4, W::kMin ? 2 : 1, W::kBits == 5};
}

// A panel in pairs of blocks: the pair's 2L lines, then its 2 x 16 f16 scales in one more line (and
// the 2 x 16 mins in another), so a panel is read front to back as one stream (an odd last block's
// pair has half its scale lines unused). Bytes of one panel of k values a row, and block b's lines,
// scales and mins:
inline size_t panel_bytes(PanelShape shape, int64_t k) {
  const int64_t pairs = (k / 32 + 1) / 2;
  return static_cast<size_t>(pairs * (2 * shape.lines + shape.scale_lines) * kPanelLine);
}
inline const uint8_t* panel_pair(const uint8_t* panel, PanelShape shape, int64_t b) {
  return panel + b / 2 * (2 * shape.lines + shape.scale_lines) * kPanelLine;
}
// (the value lines; a 5-bit type's fifth bits are the line before them)
inline const uint8_t* panel_lines_of(const uint8_t* panel, PanelShape shape, int64_t b) {
  return panel_pair(panel, shape, b) + (b % 2 * shape.lines + shape.fifth_bits) * kPanelLine;
}
inline const uint16_t* panel_scales_of(const uint8_t* panel, PanelShape shape, int64_t b) {
  return reinterpret_cast<const uint16_t*>(panel_pair(panel, shape, b) + 2 * shape.lines * kPanelLine) + b % 2 * kPanelRows;
}
inline const uint16_t* panel_mins_of(const uint8_t* panel, PanelShape shape, int64_t b) {
  return panel_scales_of(panel, shape, b) + 2 * kPanelRows;
}
// mask g of the fifth bits of a block whose value lines are at `lines` (panel_shape)
inline uint64_t panel_fifth_bits(const uint8_t* lines, int g) {
  uint64_t mask;
  std::memcpy(&mask, lines - kPanelLine + 8 * g, 8);
  return mask;
}

// Q4_K and Q5_K (panels_k.cpp): a super-block of the 16 rows is 32 lines of nibbles (line 8p + i
// holds row r's bytes qs[32p + 4i .. + 3]: the low nibbles sub-block 2p's group i, the high ones
// 2p + 1's); Q5_K's fifth bits as masks, as the 32-value types' (fifth(j, i) bit 4r + t: row r's
// value 4i + t of sub-block j has it), sub-blocks 2p and 2p + 1's just before lines 8p .. 8p + 7 (read
// before the lines that use them: after them, read from memory measured 0.8x); then the 6-bit scales
// a byte each, the mins a byte each in pairs (row r's of sub-blocks 2q and 2q + 1 side by side:
// widened to 16 bits, a lane's pair for vpdpwssd / vpmaddwd), then d and dmin (f16)
struct Q4_KPanelBlock {
  using Block = BlockQ4_K;
  uint8_t lines[32][kPanelLine];
  uint8_t sc[8][kPanelRows], mn[4][kPanelRows][2];
  uint16_t d[kPanelRows], dmin[kPanelRows];
  const uint8_t* line(int l) const { return lines[l]; }
  uint8_t min(int j, int64_t r) const { return mn[j / 2][r][j % 2]; }
};
struct Q5_KPanelBlock {
  using Block = BlockQ5_K;
  struct Part {
    uint64_t fifth[2][8];
    uint8_t lines[8][kPanelLine];
  } parts[4];
  uint8_t sc[8][kPanelRows], mn[4][kPanelRows][2];
  uint16_t d[kPanelRows], dmin[kPanelRows];
  const uint8_t* line(int l) const { return parts[l / 8].lines[l % 8]; }
  uint8_t min(int j, int64_t r) const { return mn[j / 2][r][j % 2]; }
  const uint64_t& fifth(int j, int i) const { return parts[j / 2].fifth[j % 2][i]; }
};
// Q6_K (panels_q6_k.cpp): a super-block of the 16 rows in 8 parts, part p of half h = p / 4 its
// lines 4 (p % 4) + l (l < 4) with row r's bytes ql[64h + 16 (p % 4) + 4l .. + 3] (the low nibbles
// values 128h + 16 (p % 4) + 4l + t, of sub-block 8h + p % 4, the high ones those + 64, of
// sub-block 8h + 4 + p % 4), and before them the values' top 2 bits: bits 2 (2 (l % 2) + n) of byte
// 4r + t of high[l / 2], n 0 for the low nibble and 1 for the high; then the 16 signed scales a
// byte each and d (f16): 3,392 bytes, 32 more than the 16 rows' blocks.
struct Q6_KPanelBlock {
  using Block = BlockQ6_K;
  struct Part {
    uint8_t high[2][kPanelLine];
    uint8_t lines[4][kPanelLine];
  } parts[8];
  int8_t sc[16][kPanelRows];
  uint16_t d[kPanelRows];
  uint8_t unused[32];
};
static_assert(sizeof(Q4_KPanelBlock) % 64 == 0 && sizeof(Q5_KPanelBlock) % 64 == 0 && sizeof(Q6_KPanelBlock) % 64 == 0);
template <class PB>
constexpr bool kHasFifthBits = std::is_same_v<PB, Q5_KPanelBlock>;
template <class PB>
size_t k_panel_bytes(int64_t k) {
  return static_cast<size_t>(k / 256) * sizeof(PB);
}
template <class PB>
const PB& k_panel_block(const uint8_t* panel, int64_t b) {
  return reinterpret_cast<const PB*>(panel)[b];
}

#if defined(__AVX2__) && defined(__FMA__)
// A panel's 16 f16 (d, dmin, m) as f32 lanes, and 16 bytes (the K types' 6-bit scales) as i32 lanes.
// (Functions with the kernels' target, not lambdas inside them: a lambda does not take its
// caller's target, and an AVX2-only build then cannot inline the AVX-512 intrinsics into it.)
NF_TARGET_AVX512_VNNI inline __m512 panel_f16s(const uint16_t* at) {
  return _mm512_maskz_cvtph_ps(0xffff, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(at)));
}
NF_TARGET_AVX512_VNNI inline __m512i panel_bytes_as_i32(const uint8_t* at) {
  return _mm512_maskz_cvtepu8_epi32(0xffff, _mm_loadu_si128(reinterpret_cast<const __m128i*>(at)));
}
// The K types' mins of a pair of sub-blocks (mn[q]: 16 rows' pairs of bytes) as 16-bit pairs, a row a lane
NF_TARGET_AVX512_VNNI inline __m512i panel_min_pairs(const uint8_t (&pairs)[kPanelRows][2]) {
  return _mm512_maskz_cvtepu8_epi16(0xffffffff, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(pairs)));
}
// Q6_K's line l of a part as its low- and high-nibble values (q in 0..63), the top 2 bits shifted
// from bits 2 (2 (l % 2) + n) of high[l / 2] to bits 4-5 (16-bit shifts: what crosses a byte is
// masked off)
NF_TARGET_AVX512_VNNI inline void q6_k_line(const Q6_KPanelBlock::Part& part, int l, __m512i& low, __m512i& high) {
  const __m512i nibble = _mm512_set1_epi8(0x0f), top = _mm512_set1_epi8(0x30);
  const __m512i v = _mm512_load_si512(part.lines[l]), bits = _mm512_load_si512(part.high[l / 2]);
  const __m512i top_low = l % 2 == 0 ? _mm512_slli_epi16(bits, 4) : bits;
  const __m512i top_high = l % 2 == 0 ? _mm512_slli_epi16(bits, 2) : _mm512_srli_epi16(bits, 2);
  low = _mm512_or_si512(_mm512_and_si512(v, nibble), _mm512_and_si512(top_low, top));
  high = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(v, 4), nibble), _mm512_and_si512(top_high, top));
}
#endif

#if defined(__AVX2__) && defined(__FMA__)
// AVX2's view of a panel (panels_pay: every type's but Q8_0): a 64-byte line as two halves
// of 8 rows, h = 0 (rows 0-7) and 1 (rows 8-15). Bytes 8h .. 8h + 7 of a line of bytes (the K
// types' scales) as i32 lanes, unsigned or signed; the same i16 in both halves of each lane (for
// vpmaddwd, the sub-block's scale on both of a lane's pair sums); 8 f16 as f32.
inline __m256i panel_u8s_as_i32(const uint8_t* at) { return _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(at))); }
inline __m256i panel_i8s_as_i32(const int8_t* at) { return _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(at))); }
inline __m256i in_both_i16_halves(__m256i v) {
  return _mm256_or_si256(_mm256_and_si256(v, _mm256_set1_epi32(0xffff)), _mm256_slli_epi32(v, 16));
}
inline __m256 panel_f16s_8(const uint16_t* at) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(at))); }
// 8 rows' pairs of the K types' mins (`first` row 8h's pair of mn[q]) as 16-bit pairs, a row a lane
inline __m256i panel_min_pairs_8(const uint8_t* first) {
  return _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(first)));
}
// A 5-bit type's fifth bits for a line's half h as bytes, 16 where the bit is set and 0 elsewhere
// (bits 32h .. 32h + 31 of the 64-bit mask at `mask`, byte i's at bit 32h + i): its 4 bytes spread
// 8 to a byte (vpshufb), and each byte's own bit, 1 << i % 8, tested
inline __m256i fifth_bits_avx2(const void* mask, int h) {
  int32_t bits;
  std::memcpy(&bits, static_cast<const uint8_t*>(mask) + 4 * h, 4);
  const __m256i spread = _mm256_shuffle_epi8(_mm256_set1_epi32(bits), _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202,
                                                                                       0x0101010101010101, 0));
  const __m256i bit = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201));
  return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit), _mm256_set1_epi8(0x10));
}
// Q6_K's line l of a part, half h, as q6_k_line's values
inline void q6_k_line_avx2(const Q6_KPanelBlock::Part& part, int l, int h, __m256i& low, __m256i& high) {
  const __m256i nibble = _mm256_set1_epi8(0x0f), top = _mm256_set1_epi8(0x30);
  const __m256i v = _mm256_load_si256(reinterpret_cast<const __m256i*>(part.lines[l] + 32 * h));
  const __m256i bits = _mm256_load_si256(reinterpret_cast<const __m256i*>(part.high[l / 2] + 32 * h));
  const __m256i top_low = l % 2 == 0 ? _mm256_slli_epi16(bits, 4) : bits;
  const __m256i top_high = l % 2 == 0 ? _mm256_slli_epi16(bits, 2) : _mm256_srli_epi16(bits, 2);
  low = _mm256_or_si256(_mm256_and_si256(v, nibble), _mm256_and_si256(top_low, top));
  high = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(v, 4), nibble), _mm256_and_si256(top_high, top));
}
#endif

// bytes of a panel of `type` (one with panels) of k values a row
size_t panel_bytes_of(QuantType type, int64_t k);

// Whether weights of `type` take panels here: a kernel for the type and an AVX512-VNNI CPU
// (int8_isa()), or on AVX2 (and AVX-VNNI) every such type but Q8_0, whose AVX2 tiles read a
// panel's line as two halves of 8 rows (maddubs, i16 sums of a block's or sub-block's lines,
// vpmaddwd by ones or by its scale; the 5-bit types' fifth bits spread from their masks,
// fifth_bits_avx2). On weights in the caches the panels' tiles are 1.3-2.5x the rows' (no horizontal
// sums, one scale vector for 16 rows); from memory, read as streams that ask for their lines ahead
// (prefetch_l2), level with the rows' or faster at one row of x and much faster at several (a batched decode
// step, a speculative draft's verification: docs/quantisation.md); on a Zen 3 Q5_K's and Q6_K's AVX2
// tiles trail the rows' from memory at one thread (0.74x, 0.76x: docs/quantisation.md, "On AMD EPYC
// Zen 3"; Q8_0's AVX2 tile on panels was tried there and trailed too). NANOFORMER_PANELS=1 / 0 in the
// environment forces them on / off.
bool panels_pay(QuantType type);

// W's panels, where they pay (panels_pay); otherwise null
std::shared_ptr<Storage> pack_panels(const QuantizedTensor& weight);

// W's n rows of k values (the file's blocks) -> its panels, ceil(n / 16) of them (panel_bytes each)
void pack_panels_q8_0(const void* rows, int64_t n, int64_t k, void* panels);
void pack_panels_q4_0(const void* rows, int64_t n, int64_t k, void* panels);
void pack_panels_q4_1(const void* rows, int64_t n, int64_t k, void* panels);
void pack_panels_q5_0(const void* rows, int64_t n, int64_t k, void* panels);
void pack_panels_q5_1(const void* rows, int64_t n, int64_t k, void* panels);
void pack_panels_q4_k(const void* rows, int64_t n, int64_t k, void* panels);
void pack_panels_q5_k(const void* rows, int64_t n, int64_t k, void* panels);
void pack_panels_q6_k(const void* rows, int64_t n, int64_t k, void* panels);

// Row `row` of W (n rows of k values) as the file's blocks, from its panels: the embedding's
// look-up of a tied head reads the panels, so the file's pages of the rows stay dropped
void unpack_panel_row_q8_0(const void* panels, int64_t k, int64_t row, void* blocks);
void unpack_panel_row_q4_0(const void* panels, int64_t k, int64_t row, void* blocks);
void unpack_panel_row_q4_1(const void* panels, int64_t k, int64_t row, void* blocks);
void unpack_panel_row_q5_0(const void* panels, int64_t k, int64_t row, void* blocks);
void unpack_panel_row_q5_1(const void* panels, int64_t k, int64_t row, void* blocks);
void unpack_panel_row_q4_k(const void* panels, int64_t k, int64_t row, void* blocks);
void unpack_panel_row_q5_k(const void* panels, int64_t k, int64_t row, void* blocks);
void unpack_panel_row_q6_k(const void* panels, int64_t k, int64_t row, void* blocks);

// Decode's product on panels: as type_kernels.h's gemv_T, each base's w its panels and ldy its n
// rows; `scalar`: the portable tile (the same bits: exact integer sums, then the same f32 steps)
void gemv_panels_q8_0(std::span<TileArgs> bases, int64_t m, bool scalar);
void gemv_panels_q4_0(std::span<TileArgs> bases, int64_t m, bool scalar);
void gemv_panels_q4_1(std::span<TileArgs> bases, int64_t m, bool scalar);
void gemv_panels_q5_0(std::span<TileArgs> bases, int64_t m, bool scalar);
void gemv_panels_q5_1(std::span<TileArgs> bases, int64_t m, bool scalar);
void gemv_panels_q4_k(std::span<TileArgs> bases, int64_t m, bool scalar);
void gemv_panels_q5_k(std::span<TileArgs> bases, int64_t m, bool scalar);
void gemv_panels_q6_k(std::span<TileArgs> bases, int64_t m, bool scalar);

// Prefill's GEMM on panels (quant_gemm.cpp, quant_gemm_k.cpp): as gemm_T with w the panels; the AVX512-VNNI kernels
void gemm_panels_q8_0(const void* panels, int64_t n, int64_t k, const void* xq, int64_t m, float* y, int64_t ldy);
void gemm_panels_q4_0(const void* panels, int64_t n, int64_t k, const void* xq, int64_t m, float* y, int64_t ldy);
void gemm_panels_q4_1(const void* panels, int64_t n, int64_t k, const void* xq, int64_t m, float* y, int64_t ldy);
void gemm_panels_q5_0(const void* panels, int64_t n, int64_t k, const void* xq, int64_t m, float* y, int64_t ldy);
void gemm_panels_q5_1(const void* panels, int64_t n, int64_t k, const void* xq, int64_t m, float* y, int64_t ldy);
void gemm_panels_q4_k(const void* panels, int64_t n, int64_t k, const void* xq, int64_t m, float* y, int64_t ldy);
void gemm_panels_q5_k(const void* panels, int64_t n, int64_t k, const void* xq, int64_t m, float* y, int64_t ldy);
void gemm_panels_q6_k(const void* panels, int64_t n, int64_t k, const void* xq, int64_t m, float* y, int64_t ldy);

}  // namespace nf::cpu
