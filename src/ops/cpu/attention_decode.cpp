#include "ops/cpu/attention_decode.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "ops/cpu/attention_tiles.h"
#include "ops/cpu/loops.h"
#include "ops/cpu/row_reductions.h"
#include "ops/cpu/simd.h"
#include "ops/cpu/vector_math.h"

namespace nf::cpu {
namespace {

// The two products of one query row, over n keys of D floats (rows ldk / ldv apart):
//   scores:        s_j = q . k_j
//   weighted_sum:  out = scale sum_j p_j v_j
struct RowProducts {
  void (*scores)(const float* q, const float* k, int64_t ldk, int64_t n, int64_t D, float* s);
  void (*weighted_sum)(const float* p, const float* v, int64_t ldv, int64_t n, int64_t D, float scale, float* out);
};

// Any D: one key at a time, the running sums in memory.
void scores_any(const float* q, const float* k, int64_t ldk, int64_t n, int64_t D, float* s) {
  for (int64_t j = 0; j < n; ++j) {
    const float* kj = k + j * ldk;
    Simd::V acc = Simd::zero();
    int64_t d = 0;
    for (; d + Simd::width <= D; d += Simd::width) acc = Simd::fma(Simd::load(q + d), Simd::load(kj + d), acc);
    if (d < D) acc = Simd::fma(Simd::load_first(q + d, D - d), Simd::load_first(kj + d, D - d), acc);
    s[j] = Simd::sum(acc);
  }
}

void weighted_sum_any(const float* p, const float* v, int64_t ldv, int64_t n, int64_t D, float scale, float* out) {
  std::fill_n(out, D, 0.0f);
  for (int64_t j = 0; j < n; ++j)
    for (int64_t d = 0; d < D; ++d) out[d] += p[j] * v[j * ldv + d];
  for (int64_t d = 0; d < D; ++d) out[d] *= scale;
}

// D = NV vector widths: q and the sums held in registers; four keys' dot products reduced together.
template <int NV>
void scores_fixed(const float* q, const float* k, int64_t ldk, int64_t n, int64_t, float* s) {
  Simd::V qv[NV];
  for (int c = 0; c < NV; ++c) qv[c] = Simd::load(q + c * Simd::width);
  const auto dot = [&](const float* kj) {
    Simd::V acc = Simd::zero();
    for (int c = 0; c < NV; ++c) acc = Simd::fma(qv[c], Simd::load(kj + c * Simd::width), acc);
    return acc;
  };
  int64_t j = 0;
  for (; j + 4 <= n; j += 4)
    Simd::sum4(dot(k + j * ldk), dot(k + (j + 1) * ldk), dot(k + (j + 2) * ldk), dot(k + (j + 3) * ldk), s + j);
  for (; j < n; ++j) s[j] = Simd::sum(dot(k + j * ldk));
}

template <int NV>
void weighted_sum_fixed(const float* p, const float* v, int64_t ldv, int64_t n, int64_t, float scale, float* out) {
  Simd::V even[NV], odd[NV];  // two chains of FMAs (even and odd keys) to hide their latency
  for (int c = 0; c < NV; ++c) even[c] = odd[c] = Simd::zero();
  int64_t j = 0;
  for (; j + 2 <= n; j += 2) {
    const Simd::V pe = Simd::broadcast(p[j]), po = Simd::broadcast(p[j + 1]);
    for (int c = 0; c < NV; ++c) {
      even[c] = Simd::fma(pe, Simd::load(v + j * ldv + c * Simd::width), even[c]);
      odd[c] = Simd::fma(po, Simd::load(v + (j + 1) * ldv + c * Simd::width), odd[c]);
    }
  }
  if (j < n) {
    const Simd::V pe = Simd::broadcast(p[j]);
    for (int c = 0; c < NV; ++c) even[c] = Simd::fma(pe, Simd::load(v + j * ldv + c * Simd::width), even[c]);
  }
  const Simd::V sv = Simd::broadcast(scale);
  for (int c = 0; c < NV; ++c) Simd::store(out + c * Simd::width, (even[c] + odd[c]) * sv);
}

RowProducts row_products(int64_t D) {
  const int64_t nv = D % Simd::width == 0 ? D / Simd::width : 0;
  switch (Simd::width > 1 ? nv : 0) {
    case 1: return {scores_fixed<1>, weighted_sum_fixed<1>};
    case 2: return {scores_fixed<2>, weighted_sum_fixed<2>};
    case 4: return {scores_fixed<4>, weighted_sum_fixed<4>};
    case 8: return {scores_fixed<8>, weighted_sum_fixed<8>};
    default: return {scores_any, weighted_sum_any};
  }
}

}  // namespace

bool attention_decode_applies(const AttentionProblem& p, DType dtype) {
  return dtype == DType::f32 && p.keep_prob >= 1.0 && p.Tq * (p.H / p.Hkv) <= kDecodeMaxRows;
}

void attention_decode_forward(const AttentionProblem& p, const Tensor& q, const Tensor& k, const Tensor& v,
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
  const RowProducts products = row_products(D);
  float* L = lse.data<float>();
  parallel_for(p.B * p.Hkv, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> s(static_cast<size_t>(rows * row_len));
    for (int64_t task = begin; task < end; ++task) {
      const int64_t b = task / p.Hkv, hk = task % p.Hkv;
      const float* k_rows = query(k, b, hk, 0);
      const float* v_rows = query(v, b, hk, 0);
      // the rows' scores first, so that the group's keys are read while they are in cache
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t i = r % p.Tq, j0 = first_key(i);
        products.scores(query(q, b, hk * group + r / p.Tq, i), k_rows + j0 * k.stride(2), k.stride(2), end_key(i) - j0,
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
          products.weighted_sum(row, v_rows + j0 * v.stride(2), v.stride(2), keys, D, 1.0f / l, o);
        } else {
          std::fill_n(o, D, 0.0f);
        }
        L[(b * p.H + h) * p.Tq + i] = l > 0.0f ? m + std::log(l) : kInf;
      }
    }
  });
}

}  // namespace nf::cpu
