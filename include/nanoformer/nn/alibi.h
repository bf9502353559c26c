#pragma once
// ALiBi: a per-head linear penalty on the scores, score(i, j) += -m_h |i - j|, with BLOOM's slopes
// m_h: for n heads and p = 2^floor(log2 n), m_h = b^(h+1) for h < p with b = 2^(-8/p); when n is
// not a power of two the remaining n - p heads take the odd powers b'^1, b'^3, ... of
// b' = 2^(-4/p) (the slopes of 2p heads that fall between the first p).
//
// BLOOM itself adds m_h j (the key position only), which differs from -m_h |i - j| by a constant
// per query row under a causal mask, so the attention weights are the same; the form here is also
// right for bidirectional attention.
#include <cstdint>

#include "nanoformer/nn/attention_position.h"

namespace nf::nn {

class AlibiBias : public AttentionPosition {
 public:
  explicit AlibiBias(int64_t n_heads);
  // (1, H, Tq, Tk) in q's dtype: -m_h |(q_offset + a) - (k_offset + b)|
  Tensor score_bias(const Tensor& q, const Tensor& k, int64_t q_offset, int64_t k_offset) override;
  bool has_score_bias() const override { return true; }
  Tensor slopes;  // (H) f64, a non-persistent buffer

 private:
  int64_t n_heads_;
};

// BLOOM's slopes for n_heads heads, as above.
std::vector<double> alibi_slopes(int64_t n_heads);

}  // namespace nf::nn
