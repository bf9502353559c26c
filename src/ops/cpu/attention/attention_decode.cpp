#include "ops/cpu/attention/attention_decode.h"

#include <algorithm>
#include <span>
#include <cmath>
#include <limits>
#include <memory>
#include <type_traits>
#include <vector>

#include "nanoformer/core/error.h"
#include "ops/cpu/attention/attention_tiles.h"
#include "ops/cpu/loops/loops.h"
#include "ops/cpu/quant/quant_blocks.h"
#include "ops/cpu/quant/quant_rows.h"
#include "ops/cpu/simd/row_reductions.h"
#include "ops/cpu/simd/simd.h"
#include "ops/cpu/simd/vector_math.h"

namespace nf::cpu {
namespace {

// The two products of one query row, over n keys of D values, k[j] / v[j] pointing at key j's row
// (consecutive rows of a contiguous cache, or the rows of a paged one through its block table):
//   scores:        s_j = q . k_j
//   weighted_sum:  out = scale sum_j p_j v_j
using Scores = void (*)(const float* q, const unsigned char* const* k, int64_t n, int64_t D, float* s);
using WeightedSum = void (*)(const float* p, const unsigned char* const* v, int64_t n, int64_t D, float scale,
                             float* out);

// The same for m query rows that share their keys (the heads of a KV head's group at one query
// position): row r's scores go to s + r lds, its output to out[r]. A stored type whose values are
// widened per load (Q8_0, Q4_0) converts each key once for several rows; f32 and the 16-bit floats take
// the rows one at a time.
struct RowProducts {
  void (*scores)(const float* const* q, int64_t m, const unsigned char* const* k, int64_t n, int64_t D, float* s,
                 int64_t lds);
  void (*weighted_sum)(const float* const* p, int64_t m, const unsigned char* const* v, int64_t n, int64_t D,
                       const float* scale, float* const* out);
};

template <Scores one>
void scores_each_row(const float* const* q, int64_t m, const unsigned char* const* k, int64_t n, int64_t D,
                     float* s, int64_t lds) {
  for (int64_t r = 0; r < m; ++r) one(q[r], k, n, D, s + r * lds);
}

template <WeightedSum one>
void weighted_sum_each_row(const float* const* p, int64_t m, const unsigned char* const* v, int64_t n, int64_t D,
                           const float* scale, float* const* out) {
  for (int64_t r = 0; r < m; ++r) one(p[r], v, n, D, scale[r], out[r]);
}

template <Scores scores, WeightedSum weighted_sum>
RowProducts each_row() {
  return {scores_each_row<scores>, weighted_sum_each_row<weighted_sum>};
}

// How rows of floating values are stored: T per value, `width` of them widened to floats by load.
struct F32Values {
  using T = float;
  static Simd::V load(const T* p) { return Simd::load(p); }
  static float value(T x) { return x; }
};
struct Bf16Values {
  using T = uint16_t;
  static Simd::V load(const T* p) { return Simd::load_bf16(p); }
  static float value(T x) { return bf16_bits_to_float(x); }
};
struct F16Values {
  using T = uint16_t;
  static Simd::V load(const T* p) { return Simd::load_f16(p); }
  static float value(T x) { return f16_to_float(x); }
};

template <class F>
const typename F::T* values_at(const unsigned char* row) {
  return reinterpret_cast<const typename F::T*>(row);
}

// The first n < width values of p, the rest zero.
template <class F>
Simd::V load_first(const typename F::T* p, int64_t n) {
  if constexpr (std::is_same_v<F, F32Values>) {
    return Simd::load_first(p, n);
  } else {
    float x[Simd::width] = {};
    for (int64_t i = 0; i < n; ++i) x[i] = F::value(p[i]);
    return Simd::load(x);
  }
}

// Any D: one key at a time, the running sums in memory.
template <class F>
void scores_any(const float* q, const unsigned char* const* k, int64_t n, int64_t D, float* s) {
  for (int64_t j = 0; j < n; ++j) {
    const typename F::T* kj = values_at<F>(k[j]);
    Simd::V acc = Simd::zero();
    int64_t d = 0;
    for (; d + Simd::width <= D; d += Simd::width) acc = Simd::fma(Simd::load(q + d), F::load(kj + d), acc);
    if (d < D) acc = Simd::fma(Simd::load_first(q + d, D - d), load_first<F>(kj + d, D - d), acc);
    s[j] = Simd::sum(acc);
  }
}

template <class F>
void weighted_sum_any(const float* p, const unsigned char* const* v, int64_t n, int64_t D, float scale, float* out) {
  std::fill_n(out, D, 0.0f);
  for (int64_t j = 0; j < n; ++j) {
    const typename F::T* vj = values_at<F>(v[j]);
    for (int64_t d = 0; d < D; ++d) out[d] += p[j] * F::value(vj[d]);
  }
  for (int64_t d = 0; d < D; ++d) out[d] *= scale;
}

// D = NV vector widths: q and the sums held in registers; four keys' dot products reduced together.
template <class F, int NV>
void scores_fixed(const float* q, const unsigned char* const* k, int64_t n, int64_t, float* s) {
  Simd::V qv[NV];
  for (int c = 0; c < NV; ++c) qv[c] = Simd::load(q + c * Simd::width);
  const auto dot = [&](const unsigned char* row) {
    const typename F::T* kj = values_at<F>(row);
    Simd::V acc = Simd::zero();
    for (int c = 0; c < NV; ++c) acc = Simd::fma(qv[c], F::load(kj + c * Simd::width), acc);
    return acc;
  };
  int64_t j = 0;
  for (; j + 4 <= n; j += 4)
    Simd::sum4(dot(k[j]), dot(k[j + 1]), dot(k[j + 2]), dot(k[j + 3]), s + j);
  for (; j < n; ++j) s[j] = Simd::sum(dot(k[j]));
}

template <class F, int NV>
void weighted_sum_fixed(const float* p, const unsigned char* const* v, int64_t n, int64_t, float scale, float* out) {
  Simd::V even[NV], odd[NV];  // two chains of FMAs (even and odd keys) to hide their latency
  for (int c = 0; c < NV; ++c) even[c] = odd[c] = Simd::zero();
  int64_t j = 0;
  for (; j + 2 <= n; j += 2) {
    const Simd::V pe = Simd::broadcast(p[j]), po = Simd::broadcast(p[j + 1]);
    const typename F::T *ve = values_at<F>(v[j]), *vo = values_at<F>(v[j + 1]);
    for (int c = 0; c < NV; ++c) {
      even[c] = Simd::fma(pe, F::load(ve + c * Simd::width), even[c]);
      odd[c] = Simd::fma(po, F::load(vo + c * Simd::width), odd[c]);
    }
  }
  if (j < n) {
    const Simd::V pe = Simd::broadcast(p[j]);
    const typename F::T* ve = values_at<F>(v[j]);
    for (int c = 0; c < NV; ++c) even[c] = Simd::fma(pe, F::load(ve + c * Simd::width), even[c]);
  }
  const Simd::V sv = Simd::broadcast(scale);
  for (int c = 0; c < NV; ++c) Simd::store(out + c * Simd::width, (even[c] + odd[c]) * sv);
}

// Row r's sum over lanes to s[r lds + j] (four rows reduced together).
template <int M>
void store_sums(const Simd::V (&sums)[M], float* s, int64_t lds, int64_t j) {
  if constexpr (M == 4) {
    float out[4];
    Simd::sum4(sums[0], sums[1], sums[2], sums[3], out);
    for (int r = 0; r < 4; ++r) s[r * lds + j] = out[r];
  } else {
    for (int r = 0; r < M; ++r) s[r * lds + j] = Simd::sum(sums[r]);
  }
}

// rows(std::integral_constant<int, M>, q, s) for the m query rows in groups of at most four
template <class Rows>
void in_fours(const float* const* q, int64_t m, float* s, int64_t lds, Rows rows) {
  for (int64_t r = 0; r < m; r += 4, q += 4, s += 4 * lds) {
    switch (std::min<int64_t>(4, m - r)) {
      case 4: rows(std::integral_constant<int, 4>{}, q, s); break;
      case 3: rows(std::integral_constant<int, 3>{}, q, s); break;
      case 2: rows(std::integral_constant<int, 2>{}, q, s); break;
      default: rows(std::integral_constant<int, 1>{}, q, s); break;
    }
  }
}

// The rows of a KV group over one key at a time, D = NV vector widths: each key's values are
// widened once for all M <= 4 rows (4 rows' sums reduced together).
template <class F, int NV, int M>
void scores_float_rows(const float* const* q, const unsigned char* const* k, int64_t n, float* s, int64_t lds) {
  for (int64_t j = 0; j < n; ++j) {
    const typename F::T* kj = values_at<F>(k[j]);
    Simd::V acc[M];
    for (int r = 0; r < M; ++r) acc[r] = Simd::zero();
    for (int c = 0; c < NV; ++c) {
      const Simd::V kc = F::load(kj + c * Simd::width);
      for (int r = 0; r < M; ++r) acc[r] = Simd::fma(Simd::load(q[r] + c * Simd::width), kc, acc[r]);
    }
    store_sums<M>(acc, s, lds, j);
  }
}

template <class F, int NV>
void scores_float(const float* const* q, int64_t m, const unsigned char* const* k, int64_t n, int64_t, float* s,
                  int64_t lds) {
  in_fours(q, m, s, lds, [&](auto rows, const float* const* q4, float* s4) {
    scores_float_rows<F, NV, decltype(rows)::value>(q4, k, n, s4, lds);
  });
}

// out_r = scale_r sum_j p_r[j] v_j for M <= 2 rows, kChunk vector widths of v's columns at a time:
// each v_j's chunk widened once for both rows (8 independent sums).
constexpr int kChunk = 4;

template <class F, int M>
void weighted_sum_float_rows(const float* const* p, const unsigned char* const* v, int64_t n, int64_t D,
                             const float* scale, float* const* out) {
  for (int64_t d0 = 0; d0 < D; d0 += kChunk * Simd::width) {
    Simd::V sums[M][kChunk];
    for (int r = 0; r < M; ++r)
      for (int c = 0; c < kChunk; ++c) sums[r][c] = Simd::zero();
    for (int64_t j = 0; j < n; ++j) {
      const typename F::T* vj = values_at<F>(v[j]) + d0;
      Simd::V x[kChunk];
      for (int c = 0; c < kChunk; ++c) x[c] = F::load(vj + c * Simd::width);
      for (int r = 0; r < M; ++r) {
        const Simd::V w = Simd::broadcast(p[r][j]);
        for (int c = 0; c < kChunk; ++c) sums[r][c] = Simd::fma(w, x[c], sums[r][c]);
      }
    }
    for (int r = 0; r < M; ++r) {
      const Simd::V sv = Simd::broadcast(scale[r]);
      for (int c = 0; c < kChunk; ++c) Simd::store(out[r] + d0 + c * Simd::width, sums[r][c] * sv);
    }
  }
}

// Four rows at a time where the registers hold their 16 sums (AVX-512's 32), two on AVX2's 16: each
// v_j widened once for all of them (an f16 cache of 1,024 keys, 8 heads over 2: 32.9 -> 29.9 us a
// call on one Zen 4 thread, bench_attention).
constexpr int kSumRows = Simd::width >= 16 ? 4 : 2;

template <class F>
void weighted_sum_float(const float* const* p, int64_t m, const unsigned char* const* v, int64_t n, int64_t D,
                        const float* scale, float* const* out) {
  int64_t r = 0;
  if constexpr (kSumRows == 4)
    for (; r + 4 <= m; r += 4) weighted_sum_float_rows<F, 4>(p + r, v, n, D, scale + r, out + r);
  for (; r < m; r += 2) {
    if (m - r >= 2) weighted_sum_float_rows<F, 2>(p + r, v, n, D, scale + r, out + r);
    else weighted_sum_float_rows<F, 1>(p + r, v, n, D, scale + r, out + r);
  }
}

template <class F>
RowProducts float_row_products(int64_t D) {
  const int64_t nv = D % Simd::width == 0 ? D / Simd::width : 0;
  if (Simd::width > 1 && D % (kChunk * Simd::width) == 0 && nv <= 16) {
    const auto grouped = [](auto scores) { return RowProducts{scores, weighted_sum_float<F>}; };
    switch (nv) {
      case 4: return grouped(scores_float<F, 4>);
      case 8: return grouped(scores_float<F, 8>);
      case 12: return grouped(scores_float<F, 12>);
      case 16: return grouped(scores_float<F, 16>);
      default: break;
    }
  }
  switch (Simd::width > 1 ? nv : 0) {
    case 1: return each_row<scores_fixed<F, 1>, weighted_sum_fixed<F, 1>>();
    case 2: return each_row<scores_fixed<F, 2>, weighted_sum_fixed<F, 2>>();
    case 4: return each_row<scores_fixed<F, 4>, weighted_sum_fixed<F, 4>>();
    case 8: return each_row<scores_fixed<F, 8>, weighted_sum_fixed<F, 8>>();
    default: return each_row<scores_any<F>, weighted_sum_any<F>>();
  }
}

// Q8_0 and Q4_0 rows (D a multiple of 32): each block's integers are widened to floats in
// registers once for up to four query rows, and each row's products over the block summed, then
// scaled by its d:
//   q . k = sum over blocks b of d_b sum_i q_bi x_bi      (Q8_0: x = q;  Q4_0: x = q - 8)
constexpr int64_t kBlockValues = 32;
static_assert(kQK8_0 == kBlockValues && kQK4_0 == kBlockValues);
constexpr int64_t kVectorsPerBlock = kBlockValues / Simd::width;

// A block type's integers x widened to floats, kVectorsPerBlock vectors.
struct Q8Values {
  using Block = BlockQ8_0;
  static void load(const Block& block, Simd::V* x) {
    for (int64_t c = 0; c < kVectorsPerBlock; ++c) x[c] = Simd::load_i8(block.qs + c * Simd::width);
  }
};
struct Q4Values {
  using Block = BlockQ4_0;
  static void load(const Block& block, Simd::V* x) { Simd::load_q4_0(block.qs, x); }
};

template <class Q>
const typename Q::Block* blocks_at(const unsigned char* row) {
  return reinterpret_cast<const typename Q::Block*>(row);
}

template <class Q, int M>
void scores_blocks_rows(const float* const* q, const unsigned char* const* k, int64_t n, int64_t D, float* s,
                        int64_t lds) {
  const int64_t n_blocks = D / kBlockValues;
  for (int64_t j = 0; j < n; ++j) {
    const typename Q::Block* blocks = blocks_at<Q>(k[j]);
    Simd::V total[M];
    for (int r = 0; r < M; ++r) total[r] = Simd::zero();
    for (int64_t b = 0; b < n_blocks; ++b) {
      Simd::V x[kVectorsPerBlock];
      Q::load(blocks[b], x);
      const Simd::V d = Simd::broadcast(f16_to_float(blocks[b].d));
      for (int r = 0; r < M; ++r) {
        const float* qb = q[r] + b * kBlockValues;
        Simd::V acc = Simd::zero();
        for (int64_t c = 0; c < kVectorsPerBlock; ++c) acc = Simd::fma(Simd::load(qb + c * Simd::width), x[c], acc);
        total[r] = Simd::fma(d, acc, total[r]);
      }
    }
    store_sums<M>(total, s, lds, j);
  }
}

template <class Q>
void scores_blocks(const float* const* q, int64_t m, const unsigned char* const* k, int64_t n, int64_t D, float* s,
                   int64_t lds) {
  in_fours(q, m, s, lds, [&](auto rows, const float* const* q4, float* s4) {
    scores_blocks_rows<Q, decltype(rows)::value>(q4, k, n, D, s4, lds);
  });
}

// out_r = scale_r sum_j p_r[j] v_j for M rows, block by block of v's columns: v_j's block adds
// (p_r[j] d) x to the block's sums of each row, its values widened once for all M rows.
template <class Q, int M>
void weighted_sum_blocks_rows(const float* const* p, const unsigned char* const* v, int64_t n, int64_t D,
                              const float* scale, float* const* out) {
  for (int64_t b = 0; b < D / kBlockValues; ++b) {
    Simd::V sums[M][kVectorsPerBlock];
    for (int r = 0; r < M; ++r)
      for (int64_t c = 0; c < kVectorsPerBlock; ++c) sums[r][c] = Simd::zero();
    for (int64_t j = 0; j < n; ++j) {
      const typename Q::Block& stored = blocks_at<Q>(v[j])[b];
      const float d = f16_to_float(stored.d);
      Simd::V x[kVectorsPerBlock];
      Q::load(stored, x);
      for (int r = 0; r < M; ++r) {
        const Simd::V w = Simd::broadcast(p[r][j] * d);
        for (int64_t c = 0; c < kVectorsPerBlock; ++c) sums[r][c] = Simd::fma(w, x[c], sums[r][c]);
      }
    }
    for (int r = 0; r < M; ++r) {
      const Simd::V sv = Simd::broadcast(scale[r]);
      for (int64_t c = 0; c < kVectorsPerBlock; ++c)
        Simd::store(out[r] + b * kBlockValues + c * Simd::width, sums[r][c] * sv);
    }
  }
}

template <class Q>
void weighted_sum_blocks(const float* const* p, int64_t m, const unsigned char* const* v, int64_t n, int64_t D,
                         const float* scale, float* const* out) {
  int64_t r = 0;
  if constexpr (kSumRows == 4)
    for (; r + 4 <= m; r += 4) weighted_sum_blocks_rows<Q, 4>(p + r, v, n, D, scale + r, out + r);
  for (; r < m; r += 2) {
    if (m - r >= 2) {
      weighted_sum_blocks_rows<Q, 2>(p + r, v, n, D, scale + r, out + r);
    } else {
      weighted_sum_blocks_rows<Q, 1>(p + r, v, n, D, scale + r, out + r);
    }
  }
}

RowProducts row_products(QuantType type, int64_t D) {
  switch (type) {
    case QuantType::f32: return float_row_products<F32Values>(D);
    case QuantType::bf16: return float_row_products<Bf16Values>(D);
    case QuantType::f16: return float_row_products<F16Values>(D);
    case QuantType::q8_0:
    case QuantType::q4_0:
      NF_CHECK(D % kBlockValues == 0, "attention: ", quant_type_name(type), " keys of head size ", D,
               ", not a multiple of ", kBlockValues);
      if (type == QuantType::q8_0) return {scores_blocks<Q8Values>, weighted_sum_blocks<Q8Values>};
      return {scores_blocks<Q4Values>, weighted_sum_blocks<Q4Values>};
    default: NF_FAIL("attention: keys and values stored as ", quant_type_name(type), " are not read by decoding's kernel");
  }
}

}  // namespace

Tensor rows_tensor(const KVRows& rows, int64_t B, int64_t heads, int64_t n, int64_t D) {
  constexpr int64_t f = sizeof(float);
  const int64_t bytes = (B - 1) * rows.batch_stride + (heads - 1) * rows.head_stride + (n - 1) * rows.row_stride + D * f;
  // the rows' memory, owned by the cache they belong to, which outlives the call
  auto storage = std::make_shared<Storage>(rows.data, static_cast<size_t>(bytes), std::shared_ptr<void>(rows.data, [](void*) {}));
  return Tensor::from_storage(std::move(storage), {B, heads, n, D},
                              {rows.batch_stride / f, rows.head_stride / f, rows.row_stride / f, 1}, 0, DType::f32);
}

KVRows kv_rows(const Tensor& t) {
  constexpr int64_t f = sizeof(float);
  return {static_cast<unsigned char*>(t.raw_data()), QuantType::f32, t.stride(0) * f,
          t.stride(1) * f, t.stride(2) * f};
}

bool attention_decode_applies(const AttentionProblem& p, DType dtype) {
  return dtype == DType::f32 && p.keep_prob >= 1.0 && p.Tq <= kDecodeMaxQueries;
}

bool attention_decode_reads(QuantType type) {
  return type == QuantType::f32 || type == QuantType::f16 || type == QuantType::bf16 || type == QuantType::q8_0 ||
         type == QuantType::q4_0;
}

namespace {

// What the tasks of one part share: its problem, its rows, the rows' products and where each
// query's keys begin and end. Query i scores only keys [first_key(i), end_key(i)): its causal
// diagonal ends them, a sliding window starts them (so a row holds at most `window` scores).
struct DecodePart {
  DecodePart(const CachedPart& part)
      : p(part.p), k(part.k), v(part.v), row0(part.row0), masks(part.p), products(row_products(part.k.type, part.p.D)),
        value_products(row_products(part.v.type, part.p.D)) {
    for (int64_t i = 0; i < p.Tq; ++i) row_len = std::max(row_len, end_key(i) - first_key(i));
    chunk = std::max<int64_t>(1, std::min(kDecodeMaxRows / (p.H / p.Hkv), p.Tq));
  }
  int64_t first_key(int64_t i) const { return masks.key_begin(i); }
  int64_t end_key(int64_t i) const { return std::max(masks.key_end(i, 1), first_key(i)); }

  const AttentionProblem& p;
  KVRows k, v;
  int64_t row0;
  attention_tiles::ScoreMasks<float> masks;
  RowProducts products, value_products;
  int64_t row_len = 1;
  int64_t chunk = 1;  // queries a pass: kDecodeMaxRows rows of scores (each row's sums the same whatever the pass)
};

// A thread's buffers, kept across calls and grown to the largest task it has taken: the group's
// rows of scores (a pass's queries only: one row a head when decoding), and the pointers and
// scales handed to the products.
struct DecodeScratch {
  std::vector<float> s, scales;
  std::vector<const float*> inputs;
  std::vector<float*> outputs;
  // each key's and value's row, in key order (KVRows::each_row: a paged cache's through its block table)
  std::vector<const unsigned char*> k_rows, v_rows;
  void fit(const DecodePart& part) {
    k_rows.resize(std::max(k_rows.size(), static_cast<size_t>(part.p.Tk)));
    v_rows.resize(std::max(v_rows.size(), static_cast<size_t>(part.p.Tk)));
    const auto group = static_cast<size_t>(part.p.H / part.p.Hkv);
    s.resize(std::max(s.size(), group * static_cast<size_t>(part.chunk * part.row_len)));
    scales.resize(std::max(scales.size(), group));
    inputs.resize(std::max(inputs.size(), group));
    outputs.resize(std::max(outputs.size(), group));
  }
};

// Queries [i0, i1) of the heads of KV head hk at batch row b of a part: each query row of its group
// against the row's keys and values. Rows of q, out and lse are the part's row0 + b.
void decode_queries(const DecodePart& part, const Tensor& q, const Tensor& out, float* L, int64_t b, int64_t hk,
                    int64_t i0, int64_t i1, DecodeScratch& scratch) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  const AttentionProblem& p = part.p;
  const int64_t D = p.D, group = p.H / p.Hkv, row_len = part.row_len, qb = part.row0 + b, n = i1 - i0;
  float* s = scratch.s.data();
  const float** inputs = scratch.inputs.data();
  float** outputs = scratch.outputs.data();
  const auto query = [&](int64_t h, int64_t i) {
    return q.data<float>() + qb * q.stride(0) + h * q.stride(1) + i * q.stride(2);
  };
  const unsigned char** k_rows = scratch.k_rows.data();
  const unsigned char** v_rows = scratch.v_rows.data();
  // the rows' scores first, so that the group's keys are read while they are in cache: the
  // group's heads at query i share keys [first_key(i), end_key(i)); head g's row of query i is
  // row g n + (i - i0) of s
  for (int64_t i = i0; i < i1; ++i) {
    const int64_t j0 = part.first_key(i);
    for (int64_t g = 0; g < group; ++g) inputs[g] = query(hk * group + g, i);
    part.products.scores(inputs, group, k_rows + j0, part.end_key(i) - j0, D, s + (i - i0) * row_len, n * row_len);
  }
  for (int64_t i = i0; i < i1; ++i) {
    const int64_t j0 = part.first_key(i), keys = part.end_key(i) - j0;
    int64_t attending = 0;  // rows with a key left after the masks
    for (int64_t g = 0; g < group; ++g) {
      const int64_t h = hk * group + g;
      float* row = s + (g * n + i - i0) * row_len;
      float* o = out.data<float>() + qb * out.stride(0) + h * out.stride(1) + i * out.stride(2);
      // p = e^(s - max s) after scale, bias and masks; out = p v / sum p, lse = max s + log sum p;
      // a row whose keys are all masked gets out = 0, lse = +inf
      part.masks.apply(row, keys, b, h, i, j0);
      const float m = keys > 0 ? row_max(row, keys) : -kInf;
      const float l = m == -kInf ? 0.0f : lane_sum<float>(keys, [&](int64_t c) { return row[c] = vmath::exp(row[c] - m); });
      L[(qb * p.H + h) * p.Tq + i] = l > 0.0f ? m + std::log(l) : kInf;
      if (l > 0.0f) {
        inputs[attending] = row;
        scratch.scales[static_cast<size_t>(attending)] = 1.0f / l;
        outputs[attending++] = o;
      } else {
        std::fill_n(o, D, 0.0f);
      }
    }
    part.value_products.weighted_sum(inputs, attending, v_rows + j0, keys, D, scratch.scales.data(), outputs);
  }
}

// The heads of KV head hk at batch row b of a part: every query row of its group, part.chunk
// queries at a time.
void decode_task(const DecodePart& part, const Tensor& q, const Tensor& out, float* L, int64_t b, int64_t hk,
                 DecodeScratch& scratch) {
  scratch.fit(part);
  part.k.each_row(b, hk, part.p.Tk, scratch.k_rows.data());
  part.v.each_row(b, hk, part.p.Tk, scratch.v_rows.data());
  for (int64_t i0 = 0; i0 < part.p.Tq; i0 += part.chunk)
    decode_queries(part, q, out, L, b, hk, i0, std::min(part.p.Tq, i0 + part.chunk), scratch);
}

// Every (part, batch row, KV head) task of the parts, split across the threads: the streams of a
// continuous-batching step in one parallel region, however many there are.
void decode_parts(std::span<const CachedPart> parts, const Tensor& q, const Tensor& out, const Tensor& lse) {
  std::vector<DecodePart> prepared(parts.begin(), parts.end());
  std::vector<int64_t> first_task(prepared.size() + 1, 0);  // part i's tasks are first_task[i] ..
  for (size_t i = 0; i < prepared.size(); ++i) first_task[i + 1] = first_task[i] + prepared[i].p.B * prepared[i].p.Hkv;
  float* L = lse.data<float>();
  parallel_for(first_task.back(), 1, [&](int64_t begin, int64_t end) {
    thread_local DecodeScratch scratch;
    auto part = std::upper_bound(first_task.begin(), first_task.end(), begin) - first_task.begin() - 1;
    for (int64_t task = begin; task < end; ++task) {
      while (task >= first_task[static_cast<size_t>(part) + 1]) ++part;
      const DecodePart& d = prepared[static_cast<size_t>(part)];
      const int64_t local = task - first_task[static_cast<size_t>(part)];
      decode_task(d, q, out, L, local / d.p.Hkv, local % d.p.Hkv, scratch);
    }
  });
}

}  // namespace

void attention_decode_forward(const AttentionProblem& p, const Tensor& q, const KVRows& k, const KVRows& v,
                              const Tensor& out, const Tensor& lse) {
  const CachedPart part{p, k, v, 0};
  decode_parts({&part, 1}, q, out, lse);
}

void attention_cached_forward(std::span<const CachedPart> parts, const Tensor& q, const Tensor& out, const Tensor& lse) {
  const auto decodes = [&](const CachedPart& part) {
    return attention_decode_applies(part.p, q.dtype()) && attention_decode_reads(part.k.type) &&
           attention_decode_reads(part.v.type);
  };
  if (std::all_of(parts.begin(), parts.end(), decodes)) return decode_parts(parts, q, out, lse);
  for (const CachedPart& part : parts) {
    const AttentionProblem& p = part.p;
    const Tensor q_rows = q.narrow(0, part.row0, p.B), out_rows = out.narrow(0, part.row0, p.B),
                 lse_rows = lse.narrow(0, part.row0, p.B);
    if (decodes(part)) {
      attention_decode_forward(p, q_rows, part.k, part.v, out_rows, lse_rows);
      continue;
    }
    // the fused kernel reads f32 rows at any stride: those in place, other types' first Tk columns
    // dequantised, and a paged cache's gathered (the same values, so the same results)
    const auto readable = [&](const KVRows& rows) {
      if (rows.type == QuantType::f32 && !rows.pages) return rows_tensor(rows, p.B, p.Hkv, p.Tk, p.D);
      const Tensor t = Tensor::empty({p.B, p.Hkv, p.Tk, p.D});
      kv_read(t, rows);
      return t;
    };
    attention_forward(p, q_rows, readable(part.k), readable(part.v), out_rows, lse_rows);
  }
}

void kv_write(const KVRows& rows, const Tensor& x) {
  const int64_t B = x.size(0), heads = x.size(1), T = x.size(2), D = x.size(3);
  parallel_for(B * heads * T, kParallelGrain / D, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const int64_t b = r / (heads * T), h = r / T % heads, t = r % T;
      const float* src = x.data<float>() + b * x.stride(0) + h * x.stride(1) + t * x.stride(2);
      quantize_row(rows.type, src, rows.at(b, h, t), D);
    }
  });
}

void kv_read(const Tensor& out, const KVRows& rows) {
  const int64_t heads = out.size(1), n = out.size(2), D = out.size(3);
  float* dst = out.data<float>();
  parallel_for(out.size(0) * heads * n, kParallelGrain / D, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {  // r = (b heads + h) n + t: out's row order
      const int64_t b = r / (heads * n), h = r / n % heads, t = r % n;
      dequantize_row(rows.type, rows.at(b, h, t), dst + r * D, D);
    }
  });
}

}  // namespace nf::cpu
