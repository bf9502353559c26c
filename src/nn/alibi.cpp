// ALiBi: BLOOM's head slopes and the linear distance penalty on the scores.
#include "nanoformer/nn/alibi.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "nanoformer/core/error.h"

namespace nf::nn {

// p = 2^floor(log2 n): m_h = 2^(-8 (h+1) / p) for h < p, then 2^(-4 (2k+1) / p) for k < n - p
std::vector<double> alibi_slopes(int64_t n_heads) {
  NF_CHECK(n_heads > 0, "alibi_slopes: n_heads ", n_heads, " must be positive");
  int64_t p = 1;
  while (p * 2 <= n_heads) p *= 2;
  std::vector<double> slopes;
  for (int64_t h = 1; h <= p; ++h) slopes.push_back(std::exp2(-8.0 * static_cast<double>(h) / static_cast<double>(p)));
  for (int64_t k = 0; k < std::min(p, n_heads - p); ++k) {
    slopes.push_back(std::exp2(-4.0 * static_cast<double>(2 * k + 1) / static_cast<double>(p)));
  }
  return slopes;
}

AlibiBias::AlibiBias(int64_t n_heads) : AttentionPosition("AlibiBias"), n_heads_(n_heads) {
  NF_CHECK(n_heads > 0, "AlibiBias: n_heads ", n_heads, " must be positive");
  const std::vector<double> m = alibi_slopes(n_heads);
  slopes = register_buffer("slopes", Tensor::from_vector(m, {n_heads}), /*persistent=*/false);
}

// bias(h, a, b) = -m_h |(q_offset + a) - (k_offset + b)|, in f64 then rounded to q's dtype
Tensor AlibiBias::score_bias(const Tensor& q, const Tensor& k, int64_t q_offset, int64_t k_offset) {
  NF_CHECK(q.defined() && k.defined() && q.dim() == 4 && k.dim() == 4 && q.size(1) == n_heads_,
           "AlibiBias: q must be (B, ", n_heads_, ", Tq, D) and k (B, Hkv, Tk, D), got q ",
           q.defined() ? shape_str(q.shape()) : "undefined", " and k ", k.defined() ? shape_str(k.shape()) : "undefined");
  const int64_t Tq = q.size(2), Tk = k.size(2);
  Tensor bias = Tensor::empty({1, n_heads_, Tq, Tk}, DType::f64);
  double* p = bias.data<double>();
  const double* m = slopes.data<double>();
  for (int64_t h = 0; h < n_heads_; ++h) {
    for (int64_t a = 0; a < Tq; ++a) {
      for (int64_t b = 0; b < Tk; ++b) {
        const int64_t distance = std::llabs((q_offset + a) - (k_offset + b));
        p[(h * Tq + a) * Tk + b] = -m[h] * static_cast<double>(distance);
      }
    }
  }
  return bias.to(q.dtype());
}

}  // namespace nf::nn
