#include "ops/cpu/attention_decode.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "nanoformer/core/error.h"
#include "ops/cpu/attention_tiles.h"
#include "ops/cpu/loops.h"
#include "ops/cpu/quant_blocks.h"
#include "ops/cpu/row_reductions.h"
#include "ops/cpu/simd.h"
#include "ops/cpu/vector_math.h"

namespace nf::cpu {
namespace {

// The two products of one query row, over n keys of D values stored in rows ldk / ldv bytes apart:
//   scores:        s_j = q . k_j
//   weighted_sum:  out = scale sum_j p_j v_j
struct RowProducts {
  void (*scores)(const float* q, const unsigned char* k, int64_t ldk, int64_t n, int64_t D, float* s);
  void (*weighted_sum)(const float* p, const unsigned char* v, int64_t ldv, int64_t n, int64_t D, float scale, float* out);
};

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
void scores_any(const float* q, const unsigned char* k, int64_t ldk, int64_t n, int64_t D, float* s) {
  for (int64_t j = 0; j < n; ++j) {
    const typename F::T* kj = values_at<F>(k + j * ldk);
    Simd::V acc = Simd::zero();
    int64_t d = 0;
    for (; d + Simd::width <= D; d += Simd::width) acc = Simd::fma(Simd::load(q + d), F::load(kj + d), acc);
    if (d < D) acc = Simd::fma(Simd::load_first(q + d, D - d), load_first<F>(kj + d, D - d), acc);
    s[j] = Simd::sum(acc);
  }
}

template <class F>
void weighted_sum_any(const float* p, const unsigned char* v, int64_t ldv, int64_t n, int64_t D, float scale, float* out) {
  std::fill_n(out, D, 0.0f);
  for (int64_t j = 0; j < n; ++j) {
    const typename F::T* vj = values_at<F>(v + j * ldv);
    for (int64_t d = 0; d < D; ++d) out[d] += p[j] * F::value(vj[d]);
  }
  for (int64_t d = 0; d < D; ++d) out[d] *= scale;
}

// D = NV vector widths: q and the sums held in registers; four keys' dot products reduced together.
template <class F, int NV>
void scores_fixed(const float* q, const unsigned char* k, int64_t ldk, int64_t n, int64_t, float* s) {
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
    Simd::sum4(dot(k + j * ldk), dot(k + (j + 1) * ldk), dot(k + (j + 2) * ldk), dot(k + (j + 3) * ldk), s + j);
  for (; j < n; ++j) s[j] = Simd::sum(dot(k + j * ldk));
}

template <class F, int NV>
void weighted_sum_fixed(const float* p, const unsigned char* v, int64_t ldv, int64_t n, int64_t, float scale, float* out) {
  Simd::V even[NV], odd[NV];  // two chains of FMAs (even and odd keys) to hide their latency
  for (int c = 0; c < NV; ++c) even[c] = odd[c] = Simd::zero();
  int64_t j = 0;
  for (; j + 2 <= n; j += 2) {
    const Simd::V pe = Simd::broadcast(p[j]), po = Simd::broadcast(p[j + 1]);
    const typename F::T *ve = values_at<F>(v + j * ldv), *vo = values_at<F>(v + (j + 1) * ldv);
    for (int c = 0; c < NV; ++c) {
      even[c] = Simd::fma(pe, F::load(ve + c * Simd::width), even[c]);
      odd[c] = Simd::fma(po, F::load(vo + c * Simd::width), odd[c]);
    }
  }
  if (j < n) {
    const Simd::V pe = Simd::broadcast(p[j]);
    const typename F::T* ve = values_at<F>(v + j * ldv);
    for (int c = 0; c < NV; ++c) even[c] = Simd::fma(pe, F::load(ve + c * Simd::width), even[c]);
  }
  const Simd::V sv = Simd::broadcast(scale);
  for (int c = 0; c < NV; ++c) Simd::store(out + c * Simd::width, (even[c] + odd[c]) * sv);
}

template <class F>
RowProducts float_row_products(int64_t D) {
  const int64_t nv = D % Simd::width == 0 ? D / Simd::width : 0;
  switch (Simd::width > 1 ? nv : 0) {
    case 1: return {scores_fixed<F, 1>, weighted_sum_fixed<F, 1>};
    case 2: return {scores_fixed<F, 2>, weighted_sum_fixed<F, 2>};
    case 4: return {scores_fixed<F, 4>, weighted_sum_fixed<F, 4>};
    case 8: return {scores_fixed<F, 8>, weighted_sum_fixed<F, 8>};
    default: return {scores_any<F>, weighted_sum_any<F>};
  }
}

// Q8_0 rows (D a multiple of 32): the int8 values are widened to floats in registers, each block's
// products summed, then scaled by its d:  q . k = sum over blocks b of d_b sum_i q_bi x_bi.
constexpr int64_t kVectorsPerQ8Block = kQK8_0 / Simd::width;

Simd::V dot_q8_0(const float* q, const BlockQ8_0* blocks, int64_t n_blocks) {
  Simd::V total = Simd::zero();
  for (int64_t b = 0; b < n_blocks; ++b, q += kQK8_0) {
    Simd::V acc = Simd::zero();
    for (int64_t c = 0; c < kVectorsPerQ8Block; ++c)
      acc = Simd::fma(Simd::load(q + c * Simd::width), Simd::load_i8(blocks[b].qs + c * Simd::width), acc);
    total = Simd::fma(Simd::broadcast(f16_to_float(blocks[b].d)), acc, total);
  }
  return total;
}

void scores_q8_0(const float* q, const unsigned char* k, int64_t ldk, int64_t n, int64_t D, float* s) {
  const int64_t n_blocks = D / kQK8_0;
  const auto dot = [&](int64_t j) { return dot_q8_0(q, reinterpret_cast<const BlockQ8_0*>(k + j * ldk), n_blocks); };
  int64_t j = 0;
  for (; j + 4 <= n; j += 4) Simd::sum4(dot(j), dot(j + 1), dot(j + 2), dot(j + 3), s + j);
  for (; j < n; ++j) s[j] = Simd::sum(dot(j));
}

// out = scale sum_j p_j v_j, v_j's block b adding (p_j d_jb) x_jb: D = NV vector widths of sums in
// registers (NV > 0), or in memory (NV = 0: any D).
template <int NV>
void weighted_sum_q8_0(const float* p, const unsigned char* v, int64_t ldv, int64_t n, int64_t D, float scale, float* out) {
  const int64_t n_vectors = NV > 0 ? NV : D / Simd::width;
  Simd::V sums[NV > 0 ? NV : 1];
  if constexpr (NV > 0) {
    for (int c = 0; c < NV; ++c) sums[c] = Simd::zero();
  } else {
    std::fill_n(out, D, 0.0f);
  }
  for (int64_t j = 0; j < n; ++j) {
    const auto* blocks = reinterpret_cast<const BlockQ8_0*>(v + j * ldv);
    for (int64_t c = 0; c < n_vectors; ++c) {
      const BlockQ8_0& block = blocks[c / kVectorsPerQ8Block];
      const Simd::V w = Simd::broadcast(p[j] * f16_to_float(block.d));
      const Simd::V x = Simd::load_i8(block.qs + c % kVectorsPerQ8Block * Simd::width);
      if constexpr (NV > 0) {
        sums[c] = Simd::fma(w, x, sums[c]);
      } else {
        Simd::store(out + c * Simd::width, Simd::fma(w, x, Simd::load(out + c * Simd::width)));
      }
    }
  }
  const Simd::V sv = Simd::broadcast(scale);
  for (int64_t c = 0; c < n_vectors; ++c) {
    if constexpr (NV > 0) {
      Simd::store(out + c * Simd::width, sums[c] * sv);
    } else {
      Simd::store(out + c * Simd::width, Simd::load(out + c * Simd::width) * sv);
    }
  }
}

RowProducts q8_0_row_products(int64_t D) {
  switch (D / Simd::width) {
    case 2: return {scores_q8_0, weighted_sum_q8_0<2>};
    case 4: return {scores_q8_0, weighted_sum_q8_0<4>};
    case 8: return {scores_q8_0, weighted_sum_q8_0<8>};
    default: return {scores_q8_0, weighted_sum_q8_0<0>};
  }
}

RowProducts row_products(QuantType type, int64_t D) {
  switch (type) {
    case QuantType::f32: return float_row_products<F32Values>(D);
    case QuantType::bf16: return float_row_products<Bf16Values>(D);
    case QuantType::f16: return float_row_products<F16Values>(D);
    case QuantType::q8_0:
      NF_CHECK(D % kQK8_0 == 0, "attention: Q8_0 keys of head size ", D, ", not a multiple of ", kQK8_0);
      return q8_0_row_products(D);
    default: NF_FAIL("attention: keys and values stored as ", quant_type_name(type), " are not read by decoding's kernel");
  }
}

}  // namespace

KVRows kv_rows(const Tensor& t) {
  constexpr int64_t f = sizeof(float);
  return {static_cast<const unsigned char*>(static_cast<const void*>(t.data<float>())), QuantType::f32, t.stride(0) * f,
          t.stride(1) * f, t.stride(2) * f};
}

bool attention_decode_applies(const AttentionProblem& p, DType dtype) {
  return dtype == DType::f32 && p.keep_prob >= 1.0 && p.Tq * (p.H / p.Hkv) <= kDecodeMaxRows;
}

bool attention_decode_reads(QuantType type) {
  return type == QuantType::f32 || type == QuantType::f16 || type == QuantType::bf16 || type == QuantType::q8_0;
}

void attention_decode_forward(const AttentionProblem& p, const Tensor& q, const KVRows& k, const KVRows& v,
                              const Tensor& out, const Tensor& lse) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  const attention_tiles::ScoreMasks<float> masks(p);
  const int64_t D = p.D, group = p.H / p.Hkv, rows = group * p.Tq;
  // query i scores only keys [first_key(i), end_key(i)): its causal diagonal ends them, a sliding
  // window starts them (so a row holds at most `window` scores)
  const auto first_key = [&](int64_t i) { return masks.key_begin(i); };
  const auto end_key = [&](int64_t i) { return std::max(masks.key_end(i, 1), first_key(i)); };
  int64_t row_len = 1;
  for (int64_t i = 0; i < p.Tq; ++i) row_len = std::max(row_len, end_key(i) - first_key(i));
  // row r of a task is query i = r % Tq of head h = hk group + r / Tq
  const auto query = [&](const Tensor& t, int64_t b, int64_t h, int64_t i) {
    return t.data<float>() + b * t.stride(0) + h * t.stride(1) + i * t.stride(2);
  };
  const RowProducts products = row_products(k.type, D), value_products = row_products(v.type, D);
  float* L = lse.data<float>();
  parallel_for(p.B * p.Hkv, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> s(static_cast<size_t>(rows * row_len));
    for (int64_t task = begin; task < end; ++task) {
      const int64_t b = task / p.Hkv, hk = task % p.Hkv;
      const unsigned char* k_rows = k.data + b * k.batch_stride + hk * k.head_stride;
      const unsigned char* v_rows = v.data + b * v.batch_stride + hk * v.head_stride;
      // the rows' scores first, so that the group's keys are read while they are in cache
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t i = r % p.Tq, j0 = first_key(i);
        products.scores(query(q, b, hk * group + r / p.Tq, i), k_rows + j0 * k.row_stride, k.row_stride, end_key(i) - j0,
                        D, s.data() + r * row_len);
      }
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t h = hk * group + r / p.Tq, i = r % p.Tq, j0 = first_key(i), keys = end_key(i) - j0;
        float* row = s.data() + r * row_len;
        float* o = out.data<float>() + b * out.stride(0) + h * out.stride(1) + i * out.stride(2);
        // p = e^(s - max s) after scale, bias and masks; out = p v / sum p, lse = max s + log sum p;
        // a row whose keys are all masked gets out = 0, lse = +inf
        masks.apply(row, keys, b, h, i, j0);
        const float m = keys > 0 ? row_max(row, keys) : -kInf;
        const float l = m == -kInf ? 0.0f : lane_sum<float>(keys, [&](int64_t c) { return row[c] = vmath::exp(row[c] - m); });
        if (l > 0.0f) {
          value_products.weighted_sum(row, v_rows + j0 * v.row_stride, v.row_stride, keys, D, 1.0f / l, o);
        } else {
          std::fill_n(o, D, 0.0f);
        }
        L[(b * p.H + h) * p.Tq + i] = l > 0.0f ? m + std::log(l) : kInf;
      }
    }
  });
}

}  // namespace nf::cpu
