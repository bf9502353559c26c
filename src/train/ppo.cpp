// PPO's rewards, GAE, whitening and loss of a minibatch (train/ppo.h).
#include "nanoformer/train/ppo.h"

#include <cmath>

#include "nanoformer/core/error.h"
#include "nanoformer/data/batch.h"
#include "nanoformer/ops/elementwise.h"

namespace nf::train {
namespace {

void check_rows(const Tensor& t, const Tensor& like, const char* what, const char* name) {
  NF_CHECK(t.defined() && t.dim() == 2 && t.shape() == like.shape(), what, ": ", name, " ",
           t.defined() ? shape_str(t.shape()) : std::string("undefined"), " is not ", shape_str(like.shape()));
}

}  // namespace

Tensor gae_advantages(const Tensor& values, const Tensor& rewards, double gamma, double lam, const Tensor& skip) {
  NF_CHECK(values.defined() && values.dim() == 2, "gae_advantages: values must be (R, C), got ",
           values.defined() ? shape_str(values.shape()) : std::string("undefined"));
  check_rows(rewards, values, "gae_advantages", "rewards");
  if (skip.defined()) check_rows(skip, values, "gae_advantages", "skip");
  const int64_t R = values.size(0), C = values.size(1);
  const std::vector<double> v = values.to_vector<double>(), r = rewards.to_vector<double>();
  const std::vector<double> passed = skip.defined() ? skip.to_vector<double>() : std::vector<double>(v.size(), 0.0);
  std::vector<double> a(v.size());
  for (int64_t i = 0; i < R; ++i) {
    double last = 0, next = 0;  // A_{t+1}, V_{t+1}
    for (int64_t t = C - 1; t >= 0; --t) {
      const auto k = static_cast<size_t>(i * C + t);
      if (passed[k] == 0) {  // a skipped column carries both through
        last = r[k] + gamma * next - v[k] + gamma * lam * last;  // delta_t + gamma lam A_{t+1}
        next = v[k];
      }
      a[k] = last;
    }
  }
  return Tensor::from_vector(a, values.shape()).to(values.dtype());
}

Tensor masked_whiten(const Tensor& x, const Tensor& mask, bool unbiased) {
  NF_CHECK(x.defined() && x.dim() == 2, "masked_whiten: x must be (R, C), got ",
           x.defined() ? shape_str(x.shape()) : std::string("undefined"));
  check_rows(mask, x, "masked_whiten", "mask");
  const std::vector<double> v = x.to_vector<double>(), m = mask.to_vector<double>();
  double n = 0, mean = 0, var = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    n += m[i];
    mean += m[i] * v[i];
  }
  NF_CHECK(n > (unbiased ? 1.0 : 0.0), "masked_whiten: the mask selects ", n, " entries (needs at least ",
           unbiased ? 2 : 1, ")");
  mean /= n;
  for (size_t i = 0; i < v.size(); ++i) var += m[i] * (v[i] - mean) * (v[i] - mean);
  var /= unbiased ? n - 1 : n;
  const double scale = 1.0 / std::sqrt(var + 1e-8);
  std::vector<double> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = m[i] * (v[i] - mean) * scale;
  return Tensor::from_vector(out, x.shape()).to(x.dtype());
}

PpoRows ppo_rows(const Tensor& inputs, const Tensor& targets, const Tensor& mask) {
  NF_CHECK(inputs.defined() && inputs.dim() == 2, "ppo_rows: inputs must be (R, L)");
  NF_CHECK(targets.defined() && targets.shape() == inputs.shape() && mask.defined() && mask.shape() == inputs.shape(),
           "ppo_rows: targets and mask must be ", shape_str(inputs.shape()), " as the inputs");
  const int64_t R = inputs.size(0), L = inputs.size(1), C = L + 1;
  const std::vector<int64_t> in = inputs.to_vector<int64_t>(), tg = targets.to_vector<int64_t>();
  const std::vector<double> m = mask.to_vector<double>();
  std::vector<int64_t> ids(static_cast<size_t>(R * C), 0), next(static_cast<size_t>(R * C), data::kIgnoreIndex);
  std::vector<double> sampled(static_cast<size_t>(R * C), 0.0);
  PpoRows out;
  for (int64_t i = 0; i < R; ++i) {
    int64_t start = -1, n = 0, taken = 0;  // the response's columns (those with a target) and its sampled ones
    for (int64_t t = 0; t < L; ++t) {
      const auto k = static_cast<size_t>(i * L + t), kc = static_cast<size_t>(i * C + t);
      ids[kc] = in[k];
      next[kc] = tg[k];
      NF_CHECK(m[k] == 0 || tg[k] != data::kIgnoreIndex, "ppo_rows: row ", i, " column ", t, " is masked in without a target");
      if (tg[k] == data::kIgnoreIndex) continue;
      NF_CHECK(start < 0 || t == start + n, "ppo_rows: row ", i, "'s response columns are not contiguous");
      if (start < 0) start = t;
      ++n;
      sampled[kc] = m[k] > 0 ? 1.0 : 0.0;
      if (m[k] > 0) ++taken;
    }
    NF_CHECK(taken >= 1, "ppo_rows: response ", i, " of the rollout is empty");
    ids[static_cast<size_t>(i * C + start + n)] = tg[static_cast<size_t>(i * L + start + n - 1)];
    out.starts.push_back(start);
    out.lengths.push_back(n);
  }
  out.inputs = Tensor::from_vector(ids, {R, C});
  out.targets = Tensor::from_vector(next, {R, C});
  out.sampled = Tensor::from_vector(sampled, {R, C});
  return out;
}

PpoTargets ppo_targets(const Tensor& old_logps, const Tensor& ref_logps, const Tensor& old_values,
                       const std::vector<double>& scores, const std::vector<int64_t>& starts,
                       const std::vector<int64_t>& lengths, int64_t max_new_tokens, const PpoOptions& o,
                       const Tensor& sampled) {
  NF_CHECK(old_logps.defined() && old_logps.dim() == 2, "ppo_targets: old_logps must be (R, C)");
  check_rows(old_values, old_logps, "ppo_targets", "old_values");
  const bool trl = o.style == "trl";
  NF_CHECK(trl || o.style == "minimind", "ppo_targets: unknown style '", o.style, "' (known: minimind, trl)");
  if (o.kl_coef > 0) check_rows(ref_logps, old_logps, "ppo_targets", "ref_logps");
  if (sampled.defined()) check_rows(sampled, old_logps, "ppo_targets", "sampled");
  const int64_t R = old_logps.size(0), C = old_logps.size(1);
  const auto rows = static_cast<size_t>(R);
  NF_CHECK(scores.size() == rows && starts.size() == rows && lengths.size() == rows, "ppo_targets: ", scores.size(),
           " scores, ", starts.size(), " starts and ", lengths.size(), " lengths for ", R, " responses");
  const std::vector<double> old = old_logps.to_vector<double>(), v = old_values.to_vector<double>();
  const std::vector<double> ref = o.kl_coef > 0 ? ref_logps.to_vector<double>() : std::vector<double>();
  const std::vector<double> taken = sampled.defined() ? sampled.to_vector<double>() : std::vector<double>();
  std::vector<double> pm(old.size(), 0.0), vm(old.size(), 0.0), rewards(old.size(), 0.0), values(old.size(), 0.0);
  std::vector<double> skip(old.size(), 0.0);  // a tool's forced tokens inside a response
  for (int64_t i = 0; i < R; ++i) {
    const int64_t start = starts[static_cast<size_t>(i)], n = lengths[static_cast<size_t>(i)];
    // the score's token: the last one (MiniMind's last_idx); TRL's sequence_lengths_p1 when the
    // response stopped early (its first pad), else its last
    int64_t end = trl && n < max_new_tokens ? n : n - 1;
    NF_CHECK(n >= 1 && start >= 0 && start + end < C, "ppo_targets: response ", i, " of ", n, " tokens from column ",
             start, " (its score at ", start + end, ") does not fit ", C, " columns");
    const auto was_sampled = [&](int64_t t) { return taken.empty() || taken[static_cast<size_t>(i * C + start + t)] > 0; };
    for (int64_t t = 0; t < n; ++t) (was_sampled(t) ? pm : skip)[static_cast<size_t>(i * C + start + t)] = 1.0;
    while (end < n && end > 0 && !was_sampled(end)) --end;  // the score on a sampled token
    for (int64_t t = 0; t <= end; ++t)
      if (t == n || was_sampled(t)) vm[static_cast<size_t>(i * C + start + t)] = 1.0;
    if (trl && o.kl_coef > 0)  // non_score_reward = -kl_coef (logp - ref), k1, on the sampled response tokens
      for (int64_t t = 0; t < n; ++t) {
        if (!was_sampled(t)) continue;
        const auto k = static_cast<size_t>(i * C + start + t);
        rewards[k] = -o.kl_coef * (old[k] - ref[k]);
      }
    rewards[static_cast<size_t>(i * C + start + end)] += scores[static_cast<size_t>(i)];
  }
  for (size_t k = 0; k < v.size(); ++k) values[k] = vm[k] * v[k];
  const DType dtype = old_logps.dtype();
  PpoTargets out;
  out.policy_mask = Tensor::from_vector(pm, old_logps.shape()).to(dtype);
  out.value_mask = Tensor::from_vector(vm, old_logps.shape()).to(dtype);
  out.rewards = Tensor::from_vector(rewards, old_logps.shape()).to(dtype);
  out.values = Tensor::from_vector(values, old_logps.shape()).to(dtype);
  const Tensor advantages = gae_advantages(Tensor::from_vector(values, old_logps.shape()),
                                           Tensor::from_vector(rewards, old_logps.shape()), o.gamma, o.lam,
                                           taken.empty() ? Tensor() : Tensor::from_vector(skip, old_logps.shape()));
  out.returns = add(advantages, Tensor::from_vector(values, old_logps.shape())).to(dtype);
  out.advantages = masked_whiten(advantages, Tensor::from_vector(pm, old_logps.shape()), trl).to(dtype);
  return out;
}

PpoLoss ppo_loss(const Tensor& logps, const Tensor& values, const Tensor& old_logps, const Tensor& ref_logps,
                 const PpoTargets& targets, const PpoOptions& o, double epsilon_low, double epsilon_high) {
  PolicyLossOptions p;
  p.type = {PolicyRatio::clip, PolicyAggregation::token};  // masked_mean over the response tokens
  p.epsilon_low = epsilon_low;
  p.epsilon_high = epsilon_high;
  const bool kl_in_loss = o.style == "minimind" && o.kl_coef > 0;
  p.beta = kl_in_loss ? o.kl_coef : 0.0;
  PpoLoss out;
  out.policy = policy_loss(logps, old_logps, kl_in_loss ? ref_logps : Tensor(), targets.advantages,
                           targets.policy_mask, p);
  out.value = value_loss(values, targets.values, targets.returns, targets.value_mask, o.cliprange_value);
  out.loss = add(out.policy.loss, mul(out.value.loss, o.vf_coef));
  const std::vector<double> lp = logps.to_vector<double>(), old = old_logps.to_vector<double>();
  const std::vector<double> m = targets.policy_mask.to_vector<double>();
  double n = 0;
  for (size_t i = 0; i < lp.size(); ++i) {
    out.approx_kl += m[i] * 0.5 * (lp[i] - old[i]) * (lp[i] - old[i]);
    n += m[i];
  }
  out.approx_kl /= std::max(n, 1.0);
  return out;
}

}  // namespace nf::train
