// Transformer-XL's relative score: position term through the relative shift, global biases u, v.
#include "nanoformer/nn/xl_relative_position.h"

#include <cmath>

#include "nanoformer/core/error.h"
#include "nanoformer/ops/elementwise.h"
#include "nanoformer/ops/factory.h"
#include "nanoformer/ops/matmul.h"
#include "nanoformer/ops/view.h"

namespace nf::nn {

// r_d = [sin(d f_i) for i < dim/2, cos(d f_i) for i < dim/2], f_i = 10000^(-2i/dim), d descending
Tensor xl_relative_sinusoids(int64_t first, int64_t count, int64_t dim, DType dtype) {
  NF_CHECK(dim > 0 && dim % 2 == 0, "xl_relative_sinusoids: dim ", dim, " must be positive and even");
  const int64_t half = dim / 2;
  Tensor r = Tensor::empty({count, dim}, DType::f64);
  double* p = r.data<double>();
  for (int64_t i = 0; i < half; ++i) {
    const double f = std::pow(10000.0, -2.0 * static_cast<double>(i) / static_cast<double>(dim));
    for (int64_t c = 0; c < count; ++c) {
      const double angle = static_cast<double>(first - c) * f;
      p[c * dim + i] = std::sin(angle);
      p[c * dim + half + i] = std::cos(angle);
    }
  }
  return r.to(dtype);
}

XLRelativePosition::XLRelativePosition(int64_t dim, int64_t n_heads, int64_t head_dim, double score_scale, Generator& gen)
    : AttentionPosition("XLRelativePosition"), dim_(dim), n_heads_(n_heads), head_dim_(head_dim) {
  NF_CHECK(dim > 0 && dim % 2 == 0, "XLRelativePosition: dim ", dim, " must be positive and even (sin and cos halves)");
  NF_CHECK(n_heads > 0 && head_dim > 0, "XLRelativePosition: n_heads ", n_heads, " and head_dim ", head_dim,
           " must be positive");
  NF_CHECK(score_scale >= 0, "XLRelativePosition: score_scale ", score_scale, " must be positive (0: 1/sqrt(head_dim))");
  scale_ = score_scale > 0 ? score_scale : 1.0 / std::sqrt(static_cast<double>(head_dim));
  u = register_parameter("u", zeros({n_heads, head_dim}));
  v = register_parameter("v", zeros({n_heads, head_dim}));
  pos_proj = register_module("pos_proj", std::make_shared<Linear>(dim, n_heads * head_dim, /*bias=*/false, gen));
}

// scale (q_i . p_{i-j} + u . k_j + v . p_{i-j}),  p_d = W_R r_d per head:
//   position term  (B, H, Tq, W) = (q + v) P^T over W = Tq + Tk descending distances, then the
//   relative shift: element (a, b) is column Tq - 1 - a + b, i.e. flat (Tq - 1) + a (W - 1) + b,
//   a view with row stride W - 1 (the last distance column only pads that stride to >= Tk);
//   content bias   (B, H, 1, Tk) = u k^T.
Tensor XLRelativePosition::score_bias(const Tensor& q, const Tensor& k, int64_t q_offset, int64_t k_offset) {
  NF_CHECK(q.defined() && k.defined() && q.dim() == 4 && k.dim() == 4 && q.size(1) == n_heads_ &&
               q.size(3) == head_dim_ && k.size(3) == head_dim_ && k.size(0) == q.size(0) && k.size(1) > 0 &&
               n_heads_ % k.size(1) == 0,
           "XLRelativePosition: q must be (B, ", n_heads_, ", Tq, ", head_dim_, ") and k (B, Hkv, Tk, ", head_dim_,
           ") with Hkv dividing ", n_heads_, ", got q ", q.defined() ? shape_str(q.shape()) : "undefined", " and k ",
           k.defined() ? shape_str(k.shape()) : "undefined");
  const int64_t B = q.size(0), H = n_heads_, Tq = q.size(2), Tk = k.size(2), Hkv = k.size(1), D = head_dim_;
  const int64_t W = Tq + Tk;
  const int64_t first = (q_offset + Tq - 1) - k_offset;  // the largest distance i - j
  const Tensor r = xl_relative_sinusoids(first, W, dim_, q.dtype());                        // (W, dim)
  const Tensor p = permute(reshape(pos_proj->forward(r), {W, H, D}), {1, 2, 0});            // (H, D, W)
  const Tensor by_distance = matmul(q + reshape(v, {1, H, 1, D}), unsqueeze(p, 0));       // (B, H, Tq, W)
  const Tensor flat = reshape(by_distance, {B, H, Tq * W});
  const Tensor shifted = narrow(view(narrow(flat, 2, Tq - 1, Tq * (W - 1)), {B, H, Tq, W - 1}), 3, 0, Tk);
  const Tensor keys = Hkv == H ? k : reshape(expand(unsqueeze(k, 2), {B, Hkv, H / Hkv, Tk, D}), {B, H, Tk, D});
  const Tensor content = transpose(matmul(keys, reshape(u, {1, H, D, 1})), 2, 3);         // (B, H, 1, Tk)
  return (shifted + content) * scale_;
}

}  // namespace nf::nn
