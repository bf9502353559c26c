// The decode product's tiles for the 32-value weight types (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1; unpacked
// by weight_blocks.h) against x quantised to Q8_0 blocks (activation_quant.h): per block
//   Q8_0  d_w d_x sum q_w q_x                 Q4_0 / Q5_0  d_w d_x sum (q_w - 8 | 16) q_x
//   Q4_1 / Q5_1  d_w d_x sum q_w q_x + m_w s_x (s_x = d_x sum q_x, Q8_1's s)
// in integers (AVX2's maddubs / madd, or scalar) until the scales; up to 4 rows of x at once.
#include <immintrin.h>

#include <cstring>
#include <span>
#include <vector>

#include "ops/cpu/quant/gemv_driver.h"
#include "ops/cpu/quant/gemv_tile.h"
#include "ops/cpu/quant/type_kernels.h"
#include "ops/cpu/quant/weight_blocks.h"

namespace nf::cpu {

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

namespace {

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

// the paired activations of the calling thread, reused across calls
PairedActivations& paired_buffer() {
  thread_local PairedActivations a;
  return a;
}
#endif

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
// The same sums on AVX2, four weight rows (a tile's streams) at a time; kCols < 4 when the
// rows are one row repeated (row_bytes 0, the rows left over), only the first stored. Each row's
// integer sum of a block meets x in 8 int32 lanes; two hadds gather the four rows' lanes into
// [row 0..3 of lanes 0-3 | row 0..3 of lanes 4-7], so one conversion, one scale vector and one
// fma serve the four rows, and lane c + lane c + 4 is row c's output at the end. A row computed
// alone (repeated) goes through the same lanes: the same bits whichever way the rows are cut.
// (by unpacks and adds, the sums hadd would give: vphaddd is several uops on Zen 4, and three a
// block cost an AVX2 tile 5% of its time in L1)
inline __m256i gather_row_sums(__m256i s0, __m256i s1, __m256i s2, __m256i s3) {
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
// (no overflow: |pair| <= 2 * 128 * 127). kCols a template argument: GCC's constant propagation
// specialised the tile on it (clones) while it shared one file with every other tile, and a file
// of its own leaves it less room to clone (the m = 4 tiles were no longer inlined into the driver).
template <int R, bool kPrefetch, int kCols>
void tile_q8_0_x4(const TileArgs& t) {
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
        acc[r] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(gather_row_sums(s[0], s[1], s[2], s[3])), acc[r]);
      }
    }
    store_rows<R>(t, acc, kCols, i);
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
    __m256i sum = gather_row_sums(s[0], s[1], s[2], s[3]);
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

// the AVX2 tiles: always 4 rows of W (C = 1: one row repeated, row_bytes 0), any R
template <class W>
struct Tiles32 {
  template <int R, int C, bool P>
  struct K {
    static constexpr bool kFourRows = true;
    static void run(const TileArgs& t) {
      TileArgs u = t;
      if constexpr (C == 1) u.row_bytes = 0;
      if constexpr (W::kPairs) tile_pairs_x4<W, R, P>(u, C);
      else tile_q8_0_x4<R, P, C>(u);
    }
  };
};
#endif

// the portable tiles (the only ones of a build without AVX2)
template <class W>
struct PortableTiles32 {
  template <int R, int C, bool P>
  struct K {
    static void run(const TileArgs& t) { tile32_scalar<W, R, C>(t); }
  };
};

// x quantised to Q8_0 blocks (and paired for the 4- and 5-bit types on AVX2), then the tiles
template <class W>
void gemv_q32(std::span<TileArgs> bases, int64_t m, bool scalar) {
  [[maybe_unused]] const QuantizedActivations& a = quantise_x(bases, m, 32, scalar);
#if defined(__AVX2__) && defined(__FMA__)
  if (!scalar) {
    if constexpr (W::kPairs) {
      pair_activations(a, W::kOffset, paired_buffer());
      for (TileArgs& base : bases) base.pairs = &paired_buffer();
    }
    return gemv_rows<Tiles32<W>::template K>(bases, m);
  }
#endif
  gemv_rows<PortableTiles32<W>::template K>(bases, m);
}

}  // namespace

void gemv_q8_0(std::span<TileArgs> bases, int64_t m, bool scalar) { gemv_q32<Q8_0W>(bases, m, scalar); }
void gemv_q4_0(std::span<TileArgs> bases, int64_t m, bool scalar) { gemv_q32<Q4_0W>(bases, m, scalar); }
void gemv_q4_1(std::span<TileArgs> bases, int64_t m, bool scalar) { gemv_q32<Q4_1W>(bases, m, scalar); }
void gemv_q5_0(std::span<TileArgs> bases, int64_t m, bool scalar) { gemv_q32<Q5_0W>(bases, m, scalar); }
void gemv_q5_1(std::span<TileArgs> bases, int64_t m, bool scalar) { gemv_q32<Q5_1W>(bases, m, scalar); }

}  // namespace nf::cpu
