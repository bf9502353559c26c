// The plain attention: the textbook composition of existing ops, materialising the (B, H, Tq, Tk)
// scores. Used for tests (the fused kernel must equal it) and to return the weights.
#include <limits>

#include "nanoformer/ops/dropout.h"
#include "nanoformer/ops/elementwise.h"
#include "nanoformer/ops/factory.h"
#include "nanoformer/ops/matmul.h"
#include "nanoformer/ops/reduce.h"
#include "nanoformer/ops/softmax.h"
#include "nanoformer/ops/view.h"
#include "ops/attention_internal.h"

namespace nf::attention_detail {
namespace {

// (B, Hkv, T, D) -> (B, Hkv * group, T, D): kv head h / group serves query head h.
Tensor repeat_heads(const Tensor& x, int64_t group) {
  if (group == 1) return x;
  const Shape& s = x.shape();
  return x.unsqueeze(2).expand({s[0], s[1], group, s[2], s[3]}).reshape({s[0], s[1] * group, s[2], s[3]});
}

// (Tq, Tk): d_i - j, how far key j lies behind query i's diagonal key d_i = i + (Tk - Tq)
Tensor behind_diagonal(int64_t Tq, int64_t Tk) {
  const double offset = static_cast<double>(Tk - Tq);
  return sub(arange(offset, offset + static_cast<double>(Tq)).reshape({Tq, 1}), arange(Tk).reshape({1, Tk}));
}

}  // namespace

AttentionWithWeights plain_attention(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionOptions& options,
                                     const AttentionProblem& shape, Generator& gen) {
  const int64_t group = shape.H / shape.Hkv;
  const Tensor masked_score = Tensor::scalar(-std::numeric_limits<double>::infinity(), q.dtype());
  // scores = scale q k^T + bias, -inf where masked  (B, H, Tq, Tk)
  Tensor scores = mul(matmul(q, repeat_heads(k, group).transpose(-1, -2)), shape.scale);
  const Tensor& mask = options.mask;
  if (mask.defined() && mask.dtype() != DType::boolean) scores = add(scores, mask);
  if (mask.defined() && mask.dtype() == DType::boolean) scores = where(mask, scores, masked_score);
  if (options.key_padding.defined()) {
    scores = where(options.key_padding.reshape({shape.B, 1, 1, shape.Tk}), scores, masked_score);
  }
  if (options.causal) {  // keep 0 <= d_i - j (< window when there is one)
    const Tensor behind = behind_diagonal(shape.Tq, shape.Tk);
    scores = where(gt(behind, -1.0), scores, masked_score);
    if (options.window > 0) scores = where(lt(behind, static_cast<double>(options.window)), scores, masked_score);
  }
  // rows with every key masked: weights 0 (softmax would give NaN), no gradient
  Tensor dead;
  if (mask.defined() || options.key_padding.defined() || options.causal) {
    dead = eq(max(scores.detach(), -1, true), -std::numeric_limits<double>::infinity());
    scores = masked_fill(scores, dead, 0.0);
  }
  Tensor weights = softmax(scores, -1);
  if (dead.defined()) weights = masked_fill(weights, dead, 0.0);
  if (options.dropout_p > 0.0) weights = dropout(weights, options.dropout_p, true, gen);
  return {matmul(weights, repeat_heads(v, group)), weights};
}

}  // namespace nf::attention_detail
