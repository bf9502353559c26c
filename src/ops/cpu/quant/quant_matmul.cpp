// Activation quantisation, per-block integer dot products and the decode product over quantised
// weights (quant_matmul.h). Each weight type is a small struct: its block, its scale(s), and its
// 32 values per block as int8 (signed after the offset, or unsigned 0..31 for the types with a
// minimum); the tiles below multiply any of them into up to 4 rows of x at once.
#include "ops/cpu/quant/quant_matmul.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "nanoformer/core/dtype.h"
#include "nanoformer/core/error.h"
#include "ops/cpu/loops/loops.h"
#include "ops/cpu/quant/quant_blocks.h"
#include "ops/cpu/simd/simd.h"

namespace nf::cpu {
namespace {

// ---- activation quantisation ---------------------------------------------------------------

// Two formulas, both giving x ~ d q with q in [-127, 127], and sums16[i] = the sum of q over values
// 16 i .. 16 i + 15:
//   Q8_0 (blocks of 32): d = max|x| / 127, q = round(x * id), id = 1 / d (roundf: ties away from 0),
//     as quantize_row(q8_0); d is returned unrounded (the caller rounds it to f16 as Q8_0 stores it);
//   Q8_K (blocks of 256): s = -127 / max (max: the x of largest magnitude, with its sign, the first
//     on ties), q = min(127, nearest(s x)) (ties to even), d = 1 / s, as quantize_row(q8_k) and
//     llama.cpp's quantize_row_q8_K.
inline float signed_absmax(const float* x, int n) {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < n; ++j)
    if (std::fabs(x[j]) > amax) amax = std::fabs(x[j]), max = x[j];
  return max;
}

inline void sums_of_16(const int8_t* q, int n, int32_t* sums16) {
  for (int i = 0; i < n / 16; ++i) {
    sums16[i] = 0;
    for (int j = 16 * i; j < 16 * i + 16; ++j) sums16[i] += q[j];
  }
}

float quantize_q8_0_scalar(const float* x, int n, int8_t* q, int32_t* sums16) {
  float amax = 0.0f;
  for (int j = 0; j < n; ++j) amax = std::fmax(amax, std::fabs(x[j]));
  const float d = amax / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  for (int j = 0; j < n; ++j) q[j] = static_cast<int8_t>(std::roundf(x[j] * id));
  sums_of_16(q, n, sums16);
  return d;
}

float quantize_q8_k_scalar(const float* x, int n, int8_t* q, int32_t* sums16) {
  const float max = signed_absmax(x, n);
  const float s = max != 0.0f ? -127.0f / max : 0.0f;
  for (int j = 0; j < n; ++j) q[j] = static_cast<int8_t>(std::min(127, static_cast<int>(std::nearbyint(s * x[j]))));
  sums_of_16(q, n, sums16);
  return max != 0.0f ? 1.0f / s : 0.0f;
}

#if defined(__AVX2__) && defined(__FMA__)
inline float hmax(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  return _mm_cvtss_f32(_mm_max_ss(m, _mm_movehdup_ps(m)));
}

// roundf on 8 lanes: truncate, then step away from zero when the dropped fraction is >= 1/2
// (x - trunc(x) is exact, so this is roundf's result bit for bit)
inline __m256 round_away(__m256 v) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  const __m256 t = _mm256_round_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  const __m256 frac = _mm256_andnot_ps(sign, _mm256_sub_ps(v, t));
  const __m256 step = _mm256_or_ps(_mm256_and_ps(v, sign), _mm256_set1_ps(1.0f));
  return _mm256_add_ps(t, _mm256_and_ps(_mm256_cmp_ps(frac, _mm256_set1_ps(0.5f), _CMP_GE_OQ), step));
}

inline int32_t hsum_i32(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
  return _mm_cvtsi128_si32(_mm_add_epi32(s, _mm_shuffle_epi32(s, 1)));
}

inline float absmax_avx2(const float* x, int n) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  __m256 amax = _mm256_setzero_ps();
  for (int j = 0; j < n; j += 8) amax = _mm256_max_ps(amax, _mm256_andnot_ps(sign, _mm256_loadu_ps(x + j)));
  return hmax(amax);
}

// q[j] for 32 values at a time: `level` maps 8 floats to 8 int32; packed to int8 (saturating) in
// order; and the sums of each 16 (unless sums16 is null)
template <class Level>
void store_levels(const float* x, int n, int8_t* q, int32_t* sums16, Level level) {
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);  // undoes the packs' lane interleave
  for (int j = 0; j < n; j += 32) {
    __m256i i[4];
    for (int v = 0; v < 4; ++v) i[v] = level(_mm256_loadu_ps(x + j + 8 * v));
    if (sums16 != nullptr) {
      sums16[j / 16] = hsum_i32(_mm256_add_epi32(i[0], i[1]));
      sums16[j / 16 + 1] = hsum_i32(_mm256_add_epi32(i[2], i[3]));
    }
    const __m256i packed = _mm256_packs_epi16(_mm256_packs_epi32(i[0], i[1]), _mm256_packs_epi32(i[2], i[3]));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + j), _mm256_permutevar8x32_epi32(packed, order));
  }
}

// the AVX2 forms, n a multiple of 32, the same bits
float quantize_q8_0_avx2(const float* x, int n, int8_t* q, int32_t* sums16) {
  const float d = absmax_avx2(x, n) / 127.0f;
  const __m256 id = _mm256_set1_ps(d != 0.0f ? 1.0f / d : 0.0f);
  store_levels(x, n, q, sums16, [&](__m256 v) { return _mm256_cvtps_epi32(round_away(_mm256_mul_ps(v, id))); });
  return d;
}

// nearest with ties to even is the conversion's default rounding; |s x| <= 127 up to rounding, and
// the packs saturate a 128 to 127 as min(127, .) does
float quantize_q8_k_avx2(const float* x, int n, int8_t* q, int32_t* sums16) {
  const float amax = absmax_avx2(x, n);
  int first = 0;
  while (first + 1 < n && std::fabs(x[first]) != amax) ++first;  // the first value of largest magnitude, with its sign
  const float max = x[first];
  const __m256 s = _mm256_set1_ps(max != 0.0f ? -127.0f / max : 0.0f);
  store_levels(x, n, q, sums16, [&](__m256 v) { return _mm256_cvtps_epi32(_mm256_mul_ps(v, s)); });
  return max != 0.0f ? 1.0f / (-127.0f / max) : 0.0f;
}
#endif

// Q8_0's formula for 32 values, Q8_K's for 256; returns d (Q8_0's unrounded)
float quantize_block(const float* x, int n, int8_t* q, int32_t* sums16, bool scalar) {
#if defined(__AVX2__) && defined(__FMA__)
  if (!scalar) return n == 32 ? quantize_q8_0_avx2(x, n, q, sums16) : quantize_q8_k_avx2(x, n, q, sums16);
#endif
  return n == 32 ? quantize_q8_0_scalar(x, n, q, sums16) : quantize_q8_k_scalar(x, n, q, sums16);
}

// d rounded to f16 and back, as Q8_0 stores it
inline float round_to_f16(float d) {
#if defined(__F16C__)
  return _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtps_ph(_mm_set_ss(d), _MM_FROUND_TO_NEAREST_INT)));
#else
  return f16_bits_to_float(float_to_f16_bits(d));
#endif
}

// ---- the 32-value weight types ---------------------------------------------------------------
// Scalar, every type gives values(): its 32 integers as int8 in order, q - offset for the
// symmetric types, q itself for the types with a minimum (kMin); scale() d, minimum() m.
// On AVX2, Q8_0 gives its signed values per block; the 4- and 5-bit types (kOffset 8 / 16, or
// kMin) unpack two blocks at once, unsigned, into lo = [q 0..15 of block b, of block b + 1] and
// hi = [q 16..31 of b, of b + 1] (the nibbles as they lie in one 32-byte register, no lane
// crossing); the activations are laid out to match (PairedActivations) and the offset is taken
// off in integers as offset * sum x.

inline void nibbles_scalar(const uint8_t* qs, int8_t* v) {
  for (int j = 0; j < 16; ++j) {
    v[j] = static_cast<int8_t>(qs[j] & 0x0f);
    v[j + 16] = static_cast<int8_t>(qs[j] >> 4);
  }
}

inline uint32_t load_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

#if defined(__AVX2__) && defined(__FMA__)
// the nibbles of two blocks' 16 bytes (the second null: zeros) as lo / hi above
inline void nibble_pair(const uint8_t* qs0, const uint8_t* qs1, __m256i& lo, __m256i& hi) {
  const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs0));
  const __m128i b = qs1 ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs1)) : _mm_setzero_si128();
  const __m256i v = _mm256_inserti128_si256(_mm256_castsi128_si256(a), b, 1);
  const __m256i mask = _mm256_set1_epi8(0x0f);
  lo = _mm256_and_si256(v, mask);
  hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), mask);
}

// 32 bits -> 32 bytes, byte j 0xff where bit j is set: byte j/8 of the bits spread to byte j, then
// every bit but bit j%8 set, so the byte is all ones exactly when bit j was
inline __m256i bits_to_bytes(uint32_t bits) {
  const __m256i spread = _mm256_shuffle_epi8(
      _mm256_set1_epi32(static_cast<int>(bits)),
      _mm256_setr_epi64x(0x0000000000000000, 0x0101010101010101, 0x0202020202020202, 0x0303030303030303));
  return _mm256_cmpeq_epi8(_mm256_or_si256(spread, _mm256_set1_epi64x(0x7fbfdfeff7fbfdfe)), _mm256_set1_epi64x(-1));
}

// the fifth bits (bit j of qh is value j's) added as 16 to lo / hi of a pair
inline void fifth_bits(uint32_t qh0, uint32_t qh1, __m256i& lo, __m256i& hi) {
  const __m256i sixteen = _mm256_set1_epi8(0x10);
  lo = _mm256_or_si256(lo, _mm256_and_si256(bits_to_bytes((qh0 & 0xffffu) | (qh1 << 16)), sixteen));
  hi = _mm256_or_si256(hi, _mm256_and_si256(bits_to_bytes((qh0 >> 16) | (qh1 & 0xffff0000u)), sixteen));
}

#endif

struct Q8_0W {
  using Block = BlockQ8_0;
  [[maybe_unused]] static constexpr bool kMin = false, kPairs = false;
  static float scale(const Block& b) { return f16_to_float(b.d); }
  static float minimum(const Block&) { return 0.0f; }
  static void values(const Block& b, int8_t* v) { std::memcpy(v, b.qs, 32); }
#if defined(__AVX2__) && defined(__FMA__)
  static __m256i values(const Block& b) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs)); }
#endif
};

struct Q4_0W {
  using Block = BlockQ4_0;
  [[maybe_unused]] static constexpr bool kMin = false, kPairs = true;
  static constexpr int kOffset = 8;
  static float scale(const Block& b) { return f16_to_float(b.d); }
  static float minimum(const Block&) { return 0.0f; }
  static void values(const Block& b, int8_t* v) {
    nibbles_scalar(b.qs, v);
    for (int j = 0; j < 32; ++j) v[j] = static_cast<int8_t>(v[j] - kOffset);
  }
#if defined(__AVX2__) && defined(__FMA__)
  static void pair(const Block& b0, const Block* b1, __m256i& lo, __m256i& hi) { nibble_pair(b0.qs, b1 ? b1->qs : nullptr, lo, hi); }
#endif
};

struct Q4_1W {
  using Block = BlockQ4_1;
  [[maybe_unused]] static constexpr bool kMin = true, kPairs = true;
  [[maybe_unused]] static constexpr int kOffset = 0;
  static float scale(const Block& b) { return f16_to_float(b.d); }
  static float minimum(const Block& b) { return f16_to_float(b.m); }
  static void values(const Block& b, int8_t* v) { nibbles_scalar(b.qs, v); }
#if defined(__AVX2__) && defined(__FMA__)
  static void pair(const Block& b0, const Block* b1, __m256i& lo, __m256i& hi) { nibble_pair(b0.qs, b1 ? b1->qs : nullptr, lo, hi); }
#endif
};

// the fifth bit of value j is bit j of qh
struct Q5_0W {
  using Block = BlockQ5_0;
  [[maybe_unused]] static constexpr bool kMin = false, kPairs = true;
  static constexpr int kOffset = 16;
  static float scale(const Block& b) { return f16_to_float(b.d); }
  static float minimum(const Block&) { return 0.0f; }
  static void values(const Block& b, int8_t* v) {
    nibbles_scalar(b.qs, v);
    const uint32_t qh = load_u32(b.qh);
    for (int j = 0; j < 32; ++j) v[j] = static_cast<int8_t>((v[j] | (((qh >> j) & 1u) << 4)) - kOffset);
  }
#if defined(__AVX2__) && defined(__FMA__)
  static void pair(const Block& b0, const Block* b1, __m256i& lo, __m256i& hi) {
    nibble_pair(b0.qs, b1 ? b1->qs : nullptr, lo, hi);
    fifth_bits(load_u32(b0.qh), b1 ? load_u32(b1->qh) : 0u, lo, hi);
  }
#endif
};

struct Q5_1W {
  using Block = BlockQ5_1;
  [[maybe_unused]] static constexpr bool kMin = true, kPairs = true;
  [[maybe_unused]] static constexpr int kOffset = 0;
  static float scale(const Block& b) { return f16_to_float(b.d); }
  static float minimum(const Block& b) { return f16_to_float(b.m); }
  static void values(const Block& b, int8_t* v) {
    nibbles_scalar(b.qs, v);
    const uint32_t qh = load_u32(b.qh);
    for (int j = 0; j < 32; ++j) v[j] = static_cast<int8_t>(v[j] | (((qh >> j) & 1u) << 4));
  }
#if defined(__AVX2__) && defined(__FMA__)
  static void pair(const Block& b0, const Block* b1, __m256i& lo, __m256i& hi) {
    nibble_pair(b0.qs, b1 ? b1->qs : nullptr, lo, hi);
    fifth_bits(load_u32(b0.qh), b1 ? load_u32(b1->qh) : 0u, lo, hi);
  }
#endif
};

// x's integers and scales laid out for the pairs of blocks of the 4- and 5-bit types: pair p holds
// blocks 2p and 2p + 1 (zeros past the row's end) as lo / hi meet them, q = [x_2p 0..15,
// x_2p+1 0..15, x_2p 16..31, x_2p+1 16..31]; per block, in 4 lanes each (one per weight row of
// a tile): d8 = [d_2p x4, d_2p+1 x4], c8 = -offset sum q (the offset, in integers), s8 = s (for
// the minimum).
struct PairedActivations {
  int64_t rows = 0, pairs = 0;
  std::vector<int8_t> q;     // (rows, pairs, 64)
  std::vector<float> d8, s8;  // (rows, pairs, 8)
  std::vector<int32_t> c8;    // (rows, pairs, 8)
  const int8_t* row_q(int64_t r) const { return q.data() + r * pairs * 64; }
  const float* row_d8(int64_t r) const { return d8.data() + r * pairs * 8; }
  const float* row_s8(int64_t r) const { return s8.data() + r * pairs * 8; }
  const int32_t* row_c8(int64_t r) const { return c8.data() + r * pairs * 8; }
};

#if defined(__AVX2__) && defined(__FMA__)
void pair_activations(const QuantizedActivations& a, int offset, PairedActivations& out) {
  const int64_t nb = a.blocks_per_row();
  out.rows = a.rows, out.pairs = (nb + 1) / 2;
  const size_t pairs = static_cast<size_t>(a.rows * out.pairs);
  out.q.assign(pairs * 64, 0);
  out.d8.assign(pairs * 8, 0.0f);
  out.s8.assign(pairs * 8, 0.0f);
  out.c8.assign(pairs * 8, 0);
  for (int64_t r = 0; r < a.rows; ++r)
    for (int64_t b = 0; b < nb; ++b) {
      const size_t p = static_cast<size_t>(r * out.pairs + b / 2), half = static_cast<size_t>(b % 2);
      const int8_t* q = a.row_q(r) + b * 32;
      std::memcpy(&out.q[p * 64 + half * 16], q, 16);
      std::memcpy(&out.q[p * 64 + 32 + half * 16], q + 16, 16);
      int32_t sum = 0;
      for (int j = 0; j < 32; ++j) sum += q[j];
      for (size_t l = half * 4; l < half * 4 + 4; ++l) {
        out.d8[p * 8 + l] = a.row_d(r)[b];
        out.s8[p * 8 + l] = a.row_s(r)[b];
        out.c8[p * 8 + l] = -offset * sum;
      }
    }
}
#endif

// The rows of x a tile multiplies into: activation rows r0 .. r0 + R of `a` (quantised types) or
// of x itself (the float types), and where the outputs go.
struct TileArgs {
  const unsigned char* w;      // the first weight row of the tile
  size_t row_bytes;            // bytes between the tile's weight rows
  const unsigned char* ahead;  // rows further along the same streams, prefetched meanwhile
  int64_t k;                   // values per row
  const QuantizedActivations* a;
  const float* x;
  int64_t ldx;
  int64_t r0;
  float* y;  // y[r * ldy + c * ystride] for r < R, c < C
  int64_t ldy;
  const float* bias;  // bias[c * ystride], or null
  const PairedActivations* pairs = nullptr;  // x laid out for the 4- and 5-bit types (AVX2)
  int64_t ystride = 1;
  // tiles run back to back (the x4 tiles at one row of x): tile i's weight rows i * next bytes
  // further along each stream, its outputs i further along y (one call for a thread's range)
  int64_t count = 1;
  size_t next = 0;

  void store(int r, int c, float v, int64_t i = 0) const {
    y[r * ldy + c * ystride + i] = v + (bias ? bias[c * ystride + i] : 0.0f);
  }
};

[[maybe_unused]] inline void prefetch(const unsigned char* p) { _mm_prefetch(reinterpret_cast<const char*>(p), _MM_HINT_T1); }


// y[r][c] = sum over blocks b of d_w d_x(r) isum(b, r, c) (+ m_w s_x(r)), portable integers
template <class W, int R, int C>
void tile32_scalar(const TileArgs& t) {
  using Block = typename W::Block;
  const int64_t nb = t.k / 32;
  float acc[R][C] = {};
  for (int64_t b = 0; b < nb; ++b)
    for (int c = 0; c < C; ++c) {
      const Block& blk = reinterpret_cast<const Block*>(t.w + c * t.row_bytes)[b];
      int8_t v[32];
      W::values(blk, v);
      const float dw = W::scale(blk);
      for (int r = 0; r < R; ++r) {
        const int8_t* qx = t.a->row_q(t.r0 + r) + b * 32;
        int32_t isum = 0;
        for (int j = 0; j < 32; ++j) isum += static_cast<int32_t>(v[j]) * qx[j];
        acc[r][c] += dw * t.a->row_d(t.r0 + r)[b] * static_cast<float>(isum);
        if constexpr (W::kMin) acc[r][c] += W::minimum(blk) * t.a->row_s(t.r0 + r)[b];
      }
    }
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) t.store(r, c, acc[r][c]);
}

#if defined(__AVX2__) && defined(__FMA__)
inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}

// The same sums on AVX2, four weight rows (a tile's streams) at a time; `cols` < 4 when the
// rows are one row repeated (row_bytes 0, the rows left over), only the first stored. Each row's
// integer sum of a block meets x in 8 int32 lanes; two hadds gather the four rows' lanes into
// [row 0..3 of lanes 0-3 | row 0..3 of lanes 4-7], so one conversion, one scale vector and one
// fma serve the four rows, and lane c + lane c + 4 is row c's output at the end. A row computed
// alone (repeated) goes through the same lanes: the same bits whichever way the rows are cut.
// (by unpacks and adds, the sums hadd would give: vphaddd is several uops on Zen 4, and three a
// block cost an AVX2 tile 5% of its time in L1)
inline __m256i gather_rows(__m256i s0, __m256i s1, __m256i s2, __m256i s3) {
  const __m256i t01 = _mm256_add_epi32(_mm256_unpacklo_epi32(s0, s1), _mm256_unpackhi_epi32(s0, s1));
  const __m256i t23 = _mm256_add_epi32(_mm256_unpacklo_epi32(s2, s3), _mm256_unpackhi_epi32(s2, s3));
  return _mm256_add_epi32(_mm256_unpacklo_epi64(t01, t23), _mm256_unpackhi_epi64(t01, t23));
}

// f16 fields of four blocks -> 4 f16 packed in 64 bits
inline uint64_t pack4(uint16_t a, uint16_t b, uint16_t c, uint16_t d) {
  return a | static_cast<uint64_t>(b) << 16 | static_cast<uint64_t>(c) << 32 | static_cast<uint64_t>(d) << 48;
}

template <int R>
void store_rows(const TileArgs& t, const __m256 (&acc)[R], int cols, int64_t i = 0) {
  for (int r = 0; r < R; ++r) {
    alignas(16) float out[4];
    _mm_store_ps(out, _mm_add_ps(_mm256_castps256_ps128(acc[r]), _mm256_extractf128_ps(acc[r], 1)));
    for (int c = 0; c < cols; ++c) t.store(r, c, out[c], i);
  }
}

// Q8_0: maddubs multiplies unsigned by signed bytes into pairs of int16, so a signed weight block
// is multiplied as |w| times x carrying w's sign; madd with ones adds the pairs into 8 int32 lanes
// (no overflow: |pair| <= 2 * 128 * 127).
template <int R, bool kPrefetch>
void tile_q8_0_x4(const TileArgs& t, int cols) {
  const int64_t nb = t.k / 32;
  const __m256i ones = _mm256_set1_epi16(1);
  const int8_t* qx[R];
  const float* dx[R];
  for (int r = 0; r < R; ++r) qx[r] = t.a->row_q(t.r0 + r), dx[r] = t.a->row_d(t.r0 + r);
  for (int64_t i = 0; i < t.count; ++i) {
    const unsigned char *w = t.w + i * t.next, *ahead = t.ahead + i * t.next;
    __m256 acc[R];
    for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
      const BlockQ8_0* blk[4];
      __m256i v[4], u[4];
      for (int c = 0; c < 4; ++c) {
        blk[c] = reinterpret_cast<const BlockQ8_0*>(w + c * t.row_bytes) + b;
        if constexpr (kPrefetch) prefetch(ahead + c * t.row_bytes + b * sizeof(BlockQ8_0));
        v[c] = Q8_0W::values(*blk[c]);
        u[c] = _mm256_sign_epi8(v[c], v[c]);  // |v|
      }
      const __m128 d4 = _mm_cvtph_ps(_mm_cvtsi64_si128(static_cast<long long>(pack4(blk[0]->d, blk[1]->d, blk[2]->d, blk[3]->d))));
      const __m256 dw = _mm256_insertf128_ps(_mm256_castps128_ps256(d4), d4, 1);
      for (int r = 0; r < R; ++r) {
        const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qx[r] + b * 32));
        __m256i s[4];
        for (int c = 0; c < 4; ++c) s[c] = _mm256_madd_epi16(_mm256_maddubs_epi16(u[c], _mm256_sign_epi8(x, v[c])), ones);
        const __m256 d = _mm256_mul_ps(dw, _mm256_broadcast_ss(dx[r] + b));
        acc[r] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(gather_rows(s[0], s[1], s[2], s[3])), acc[r]);
      }
    }
    store_rows<R>(t, acc, cols, i);
  }
}

// The 4- and 5-bit types two blocks at a time: lo and hi times x's matching halves (maddubs:
// unsigned q times signed x, |pair| <= 2 * 31 * 127, and lo + hi still fits int16), madd into 8
// int32 lanes, 4 per block; gathered over the rows, lanes 0-3 are block 2p of rows 0..3, lanes 4-7
// block 2p + 1; plus c8 (the offset in integers), scaled by d_w d_x, plus m_w s_x for the minimum.
// x of one row of a tile, laid out in pairs (PairedActivations)
struct PairRow {
  const int8_t* q;
  const float *d8, *s8;
  const int32_t* c8;
};

// pair p of the tile's four rows into acc (kSingle: the row's last, odd block alone)
template <class W, int R, bool kPrefetch, bool kSingle>
[[gnu::always_inline]] inline void pair_step(const TileArgs& t, const PairRow (&x)[R], int64_t p, __m256 (&acc)[R]) {
  using Block = typename W::Block;
  const __m256i ones = _mm256_set1_epi16(1);
  const Block* blk[4];
  __m256i lo[4], hi[4];
  for (int c = 0; c < 4; ++c) {
    blk[c] = reinterpret_cast<const Block*>(t.w + c * t.row_bytes) + 2 * p;
    if constexpr (kPrefetch) prefetch(t.ahead + c * t.row_bytes + 2 * p * sizeof(Block));
    W::pair(blk[c][0], kSingle ? nullptr : blk[c] + 1, lo[c], hi[c]);
  }
  const auto scales = [&](auto field) {  // [rows 0..3 of block 2p, of block 2p + 1]
    const uint64_t first = pack4(field(blk[0][0]), field(blk[1][0]), field(blk[2][0]), field(blk[3][0]));
    const uint64_t second = kSingle ? 0 : pack4(field(blk[0][1]), field(blk[1][1]), field(blk[2][1]), field(blk[3][1]));
    return _mm256_cvtph_ps(_mm_set_epi64x(static_cast<long long>(second), static_cast<long long>(first)));
  };
  const __m256 dw = scales([](const Block& b) { return b.d; });
  __m256 mw;
  if constexpr (W::kMin) mw = scales([](const Block& b) { return b.m; });
  for (int r = 0; r < R; ++r) {
    const __m256i* xq = reinterpret_cast<const __m256i*>(x[r].q + p * 64);
    const __m256i x_lo = _mm256_loadu_si256(xq), x_hi = _mm256_loadu_si256(xq + 1);
    __m256i s[4];
    for (int c = 0; c < 4; ++c)
      s[c] = _mm256_madd_epi16(_mm256_add_epi16(_mm256_maddubs_epi16(lo[c], x_lo), _mm256_maddubs_epi16(hi[c], x_hi)), ones);
    __m256i sum = gather_rows(s[0], s[1], s[2], s[3]);
    if constexpr (W::kOffset != 0) sum = _mm256_add_epi32(sum, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[r].c8 + p * 8)));
    const __m256 d = _mm256_mul_ps(dw, _mm256_loadu_ps(x[r].d8 + p * 8));
    acc[r] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(sum), acc[r]);
    if constexpr (W::kMin) acc[r] = _mm256_fmadd_ps(mw, _mm256_loadu_ps(x[r].s8 + p * 8), acc[r]);
  }
}

template <class W, int R, bool kPrefetch>
void tile_pairs_x4(const TileArgs& t, int cols) {
  const int64_t nb = t.k / 32;
  const PairedActivations& a = *t.pairs;
  PairRow x[R];
  for (int r = 0; r < R; ++r) x[r] = {a.row_q(t.r0 + r), a.row_d8(t.r0 + r), a.row_s8(t.r0 + r), a.row_c8(t.r0 + r)};
  for (int64_t i = 0; i < t.count; ++i) {
    TileArgs u = t;
    u.w += i * t.next, u.ahead += i * t.next;
    __m256 acc[R];
    for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_ps();
    for (int64_t p = 0; p < nb / 2; ++p) pair_step<W, R, kPrefetch, false>(u, x, p, acc);
    if (nb % 2 != 0) pair_step<W, R, kPrefetch, true>(u, x, nb / 2, acc);
    store_rows<R>(t, acc, cols, i);
  }
}
#endif

// ---- the K types: super-blocks of 256 values against Q8_K activations ---------------------------
// Q4_K: x = d sc_j q - dmin mn_j over sub-blocks j of 32, q in 0..15 (group g of 32 bytes of qs
// holds sub-block 2g in its low nibbles, 2g + 1 in its high ones); its dot with a Q8_K block is
//   d d_x sum_j sc_j sum_{i in j} q_i x_i  -  dmin d_x sum_j mn_j (sum of x over j).
// Q6_K: x = d sc_j (q - 32) over sub-blocks j of 16, q in 0..63; the dot is
//   d d_x (sum_j sc_j sum_{i in j} q_i x_i  -  32 sum_j sc_j (sum of x over j)).
// The sums of x per 16 are Q8_K's; all sums are integers until the last multiplication.

// Q4_K's 12 bytes of 6-bit scales and mins -> 16 bytes, sc[0..7] then mn[0..7]: sub-blocks 0-3
// keep the low 6 bits of bytes 0-3 (sc) and 4-7 (mn); 4-7 take the nibbles of bytes 8-11 with
// the top 2 bits of bytes 0-3 (sc) and 4-7 (mn) above them.
inline void q4_k_scales(const uint8_t* s, uint8_t* out) {
  constexpr uint32_t kLow6 = 0x3f3f3f3f, kLow4 = 0x0f0f0f0f, kTop2 = 0x03030303;
  const uint32_t a = load_u32(s), b = load_u32(s + 4), c = load_u32(s + 8);
  const uint32_t words[4] = {a & kLow6, (c & kLow4) | (((a >> 6) & kTop2) << 4), b & kLow6,
                             ((c >> 4) & kLow4) | (((b >> 6) & kTop2) << 4)};
  std::memcpy(out, words, 16);
}

[[maybe_unused]] inline void prefetch_bytes(const unsigned char* p, size_t bytes) {
  for (size_t off = 0; off < bytes; off += 64) _mm_prefetch(reinterpret_cast<const char*>(p + off), _MM_HINT_T1);
  _mm_prefetch(reinterpret_cast<const char*>(p + bytes - 1), _MM_HINT_T1);
}

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
  static constexpr bool kSuper = true;
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
    alignas(16) uint8_t sm[16];
    q4_k_scales(blk.scales, sm);
    const __m128i sm8 = _mm_load_si128(reinterpret_cast<const __m128i*>(sm));
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
  static constexpr bool kSuper = true;
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

// ---- the float weight types: converted and multiplied into x ---------------------------------

struct F32W {
  static float get(const unsigned char* w, int64_t i) { return reinterpret_cast<const float*>(w)[i]; }
#if defined(__AVX2__) && defined(__FMA__)
  static __m256 load8(const unsigned char* w, int64_t i) { return _mm256_loadu_ps(reinterpret_cast<const float*>(w) + i); }
#endif
  [[maybe_unused]] static constexpr int64_t kBytes = 4;
};
struct F16W {
  static float get(const unsigned char* w, int64_t i) { return f16_to_float(reinterpret_cast<const uint16_t*>(w)[i]); }
#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
  static __m256 load8(const unsigned char* w, int64_t i) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(reinterpret_cast<const uint16_t*>(w) + i)));
  }
#endif
  [[maybe_unused]] static constexpr int64_t kBytes = 2;
};
struct BF16W {
  static float get(const unsigned char* w, int64_t i) { return bf16_bits_to_float(reinterpret_cast<const uint16_t*>(w)[i]); }
#if defined(__AVX2__) && defined(__FMA__)
  static __m256 load8(const unsigned char* w, int64_t i) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(reinterpret_cast<const uint16_t*>(w) + i));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  }
#endif
  [[maybe_unused]] static constexpr int64_t kBytes = 2;
};

template <class W>
constexpr bool has_avx2_load() {
  return requires(const unsigned char* w) { W::load8(w, int64_t{0}); };
}

// y[r][c] = sum_k x[r][k] w[c][k]: 8 values at a time where the build has AVX2, the tail scalar
template <class W, int R, int C, bool kPrefetch>
void tile_float(const TileArgs& t) {
  float sums[R][C] = {};
  int64_t k = 0;
#if defined(__AVX2__) && defined(__FMA__)
  if constexpr (has_avx2_load<W>()) {
    __m256 acc[R][C];
    for (int r = 0; r < R; ++r)
      for (int c = 0; c < C; ++c) acc[r][c] = _mm256_setzero_ps();
    for (; k + 8 <= t.k; k += 8) {
      for (int c = 0; c < C; ++c) {
        const unsigned char* wc = t.w + c * t.row_bytes;
        if constexpr (kPrefetch)
          if ((k * W::kBytes) % 64 == 0) prefetch(t.ahead + c * t.row_bytes + k * W::kBytes);
        const __m256 wv = W::load8(wc, k);
        for (int r = 0; r < R; ++r) acc[r][c] = _mm256_fmadd_ps(_mm256_loadu_ps(t.x + (t.r0 + r) * t.ldx + k), wv, acc[r][c]);
      }
    }
    for (int r = 0; r < R; ++r)
      for (int c = 0; c < C; ++c) sums[r][c] = hsum(acc[r][c]);
  }
#endif
  for (; k < t.k; ++k)
    for (int c = 0; c < C; ++c)
      for (int r = 0; r < R; ++r) sums[r][c] += t.x[(t.r0 + r) * t.ldx + k] * W::get(t.w + c * t.row_bytes, k);
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) t.store(r, c, sums[r][c]);
}

// ---- the product -----------------------------------------------------------------------------

// Each thread takes a contiguous range of W's rows and reads it as kStreams streams: the range cut
// in kStreams equal parts, a tile takes row i of every part, so each part is read front to back.
// Short rows (a Q8_0 row of 512 values is 544 bytes) read 4 at a time side by side would be one
// stream of 2 KiB steps; four streams far apart keep more reads in flight (measured on one Zen 4
// core of a shared VM, Q8_0 1408 x 512 read from memory: 13 -> 21 GB/s). With several rows of x,
// the rows D steps ahead in each stream (about kPrefetchBytes) are prefetched into L2 meanwhile; at
// one row (decode) the hardware's prefetchers do as well, and the prefetches' own loads cost more
// than they gained once a thread's tiles ran in one call (minimind2-small Q8_0 decode 1,099 ->
// 1,159 tok/s without them, medians of 6 interleaved runs on Zen 4; gpt2-124m 235 -> 252). Each
// tile meets the rows of x kPassRows at a time, so rows read from memory once stay in L1 for every
// later pass. The 32-value types' tiles take the four streams in one (tile_*_x4), any R; the
// others (per-row accumulators) cover them whole (C = 4) for R <= 2, in halves (C = 2) above,
// keeping R * C accumulators in registers. The rows left over (range % kStreams) go one at a time.
constexpr int64_t kStreams = 4;
constexpr int64_t kPassRows = 4;
constexpr int64_t kPrefetchBytes = 2048;
// Weights below which a product runs on one thread: waking the second costs a few microseconds,
// what a Q8_0 or Q4_0 matrix of 128 x 512 takes alone (measured: 3.4-3.8 us on one thread, 4.4 on two)
constexpr int64_t kGrainWeights = 2 * kParallelGrain;

template <template <int, int, bool> class Kernel, int C>
void run_tile(const TileArgs& t, int64_t rows, bool fetch) {
  const auto run = [&]<int R, int Cols>(const TileArgs& u) {
    fetch ? Kernel<R, Cols, true>::run(u) : Kernel<R, Cols, false>::run(u);
  };
  if constexpr (requires { Kernel<1, C, false>::kFourRows; })
    if constexpr (Kernel<1, C, false>::kFourRows) {
      switch (rows) {
        case 1: run.template operator()<1, C>(t); break;
        case 2: run.template operator()<2, C>(t); break;
        case 3: run.template operator()<3, C>(t); break;
        default: run.template operator()<4, C>(t); break;
      }
      return;
    }
  const auto halves = [&]<int R>() {
    for (int h = 0; h < C / 2; ++h) {
      TileArgs half = t;
      half.w += 2 * h * t.row_bytes, half.ahead += 2 * h * t.row_bytes, half.y += 2 * h * t.ystride;
      half.bias = t.bias ? t.bias + 2 * h * t.ystride : nullptr;
      run.template operator()<R, 2>(half);
    }
  };
  switch (rows) {
    case 1: run.template operator()<1, C>(t); break;
    case 2: run.template operator()<2, C>(t); break;
    case 3:
      if constexpr (C == 4) halves.template operator()<3>();
      else run.template operator()<3, C>(t);
      break;
    default:
      if constexpr (C == 4) halves.template operator()<4>();
      else run.template operator()<4, C>(t);
      break;
  }
}

// Rows [begin, end) of W (and of y) for the m rows of x: the range read as kStreams streams.
template <template <int, int, bool> class Kernel>
void gemv_range(const TileArgs& base, int64_t m, int64_t begin, int64_t end) {
  const int64_t ahead = std::clamp<int64_t>(kPrefetchBytes / static_cast<int64_t>(base.row_bytes), 1, 16);
  const int64_t part = (end - begin) / kStreams;
  const auto tile = [&](int64_t row, int64_t r0, int64_t stride) {
    TileArgs t = base;
    t.r0 = r0;
    t.w = base.w + row * base.row_bytes;
    t.row_bytes = stride * base.row_bytes;
    t.ahead = t.w + ahead * base.row_bytes;
    t.y = base.y + r0 * base.ldy + row;
    t.ystride = stride;
    t.bias = base.bias ? base.bias + row : nullptr;
    return t;
  };
  constexpr bool kFourRows = [] {
    if constexpr (requires { Kernel<1, kStreams, false>::kFourRows; }) return Kernel<1, kStreams, false>::kFourRows;
    return false;
  }();
  if (kFourRows && m == 1) {  // decode: the range's tiles in one call, without software prefetches
    if (part > 0) {
      TileArgs t = tile(begin, 0, part);
      t.count = part, t.next = base.row_bytes;
      run_tile<Kernel, kStreams>(t, 1, false);
    }
  } else {
    for (int64_t i = 0; i < part; ++i)
      for (int64_t r0 = 0; r0 < m; r0 += kPassRows) {
        const bool fetch = r0 == 0 && i + ahead < part;  // the first pass brings the rows in
        run_tile<Kernel, kStreams>(tile(begin + i, r0, part), std::min(kPassRows, m - r0), fetch);
      }
  }
  for (int64_t row = begin + kStreams * part; row < end; ++row)
    for (int64_t r0 = 0; r0 < m; r0 += kPassRows) run_tile<Kernel, 1>(tile(row, r0, 1), std::min(kPassRows, m - r0), false);
}

// The products of one x with each of `bases` (base.ldy of W's rows each). One product: its rows
// split across the threads, or on one when it is small. Several (q, k and v; gate and up): one
// hand-off for all, each thread taking its share of every one. (Handing out chunks of rows in turn
// instead, so a thread that starts late takes fewer, measured slower: minimind2-small Q8_0 decode
// 930 tok/s against 1,070 with chunks of 32 KiB, 890 against 980 with 128 KiB.)
template <template <int, int, bool> class Kernel>
void gemv_rows(std::span<const TileArgs> bases, int64_t m) {
  if (bases.size() == 1) {
    const TileArgs& base = bases[0];
    const int64_t grain = std::max<int64_t>(1, kGrainWeights / std::max<int64_t>(base.k, 1));
    parallel_for(base.ldy, grain, [&](int64_t begin, int64_t end) { gemv_range<Kernel>(base, m, begin, end); });
    return;
  }
  const int64_t threads = num_threads();
  parallel_for(threads, 1, [&](int64_t first, int64_t last) {
    for (int64_t p = first; p < last; ++p)
      for (const TileArgs& base : bases) gemv_range<Kernel>(base, m, base.ldy * p / threads, base.ldy * (p + 1) / threads);
  });
}

template <class W>
constexpr bool is_super() {
  return requires { W::kSuper; };
}

// A kernel's tile of R rows of x and C rows of W on AVX2. kFourRows: the tile always takes 4 rows
// of W (tile_*_x4), any R; a single row is its row repeated.
#if defined(__AVX2__) && defined(__FMA__)
template <class W>
struct QuantKernel {
  template <int R, int C, bool P>
  struct K {
    static constexpr bool kFourRows = !is_super<W>();
    static void run(const TileArgs& t) {
      if constexpr (is_super<W>()) {
        tile_super<W, R, C, P>(t);
      } else {
        TileArgs u = t;
        if constexpr (C == 1) u.row_bytes = 0;
        if constexpr (W::kPairs) tile_pairs_x4<W, R, P>(u, C);
        else tile_q8_0_x4<R, P>(u, C);
      }
    }
  };
};
#endif

// the portable tiles (the only ones of a build without AVX2)
template <class W>
struct PortableKernel {
  template <int R, int C, bool P>
  struct K {
    static void run(const TileArgs& t) {
      if constexpr (is_super<W>()) tile_super_scalar<W, R, C>(t);
      else tile32_scalar<W, R, C>(t);
    }
  };
};

template <class W>
struct FloatKernel {
  template <int R, int C, bool P>
  struct K {
    static void run(const TileArgs& t) { tile_float<W, R, C, P>(t); }
  };
};

// the activation buffers of the calling thread, reused across calls (no allocation per token)
QuantizedActivations& activation_buffer() {
  thread_local QuantizedActivations a;
  return a;
}
#if defined(__AVX2__) && defined(__FMA__)
PairedActivations& paired_buffer() {
  thread_local PairedActivations a;
  return a;
}
#endif

template <class W>
constexpr bool is_paired() {
  if constexpr (is_super<W>()) return false;
  else return W::kPairs;
}

// Runs the product of weight type W: x quantised (and paired for the 4- and 5-bit types on AVX2);
// `scalar`: the portable quantisers and tiles.
template <class W>
void gemv_quantised(std::span<TileArgs> bases, int64_t m, bool scalar) {
  QuantizedActivations& a = activation_buffer();
  quantize_activations(bases[0].x, bases[0].ldx, m, bases[0].k, is_super<W>() ? 256 : 32, a, scalar);
  for (TileArgs& base : bases) base.a = &a;
#if defined(__AVX2__) && defined(__FMA__)
  if (!scalar) {
    if constexpr (is_paired<W>()) {
      pair_activations(a, W::kOffset, paired_buffer());
      for (TileArgs& base : bases) base.pairs = &paired_buffer();
    }
    return gemv_rows<QuantKernel<W>::template K>(bases, m);
  }
#endif
  gemv_rows<PortableKernel<W>::template K>(bases, m);
}

}  // namespace

int64_t activation_block(QuantType weight_type) {
  switch (weight_type) {
    case QuantType::q8_0:
    case QuantType::q4_0:
    case QuantType::q4_1:
    case QuantType::q5_0:
    case QuantType::q5_1: return 32;
    case QuantType::q4_k:
    case QuantType::q6_k: return 256;
    default: return 0;
  }
}

void quantize_activations(const float* x, int64_t ldx, int64_t rows, int64_t cols, int64_t block,
                          QuantizedActivations& out, bool scalar) {
  NF_CHECK(block == 32 || block == 256, "quantize_activations: block ", block, " is not 32 or 256");
  NF_CHECK(cols % block == 0, "quantize_activations: ", cols, " values are not whole blocks of ", block);
  out.rows = rows, out.cols = cols, out.block = block;
  const int64_t nb = cols / block;
  const auto grow = [](auto& v, int64_t size) {
    if (static_cast<int64_t>(v.size()) < size) v.resize(static_cast<size_t>(size));
  };
  grow(out.q, rows * cols);
  grow(out.d, rows * nb);
  if (block == 32) grow(out.s, rows * nb);
  else grow(out.sums, rows * (cols / 16));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t b = 0; b < nb; ++b) {
      int32_t sums16[16];
      const float d = quantize_block(x + r * ldx + b * block, static_cast<int>(block), out.q.data() + r * cols + b * block,
                                     sums16, scalar);
      const size_t i = static_cast<size_t>(r * nb + b);
      if (block == 32) {
        out.d[i] = round_to_f16(d);
        // (in 64 bits: a block holding inf or NaN has levels of INT_MIN, sums16 too)
        out.s[i] = out.d[i] * static_cast<float>(static_cast<int64_t>(sums16[0]) + sums16[1]);
      } else {
        out.d[i] = d;
        for (size_t g = 0; g < 16; ++g) out.sums[i * 16 + g] = static_cast<int16_t>(sums16[g]);
      }
    }
}

void quantize_activation_blocks(const float* x, int64_t ldx, int64_t rows, int64_t cols, BlockQ8_0* out) {
  NF_CHECK(cols % kQK8_0 == 0, "quantize_activation_blocks: ", cols, " values are not whole blocks of ", kQK8_0);
  const int64_t nb = cols / kQK8_0;
  parallel_for(rows, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(cols, 1)), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r)
      for (int64_t b = 0; b < nb; ++b) {
        BlockQ8_0& block = out[r * nb + b];
        const float* values = x + r * ldx + b * kQK8_0;
#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
        block.d = _cvtss_sh(quantize_q8_0_avx2(values, kQK8_0, block.qs, nullptr), _MM_FROUND_TO_NEAREST_INT);
#else
        int32_t sums16[16];
        block.d = float_to_f16_bits(quantize_block(values, kQK8_0, block.qs, sums16, false));
#endif
      }
  });
}

bool quant_gemv_applies(const Tensor& x, const QuantizedTensor& weight) {
  const QuantType type = weight.type();
  const bool supported = activation_block(type) != 0 || type == QuantType::f32 || type == QuantType::f16 ||
                         type == QuantType::bf16;
  return supported && x.dtype() == DType::f32 && x.dim() == 2 && x.size(0) >= 1 && x.size(0) <= kQuantGemvMaxRows &&
         x.size(1) == weight.cols() && (x.size(1) <= 1 || x.stride(1) == 1);
}

void quant_linear_gemv(std::span<const QuantGemvProduct> products, const Tensor& x, bool scalar) {
  NF_CHECK(!products.empty(), "quant_linear_gemv: no products");
  const QuantType type = products[0].weight->type();
  std::vector<TileArgs> bases;
  std::vector<Tensor> biases;  // contiguous
  biases.reserve(products.size());
  for (const QuantGemvProduct& p : products) {
    const QuantizedTensor& weight = *p.weight;
    NF_CHECK(quant_gemv_applies(x, weight) && p.y->is_contiguous() && p.y->numel() == x.size(0) * weight.rows(),
             "quant_linear_gemv: unsupported operands x ", shape_str(x.shape()), " and ", quant_type_name(weight.type()),
             " weight (", weight.rows(), ", ", weight.cols(), ")");
    NF_CHECK(weight.type() == type, "quant_linear_gemv: weights of one x must share a type, got ",
             quant_type_name(type), " and ", quant_type_name(weight.type()));
    biases.push_back(p.bias->defined() ? p.bias->contiguous() : Tensor());
    bases.push_back(TileArgs{static_cast<const unsigned char*>(weight.data()), weight.row_bytes(), nullptr, weight.cols(),
                             nullptr, x.data<float>(), x.stride(0), 0, p.y->data<float>(), weight.rows(),
                             biases.back().defined() ? biases.back().data<float>() : nullptr});
  }
  const int64_t m = x.size(0);
  switch (type) {
    case QuantType::q8_0: return gemv_quantised<Q8_0W>(bases, m, scalar);
    case QuantType::q4_0: return gemv_quantised<Q4_0W>(bases, m, scalar);
    case QuantType::q4_1: return gemv_quantised<Q4_1W>(bases, m, scalar);
    case QuantType::q5_0: return gemv_quantised<Q5_0W>(bases, m, scalar);
    case QuantType::q5_1: return gemv_quantised<Q5_1W>(bases, m, scalar);
    case QuantType::q4_k: return gemv_quantised<Q4_KW>(bases, m, scalar);
    case QuantType::q6_k: return gemv_quantised<Q6_KW>(bases, m, scalar);
    case QuantType::f32: return gemv_rows<FloatKernel<F32W>::K>(bases, m);
    case QuantType::f16: return gemv_rows<FloatKernel<F16W>::K>(bases, m);
    case QuantType::bf16: return gemv_rows<FloatKernel<BF16W>::K>(bases, m);
    default: NF_FAIL("quant_linear_gemv: no product for ", quant_type_name(type));
  }
}

void quant_linear_gemv(const Tensor& y, const Tensor& x, const QuantizedTensor& weight, const Tensor& bias, bool scalar) {
  const QuantGemvProduct product{&y, &weight, &bias};
  quant_linear_gemv({&product, 1}, x, scalar);
}

}  // namespace nf::cpu
