#pragma once
// Transformer-XL's relative attention score. With q_i = x_i W^Q and k_j = x_j W^K (what attention
// passes in), r_d the sinusoid of the distance d = i - j and W_R the position projection:
//   A_ij = q_i k_j^T + q_i (W_R r_{i-j})^T + u k_j^T + v (W_R r_{i-j})^T
// (content, position, global content bias u, global position bias v). Attention computes the first
// term; score_bias returns the other three, multiplied by score_scale because attention adds biases
// after scaling q k^T (as F.scaled_dot_product_attention's attn_mask).
//
// r_d = [sin(d f_0), ..., sin(d f_{dim/2-1}), cos(d f_0), ..., cos(d f_{dim/2-1})], f_i = 10000^(-2i/dim)
// (Transformer-XL's order). The position term is computed once per distance, (q_i + v) . p_d for
// the Tq + Tk - 1 distances, then moved to (i, j) by the relative shift: a strided view.
// Parameters: "u", "v" (H, D) and "pos_proj.weight" (H*D, dim), a Linear without bias.
#include <cstdint>
#include <memory>

#include "nanoformer/nn/attention_position.h"
#include "nanoformer/nn/linear.h"

namespace nf::nn {

class XLRelativePosition : public AttentionPosition {
 public:
  // score_scale 0 means 1 / sqrt(head_dim).
  XLRelativePosition(int64_t dim, int64_t n_heads, int64_t head_dim, double score_scale = 0.0,
                     Generator& gen = default_generator());
  // q (B, H, Tq, D), k (B, Hkv, Tk, D) with H a multiple of Hkv -> (B, H, Tq, Tk)
  Tensor score_bias(const Tensor& q, const Tensor& k, int64_t q_offset, int64_t k_offset) override;
  bool has_score_bias() const override { return true; }

  double score_scale() const { return scale_; }
  Tensor u, v;
  std::shared_ptr<Linear> pos_proj;

 private:
  int64_t dim_, n_heads_, head_dim_;
  double scale_;
};

// r_d for d = first, first - 1, ..., first - count + 1 (descending, as Transformer-XL's pos_seq):
// (count, dim) in `dtype`.
Tensor xl_relative_sinusoids(int64_t first, int64_t count, int64_t dim, DType dtype);

}  // namespace nf::nn
