#pragma once
// GRPO's policy-gradient losses (Shao et al. 2024) on the per-token log-probs of B sampled
// completions, padded to T tokens, as TRL's GRPOTrainer._compute_loss (importance sampling per token,
// no two-sided delta, no entropy terms). Per token, with A_b the completion's advantage,
// ratio = exp(logp - old_logp) (old_logp undefined: logp detached, the on-policy ratio 1), and A_bt the
// token's advantage where advantages are (B, T) (PPO's GAE, train/ppo.h):
//   clip:  L = -min(ratio A, clip(ratio, 1 - eps_low, 1 + eps_high) A)         (PPO)
//   cispo: L = -sg(min(ratio, eps_high)) A logp     (CISPO, MiniMax 2025: the IS weight clipped, no gradient)
//   beta > 0 adds beta (exp(ref - logp) - (ref - logp) - 1)                    (the k3 estimator of KL(pi || ref))
// summed over the completion mask m as the aggregation says:
//   sequence: mean_b sum_t m L / max(sum_t m, 1)     token: sum m L / max(sum m, 1)
//   constant: sum m L / (B max_completion_length)    (Dr. GRPO)
// Only logp gets a gradient.
#include <cstdint>
#include <string>

#include "nanoformer/core/tensor.h"

namespace nf {

enum class PolicyRatio { clip, cispo };
enum class PolicyAggregation { sequence, token, constant };

// TRL's loss_type names as the pair they stand for: grpo (clip, sequence), bnpo and dapo (clip,
// token: one process, no accumulation), dr_grpo (clip, constant), cispo (cispo, token).
struct PolicyLossType {
  PolicyRatio ratio = PolicyRatio::clip;
  PolicyAggregation aggregation = PolicyAggregation::sequence;
};
// "grpo", "bnpo", "dr_grpo", "dapo", "cispo"; an unknown name throws listing them.
PolicyLossType policy_loss_type_from_name(const std::string& name);

struct PolicyLossOptions {
  PolicyLossType type;
  double epsilon_low = 0.2, epsilon_high = 0.2;  // clip: the ratio's band; cispo: epsilon_high bounds the weight
  double beta = 0.0;                             // the KL term's weight; > 0 needs ref_logps
  int64_t max_completion_length = 0;             // constant aggregation: > 0
};

struct PolicyLoss {
  Tensor loss;                 // (), differentiable w.r.t. logps
  double kl = 0;               // mean over the masked tokens of the k3 KL (0 when beta is 0)
  double clip_low = 0, clip_high = 0;  // shares of the masked tokens clipped: ratio < 1 - eps_low with
                                       // A < 0, ratio > 1 + eps_high with A > 0 (cispo: ratio > eps_high, A > 0)
  double clip_fraction() const { return clip_low + clip_high; }
};

// logps, old_logps, ref_logps, mask: (B, T) of one floating dtype (old_logps, ref_logps may be
// undefined: on-policy; no KL); advantages: (B), one per completion (GRPO), or (B, T), one per token (PPO).
PolicyLoss policy_loss(const Tensor& logps, const Tensor& old_logps, const Tensor& ref_logps,
                       const Tensor& advantages, const Tensor& mask, const PolicyLossOptions& options);

}  // namespace nf
