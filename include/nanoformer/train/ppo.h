#pragma once
// PPO (Schulman et al. 2017) on sampled responses with a critic (train/critic.h), as MiniMind's
// trainer/train_ppo.py (jingyaogong/minimind at d65ef2c) and TRL's PPOTrainer (huggingface/trl
// v0.29.1, trl/experimental/ppo/ppo_trainer.py) define it, --ppo-style choosing whose conventions
// (train_config.h, PpoOptions). Per rollout (GRPO's sampling and verifier, train/grpo.h):
//   rewards   the verifier's score at the response's last token (minimind) or one past it (trl, when
//             the response stopped before max_new_tokens); trl adds -kl_coef (logp_old - logp_ref)
//             at each response token
//   GAE       delta_t = r_t + gamma V_{t+1} - V_t,  A_t = delta_t + gamma lam A_{t+1}  (V past the end 0)
//             with tools (GrpoOptions::tools), a tool's forced tokens inside a response are not the
//             policy's actions: GAE passes over them (V_{t+1} and A_{t+1} carried through, as verl's
//             compute_gae_advantage_return skips observation tokens, volcengine/verl@b178a3cd5,
//             verl/trainer/ppo/core_algos.py), and the masks and trl's KL penalty leave them out
//   returns   A + V;  advantages whitened over the response tokens: (A - mean) / sqrt(var + 1e-8)
// then epochs x minibatches steps, each minimising on a minibatch of responses
//   policy_loss (ops/policy_loss.h; clip, token mean, per-token A; minimind: + kl_coef k3 KL)
//   + vf_coef value_loss (ops/value_loss.h; over the value mask)
#include <cstdint>
#include <vector>

#include "nanoformer/core/tensor.h"
#include "nanoformer/ops/policy_loss.h"
#include "nanoformer/ops/value_loss.h"
#include "nanoformer/train/train_config.h"

namespace nf::train {

// GAE over the rows of values and rewards (R, C), from the last column back (the value past the
// last column is 0); returns A (R, C) in the inputs' dtype. `skip` (R, C), when given: columns GAE
// passes over (1), carrying V_{t+1} and A_{t+1} through them (their A is the carried one).
Tensor gae_advantages(const Tensor& values, const Tensor& rewards, double gamma, double lam, const Tensor& skip = {});
// (x - mean) / sqrt(var + 1e-8) with mean and var over the entries where mask is 1, var biased
// (MiniMind) or with Bessel's correction (TRL's masked_whiten); 0 where mask is 0.
Tensor masked_whiten(const Tensor& x, const Tensor& mask, bool unbiased);

// What a rollout's losses train towards, every tensor (R, C) in old_logps' dtype.
struct PpoTargets {
  Tensor policy_mask;  // 1 on each response's tokens (the sampled ones)
  Tensor value_mask;   // the policy mask, and (trl) the token past the response's end where its score is
  Tensor rewards;      // per token: the score and (trl) the KL penalty
  Tensor values;       // the critic's values when sampled, 0 outside value_mask
  Tensor advantages;   // GAE, whitened over policy_mask, 0 outside it
  Tensor returns;      // GAE + values (before whitening)
};

// GRPO's rollout rows (train/grpo.h: inputs, targets (R, L) shifted by one, mask 1 on the response
// tokens' columns) as PPO's: C = L + 1 columns, the inputs also holding each response's last token
// (at column starts[r] + lengths[r]: where the critic values the finished response, TRL's score
// position), targets -100 past L; response r's token t is the target of column starts[r] + t.
// With tools, a response holds forced tokens (mask 0 between sampled ones): its columns are those
// with a target, and `sampled` marks the ones the policy sampled.
struct PpoRows {
  Tensor inputs, targets;  // (R, C) i64
  Tensor sampled;          // (R, C) f64: 1 on the response tokens the policy sampled
  std::vector<int64_t> starts, lengths;
};
PpoRows ppo_rows(const Tensor& inputs, const Tensor& targets, const Tensor& mask);

// Response r's token t sits at column starts[r] + t of the (R, C) inputs for lengths[r] >= 1 tokens
// (through its first eos or stop), and stopped there before max_new_tokens when lengths[r] <
// max_new_tokens. old_logps, ref_logps (undefined when kl_coef is 0), old_values: (R, C). `sampled`
// (R, C), when given (PpoRows::sampled): the response tokens the policy sampled, the others a tool's
// forced ones (out of both masks and trl's KL penalty, passed over by GAE); a score that would sit on
// a forced token sits on the last sampled one before it.
PpoTargets ppo_targets(const Tensor& old_logps, const Tensor& ref_logps, const Tensor& old_values,
                       const std::vector<double>& scores, const std::vector<int64_t>& starts,
                       const std::vector<int64_t>& lengths, int64_t max_new_tokens, const PpoOptions& options,
                       const Tensor& sampled = {});

struct PpoLoss {
  Tensor loss;            // policy + vf_coef value, differentiable w.r.t. logps and values
  PolicyLoss policy;      // its kl is MiniMind's kl_ref (the k3 KL to the reference, minimind style)
  ValueLoss value;
  double approx_kl = 0;   // mean over the policy mask of (logp - old)^2 / 2 (MiniMind's early-stop test)
};

// The loss of a minibatch: logps and values (R, C) now, the rest as sampled (rows of ppo_targets).
// epsilon_low / epsilon_high: the ratio's clip band.
PpoLoss ppo_loss(const Tensor& logps, const Tensor& values, const Tensor& old_logps, const Tensor& ref_logps,
                 const PpoTargets& targets, const PpoOptions& options, double epsilon_low, double epsilon_high);

}  // namespace nf::train
