#pragma once
// Everything one training run is given: the model, the data, the optimizer, the schedule and how
// to run (accumulation, precision, evaluation, checkpoints). `nanoformer train` fills it from its
// flags; the checkpoint stores it as JSON, so that a resume can refuse a run whose model or data
// stream would differ from the one it continues.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "nanoformer/data/data.h"
#include "nanoformer/infer/tool_choice.h"
#include "nanoformer/models/lora.h"
#include "nanoformer/ops/preference_loss.h"
#include "nanoformer/optim/optimizer_set.h"
#include "nanoformer/optim/schedule.h"

namespace nf::train {

enum class Precision { fp32, bf16, fp16 };
// "fp32", "bf16", "fp16"; parsing an unknown name throws listing them.
std::string precision_name(Precision precision);
Precision precision_from_name(const std::string& name);

// What a run minimises: lm, the next-token cross-entropy on the data's targets (pretraining, SFT);
// dpo, DPO's loss on chosen/rejected conversation pairs against a frozen reference, the starting
// model; distill, the cross-entropy mixed with the KL from a frozen teacher on the same targets;
// grpo, GRPO on completions sampled from the policy for the prompts of a task file, scored by a
// verifier (docs/post-training.md); ppo, PPO with a critic on such completions (train/ppo.h).
// "lm", "dpo", "distill", "grpo", "ppo"; parsing an unknown name throws listing them.
enum class Objective { lm, dpo, distill, grpo, ppo };
std::string objective_name(Objective objective);
Objective objective_from_name(const std::string& name);

struct DpoOptions {
  double beta = 0.1;                                    // > 0: rewards are beta (log pi - log ref)
  PreferenceLossKind loss = PreferenceLossKind::sigmoid;  // or ipo (ops/preference_loss.h)
};

// Distillation (ops/distillation_loss.h): alpha CE + (1 - alpha) T^2 KL(teacher || student).
struct DistillOptions {
  std::string teacher;       // any model file or folder load_decoder_lm reads; frozen; the student's vocabulary
  std::string teacher_logits;  // or its logits on the run's batches, read from this file (train/teacher_logits.h)
  double temperature = 1.0;  // T > 0
  double alpha = 0.5;        // in [0, 1]: the cross-entropy's share (MiniMind's default)
};

// GRPO (train/grpo.h, ops/policy_loss.h): batch_size prompts a step, group_size completions each.
struct GrpoOptions {
  int64_t group_size = 4;             // G completions per prompt
  std::string loss = "grpo";          // TRL's loss_type: grpo, bnpo, dr_grpo, dapo, cispo; or reinforce
                                      // (nanochat: advantages r - mean, token mean, no clipping)
  double epsilon_low = 0.2, epsilon_high = 0.2;  // clip band; cispo: epsilon_high bounds the IS weight
  double beta = 0.0;                  // the k3 KL to the frozen starting model; 0: no reference
  bool scale_rewards = true;          // advantages (r - mean) / (std + 1e-4); false: r - mean (Dr. GRPO)
  int64_t iterations = 1;             // optimizer steps on each step's rollouts (TRL's num_iterations)
  // sampling the rollouts
  double temperature = 1.0;
  int64_t top_k = 0;
  int64_t max_new_tokens = 64;
  std::vector<std::string> stop;      // stop strings (the text before one is the completion)
  // the reward: "numeric" (GSM8K's extracted final number equals the answer), "exact" (the trimmed
  // completion equals the answer) or "command" (verifier_command reads JSON on stdin)
  std::string verifier = "numeric";
  std::vector<std::string> verifier_command;  // argv; no shell
  double verifier_timeout = 10.0;              // seconds per completion
  // --tools, --tool-command, --tool-timeout, --tool-output-limit, --max-tool-turns: tools the
  // rollouts call while they decode (infer/tool_choice.h), their answers forced into the sequence
  // and left out of the loss. A nanochat model's: nanochat's calculator (as nanochat's chat_rl.py
  // masks its engine's forced tokens); a chat-template model's: Hermes calls answered as tool
  // messages of its template, its prompts rendered by the template offering the tools, for up to
  // max_turns tool turns (MiniMind's train_agent.py).
  infer::ToolOptions tools;
  // The weight of MiniMind's reward terms for well-formed calls (train/call_reward.h), added to the
  // verifier's reward of the final answer (chat-template models' calls; 0: off).
  double call_reward = 0.5;
};

// PPO (train/ppo.h, ops/policy_loss.h, ops/value_loss.h): rollouts, sampling, the verifier and the
// policy's clip band (epsilon_low / epsilon_high) are GrpoOptions'; group_size completions per prompt
// (1 is MiniMind's). Each rollout trains epochs x minibatches optimizer steps, one minibatch a step.
struct PpoOptions {
  // whose conventions: "minimind" (train_ppo.py: the score at the last response token, the k3 KL to
  // the reference as a loss term, the critic trained on the response tokens, advantages whitened
  // with the biased variance) or "trl" (PPOTrainer: the score one token past the response's end and
  // the critic trained there too, -kl_coef (logp - ref) of each token in its reward, the unbiased variance)
  std::string style = "minimind";
  double kl_coef = 0.02;          // the KL's weight; 0: no reference
  double gamma = 1.0, lam = 0.95; // GAE's discount and lambda
  double cliprange_value = 0.2;   // the critic's values clipped to old +- this
  double vf_coef = 0.5;           // the value loss's weight in the loss
  double critic_lr = 5e-7;        // the critic's AdamW (the run's schedule shape, betas, decay)
  int64_t epochs = 2;             // passes over each rollout (MiniMind's ppo_update_iters)
  int64_t minibatches = 1;        // optimizer steps per pass; divides the rollout's responses
  double early_stop_kl = 0.25;    // a minibatch whose approx KL to the rollout policy exceeds it ends the
                                  // rollout's updates (its own loss x 0, as MiniMind); 0: never
};

// How a data-parallel run communicates (docs/scaling.md); runtime choices, not part of the run's
// identity: a resume may change them.
struct DistributedOptions {
  int zero = 0;                              // 1: ZeRO-1, the optimizer state sharded across ranks
  int64_t bucket_bytes = int64_t{25} << 20;  // gradients all-reduced in buckets of about this size
};

struct TrainConfig {
  std::string model = "gpt-mini";   // a preset or config JSON: fresh weights from `seed`
  std::vector<std::string> model_overrides;  // "key=value" applied to the model config's JSON (to
                                             // init_from's too: only what keeps its weights' shapes)
  std::string init_from;            // else: any model file load_model reads (fine-tuning); `model` unused
  // LoRA (models/lora.h): adapters on the base (the fresh model or init_from), everything else
  // frozen; checkpoints then hold the adapters and their optimizer state only.
  std::optional<models::LoRAOptions> lora;
  Objective objective = Objective::lm;  // dpo: data.preference_pairs follows (the trainer sets it)
  DpoOptions dpo;                       // objective dpo only
  DistillOptions distill;               // objective distill only
  GrpoOptions grpo;                     // objectives grpo and ppo: data.train_paths[0] is a gsm8k task file
  PpoOptions ppo;                       // objective ppo only
  data::DataOptions data;
  optim::OptimizerConfig optimizer;
  optim::ScheduleConfig schedule;          // schedule.lr is the peak lr; total_steps is the run's length
  int64_t grad_accum = 1;           // micro-batches per optimizer step
  double grad_clip = 1.0;           // max global gradient norm; 0 = no clipping
  Precision precision = Precision::fp32;
  int64_t eval_every = 100;         // steps between validation passes; 0 = only at the end
  int64_t eval_batches = 20;        // validation batches per pass
  int64_t save_every = 0;           // steps between checkpoints; 0 = only at the end
  int64_t keep = 3;                 // checkpoints kept in out_dir (the newest)
  std::string out_dir = "run";
  uint64_t seed = 1337;             // initialisation and dropout (data has its own seed)
  bool resume = false;              // continue from the newest checkpoint in out_dir
  bool quiet = false;               // no progress bar
  // Data-parallel ranks (mpirun -np): each trains on batch_size rows of every batch of
  // ranks x batch_size (data/sharded_batches.h); a resume needs the same number.
  int64_t ranks = 1;
  DistributedOptions distributed;   // not saved in checkpoints
};

// Throws nf::Error naming the first bad option.
void validate_train_config(const TrainConfig& config);
// The base a LoRA run's adapter checkpoints name (what `nanoformer lora merge` loads by default):
// init_from when no override changes it, else <out_dir>/base.safetensors, the base (fresh, or
// init_from with the overrides) such a run writes when it starts.
std::string lora_base_path(const TrainConfig& config);
// The config as one JSON object (pretty-printed) and back; unknown keys are refused.
std::string train_config_to_json(const TrainConfig& config);
TrainConfig train_config_from_json(const std::string& json_text, const std::string& source);
// `path` made absolute and normal (symlinks resolved as far as it exists): how a run's state
// stores paths, so that a resume from any directory names the same files; "" stays "".
std::string resolved_path(const std::string& path);
// The config with its paths resolved: data files, tokenizer, init_from, out_dir, and model when
// it names a file rather than a preset.
TrainConfig with_resolved_paths(TrainConfig config);
// The options of `saved` that a resume must not change (model, data, batch shape, optimizer,
// schedule but its length, precision, seeds), as "name: saved -> requested" lines; empty when
// compatible. Paths are compared as they are: resolve both configs first.
std::vector<std::string> resume_conflicts(const TrainConfig& saved, const TrainConfig& requested);

}  // namespace nf::train
