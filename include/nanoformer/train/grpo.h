#pragma once
// GRPO's step (Shao et al. 2024), one object per run: the prompts of a gsm8k-layout task file
// (eval/task_records.h: "Question: ...\nAnswer:", the answer after "####"), batch_size of them a
// step in a shuffled order (a new shuffle each pass), G completions each sampled from the policy
// by the engine's one decoding loop (infer/decode_step.h: R = B G streams, one forward over their
// caches per token; temperature, top-k, stop strings, max new tokens), scored by the verifier
// (train/reward_verifier.h). Advantages per group of G:
//   A_i = (r_i - mean(r)) / (std(r) + 1e-4)     (std of the group, biased, as TRL and MiniMind)
//   A_i = r_i - mean(r)                         (scale_rewards off: Dr. GRPO, nanochat)
// The loss is ops/policy_loss.h's on the completion tokens' log-probs under the policy, against
// the log-probs when sampled (iterations > 1) and the frozen reference's (beta > 0).
// With tools (GrpoOptions::tools, infer/tool_choice.h), a completion calls them while it decodes
// and their answers are forced into it, left out of the loss (mask 0). A chat-template model's
// prompt is then its template's, [user: the question] with the tools offered, and a rollout runs
// up to max_turns tool turns in the one decoding loop (MiniMind's train_agent.py rollout_single,
// which generates again per turn: the same tokens, as the tool answers are what its template adds);
// its reward is the verifier's on the final answer plus MiniMind's call terms (train/call_reward.h).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "nanoformer/infer/tool_use.h"
#include "nanoformer/models/decoder_lm.h"
#include "nanoformer/ops/policy_loss.h"
#include "nanoformer/tokenizer/chat_template.h"
#include "nanoformer/tokenizer/tokenizer.h"
#include "nanoformer/train/reward_verifier.h"
#include "nanoformer/eval/task_records.h"
#include "nanoformer/train/train_config.h"

namespace nf::train {

// The group-normalised advantages of rewards in consecutive groups of group_size.
std::vector<double> group_advantages(const std::vector<double>& rewards, int64_t group_size, bool scale_by_std);

// One step's sampled completions, ready for the loss.
struct GrpoRollouts {
  Tensor inputs, targets;        // (R, L): prompt + completion shifted by one; targets -100 outside completions
  Tensor mask;                   // (R, L) f32: 1 on completion tokens the policy sampled (0 on a tool's forced ones)
  Tensor advantages;             // (R) f32
  Tensor old_logps;              // (R, L) when sampled (iterations > 1), else undefined
  std::vector<double> rewards;   // (R)
  std::vector<double> answer_rewards;  // (R) the verifier's of the final answers (rewards less the call terms)
  std::vector<int64_t> tool_calls, invalid_tool_calls;  // (R) with a chat-template model's tools, else 0
  // the text scored: the completion (with nanochat's calculator, its calls and answers too); with a
  // chat-template model's tools, the final answer (infer/tool_transcript.h)
  std::vector<std::string> completions;
  int64_t completion_tokens = 0;
  double rollout_seconds = 0;    // the batched decode's time
};

// What a GRPO step logs (TRL's names in metrics.jsonl).
struct GrpoMetrics {
  double reward = 0, reward_std = 0;  // mean and std (biased) of the step's rewards
  double accuracy = 0;                // share of completions whose final answer's reward is >= 1 (right)
  double tool_calls = 0, invalid_tool_calls = 0;  // per completion (chat-template models' tools)
  double kl = 0;                      // mean k3 KL to the reference over the completion tokens (beta > 0)
  double clip_fraction = 0;           // share of the completion tokens clipped
  double completion_length = 0;       // mean tokens per completion
  double rollout_tokens_per_s = 0;    // completion tokens / the batched decode's seconds
};

class GrpoStep {
 public:
  // Reads the task file (data.train_paths[0]) and the tokenizer; throws naming the file and line.
  explicit GrpoStep(const TrainConfig& config);
  int64_t prompts() const { return static_cast<int64_t>(records_.size()); }
  // Rollouts call a chat-template model's tools through its template (not nanochat's calculator).
  bool calls_tools_by_template() const { return chat_template_ != nullptr; }

  // Samples step `step`'s completions (prompts of batch index step / iterations) from the policy
  // in eval mode, without gradient, and scores them.
  GrpoRollouts rollout(models::DecoderLM& policy, int64_t step) const;
  // The loss on `rollouts` with gradient to the policy (in its own mode); reference == nullptr with
  // beta > 0: the policy with its LoRA adapters off.
  PolicyLoss loss(models::DecoderLM& policy, models::DecoderLM* reference, const GrpoRollouts& rollouts) const;
  // The metrics of a step from its rollouts and loss.
  GrpoMetrics metrics(const GrpoRollouts& rollouts, const PolicyLoss& loss) const;

 private:
  TrainConfig config_;
  PolicyLossOptions loss_options_;
  std::vector<eval::TaskRecord> records_;
  std::vector<std::vector<int64_t>> prompt_ids_;
  std::unique_ptr<tokenizer::Tokenizer> tokenizer_;
  std::unique_ptr<tokenizer::ChatTemplate> chat_template_;  // with a chat-template model's tools
  std::unique_ptr<infer::ToolUse> tools_;                   // each row decodes with a clone
  RewardVerifier verifier_;
};

// Per-token log-probs (R, T) of targets (R, T) under softmax(logits / temperature) of logits (R, T, V);
// 0 where the target is -100. GRPO passes its sampling temperature (as TRL), so that the log-probs
// are those of the distribution the completions were drawn from.
Tensor token_log_probs(const Tensor& logits, const Tensor& targets, double temperature = 1.0);

}  // namespace nf::train
