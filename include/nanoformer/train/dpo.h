#pragma once
// DPO on a batch of preference pairs (data/sft_data.h: row 2b chosen, row 2b + 1 rejected, targets
// kIgnoreIndex outside the assistant's tokens): the masked SUM of each row's response log-probs
//   logp_r = sum_t [target_rt != ignore] log softmax(logits_rt)[target_rt]
// under the policy (with gradient) and under the frozen reference (without), then DPO's loss on
// them (ops/preference_loss.h). The reference is a second model holding the starting weights or,
// with LoRA, the policy itself with its adapters off.
#include <cstdint>

#include "nanoformer/data/batch.h"
#include "nanoformer/models/decoder_lm.h"
#include "nanoformer/ops/preference_loss.h"
#include "nanoformer/train/train_config.h"

namespace nf::train {

// logits (R, T, V), targets (R, T) with kIgnoreIndex where no loss is taken -> (R) summed log-probs.
Tensor sequence_log_probs(const Tensor& logits, const Tensor& targets);

// The frozen reference's logits (R, T, V) over `inputs`, which DPO and GRPO's KL term share:
// `reference`, or without one (nullptr) the policy with its LoRA adapters off; in eval mode, without
// gradient, the model's own mode restored after.
Tensor reference_logits(models::DecoderLM& policy, models::DecoderLM* reference, const Tensor& inputs);

// Per-step means over pairs of what a DPO step logs (TRL's names: rewards/chosen, ...).
struct PreferenceMetrics {
  double chosen_reward = 0, rejected_reward = 0;  // beta (logp - ref_logp)
  double accuracy = 0;                            // share of pairs with chosen reward > rejected
  int64_t pairs = 0;
  double margin() const { return chosen_reward - rejected_reward; }
  // Adds a batch's rewards (its means weighted by its pairs).
  void add(const DpoLoss& loss);
};

// The DPO loss of `batch` (2 B rows): loss.loss () is the mean over its B pairs, with gradient to
// the policy (an MoE's load-balancing loss is not added). reference == nullptr: the policy with its
// LoRA adapters off. The reference runs in eval mode without gradient; the policy in its own mode.
DpoLoss dpo_batch_loss(models::DecoderLM& policy, models::DecoderLM* reference, const data::Batch& batch,
                              const DpoOptions& options);

}  // namespace nf::train
