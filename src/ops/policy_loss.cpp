// GRPO's and PPO's clipped-ratio and CISPO losses with the k3 KL term, forward and backward side by side.
#include "nanoformer/ops/policy_loss.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "nanoformer/autograd/node.h"
#include "nanoformer/core/error.h"
#include "nanoformer/ops/elementwise.h"
#include "ops/reduce_internal.h"

namespace nf {

PolicyLossType policy_loss_type_from_name(const std::string& name) {
  if (name == "grpo") return {PolicyRatio::clip, PolicyAggregation::sequence};
  if (name == "bnpo" || name == "dapo") return {PolicyRatio::clip, PolicyAggregation::token};
  if (name == "dr_grpo") return {PolicyRatio::clip, PolicyAggregation::constant};
  if (name == "cispo") return {PolicyRatio::cispo, PolicyAggregation::token};
  NF_FAIL("unknown GRPO loss \"", name, "\" (known: grpo, bnpo, dr_grpo, dapo, cispo)");
}

namespace {

void check_like(const Tensor& t, const Tensor& logps, const char* name) {
  NF_CHECK(t.shape() == logps.shape() && t.dtype() == logps.dtype(), "policy_loss: ", name, " ",
           shape_str(t.shape()), " ", dtype_name(t.dtype()), " differs from logps ", shape_str(logps.shape()), " ",
           dtype_name(logps.dtype()), " (expects (B, T) per-token log-probs of one dtype)");
}

}  // namespace

PolicyLoss policy_loss(const Tensor& logps, const Tensor& old_logps, const Tensor& ref_logps,
                       const Tensor& advantages, const Tensor& mask, const PolicyLossOptions& options) {
  NF_CHECK(logps.defined() && logps.dim() == 2, "policy_loss: logps must be (B, T), got ",
           logps.defined() ? shape_str(logps.shape()) : "undefined");
  require_floating_input(logps, "policy_loss");
  NF_CHECK(mask.defined(), "policy_loss: mask is undefined");
  check_like(mask, logps, "mask");
  if (old_logps.defined()) check_like(old_logps, logps, "old_logps");
  if (ref_logps.defined()) check_like(ref_logps, logps, "ref_logps");
  const int64_t B = logps.size(0), T = logps.size(1);
  NF_CHECK(B > 0, "policy_loss: no completions (B = 0)");
  NF_CHECK(advantages.defined() && (advantages.dim() == 1 ? advantages.size(0) == B : advantages.shape() == logps.shape()),
           "policy_loss: advantages ", advantages.defined() ? shape_str(advantages.shape()) : "undefined",
           " is neither (B) = (", B, ") nor (B, T) = ", shape_str(logps.shape()));
  const bool per_token = advantages.dim() == 2;
  NF_CHECK(options.beta >= 0, "policy_loss: beta must be >= 0, got ", options.beta);
  NF_CHECK(options.beta == 0 || ref_logps.defined(), "policy_loss: beta ", options.beta, " needs ref_logps");
  NF_CHECK(options.epsilon_low >= 0 && options.epsilon_high >= 0, "policy_loss: epsilons must be >= 0, got ",
           options.epsilon_low, " and ", options.epsilon_high);
  const PolicyAggregation aggregation = options.type.aggregation;
  NF_CHECK(aggregation != PolicyAggregation::constant || options.max_completion_length > 0,
           "policy_loss: the constant aggregation needs max_completion_length > 0");

  const std::vector<double> lp = logps.to_vector<double>(), m = mask.to_vector<double>();
  const std::vector<double> old = old_logps.defined() ? old_logps.to_vector<double>() : lp;
  const std::vector<double> ref = ref_logps.defined() ? ref_logps.to_vector<double>() : std::vector<double>();
  const std::vector<double> adv = advantages.to_vector<double>();
  // weight of token (b, t) in the aggregate: m / its normaliser
  std::vector<double> weight(lp.size());
  double mask_total = 0;
  for (double v : m) mask_total += v;
  for (int64_t b = 0; b < B; ++b) {
    double row = 0;
    for (int64_t t = 0; t < T; ++t) row += m[b * T + t];
    for (int64_t t = 0; t < T; ++t) {
      const double mt = m[b * T + t];
      double w = 0;
      switch (aggregation) {
        case PolicyAggregation::sequence: w = mt / (std::max(row, 1.0) * static_cast<double>(B)); break;
        case PolicyAggregation::token: w = mt / std::max(mask_total, 1.0); break;
        case PolicyAggregation::constant:
          w = mt / (static_cast<double>(B) * static_cast<double>(options.max_completion_length));
          break;
      }
      weight[b * T + t] = w;
    }
  }
  const double lo = 1.0 - options.epsilon_low, hi = 1.0 + options.epsilon_high;
  std::vector<double> grad(lp.size());  // d loss / d logp
  double loss = 0, kl_sum = 0, low_sum = 0, high_sum = 0;
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t t = 0; t < T; ++t) {
      const int64_t i = b * T + t;
      const double A = adv[per_token ? i : b];
      const double ratio = std::exp(lp[i] - old[i]);
      double token_loss = 0, token_grad = 0;
      bool low = false, high = false;
      if (options.type.ratio == PolicyRatio::cispo) {
        const double is_weight = std::min(ratio, options.epsilon_high);  // no gradient through it
        token_loss = -is_weight * A * lp[i];
        token_grad = -is_weight * A;
        high = ratio > options.epsilon_high && A > 0;
      } else {
        const double clipped = std::clamp(ratio, lo, hi);
        token_loss = -std::min(ratio * A, clipped * A);
        low = ratio < lo && A < 0;
        high = ratio > hi && A > 0;
        token_grad = (low || high) ? 0.0 : -A * ratio;  // d ratio / d logp = ratio
      }
      if (options.beta > 0) {
        const double d = ref[i] - lp[i], e = std::exp(d);
        const double kl = e - d - 1;
        token_loss += options.beta * kl;
        token_grad += options.beta * (1.0 - e);
        kl_sum += m[i] * kl;
      }
      loss += weight[i] * token_loss;
      grad[i] = weight[i] * token_grad;
      low_sum += m[i] * (low ? 1.0 : 0.0);
      high_sum += m[i] * (high ? 1.0 : 0.0);
    }
  }
  PolicyLoss out;
  const double tokens = std::max(mask_total, 1.0);
  out.kl = kl_sum / tokens;
  out.clip_low = low_sum / tokens;
  out.clip_high = high_sum / tokens;
  const DType dtype = logps.dtype();
  out.loss = Tensor::from_vector(std::vector<double>{loss}, {}).to(dtype);
  const Tensor grad_logps = Tensor::from_vector(grad, {B, T}).to(dtype);
  autograd::record("policy_loss", out.loss, {logps},
                   [grad_logps](const Tensor& g, const autograd::Node&) {
                     return std::vector<Tensor>{mul(grad_logps, g)};
                   });
  return out;
}

}  // namespace nf
