#pragma once
// What a training step minimises: one class per --objective, made once by make_objective, so the
// trainer's loop (train/trainer.h) knows no objective by name:
//   lm       cross-entropy on the batches' targets, plus an MoE's balancing loss (lm_objective.cpp)
//   dpo      DPO on preference pairs against a frozen reference (dpo.cpp)
//   distill  cross-entropy mixed with the KL from a frozen teacher (distill.cpp)
//   grpo     GRPO on completions sampled from the policy and scored (grpo.cpp)
//   ppo      PPO with a critic on such completions (ppo_objective.cpp, ppo.cpp, critic.cpp)
// A step asks the objective for its micro-batches' units (target tokens, pairs), sums them over the
// ranks into N, and minimises sum_m loss_m * units_m / N, loss_m being micro-batch m's mean loss
// over its units; the objective then reports the step's metrics.
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "nanoformer/data/batch.h"
#include "nanoformer/models/decoder_lm.h"
#include "nanoformer/train/train_config.h"

namespace nf::train {

// What a step or a validation pass logs beside the loss: metrics.jsonl's fields (TRL's and
// MiniMind's names) and a few words for the progress line.
struct ObjectiveMetrics {
  std::vector<std::pair<std::string, double>> fields;
  std::string status;   // e.g. "margin 0.120 acc 0.75" (the trainer adds loss, lr and speed)
  std::string warning;  // once, when the run looks wrong (DPO: a policy that still equals its reference)
};

// A micro-batch of the step: its units (what its loss is a mean over) and target tokens.
struct MicroBatchSize {
  double units = 0;
  int64_t tokens = 0;
};

// Micro-batch m's loss: the mean over its units, with gradient; aux (undefined, or a scalar) is
// added with weight 1 / (micro-batches x ranks): an MoE's load-balancing loss.
struct MicroBatchLoss {
  Tensor loss, aux;
};

// The models and data an objective works on, fixed for the run once the trainer has built them.
struct ObjectiveInputs {
  models::DecoderLM* policy = nullptr;     // the model being trained
  models::DecoderLM* reference = nullptr;  // the frozen reference (needs_reference), or null: LoRA's adapters off
  const data::BatchSource* train = nullptr;      // the training batches (null for objectives that sample their own)
};

class TrainingObjective {
 public:
  virtual ~TrainingObjective() = default;

  // Rows of a micro-batch (the memory check's batch): batch_size, 2 x batch_size of DPO's pairs, ...
  virtual int64_t rows_per_batch() const;
  // Whether the training data are the run's files as batches (false: the objective reads its own),
  // and whether those are preference pairs (data/sft_data.h: chosen and rejected rows).
  virtual bool reads_batches() const { return true; }
  virtual bool reads_pairs() const { return false; }
  // Whether a frozen copy of the starting model is needed (with LoRA, the adapters off serve instead).
  virtual bool needs_reference() const { return false; }
  // Loads what the objective needs beside the policy (a teacher), checked against it; before the
  // run's directory is made, so a bad option leaves nothing behind.
  virtual void prepare(const models::DecoderLM& policy) {}
  // State of its own beside a training checkpoint (PPO's critic and its optimizer): resume is told
  // the checkpoint a resumed run starts from (before prepare), save the one about to be written
  // (step `step`; before it, so that a checkpoint never lacks its file), on the root rank.
  virtual void resume(const std::string& checkpoint, int64_t step) {}
  virtual void save(const std::string& checkpoint, int64_t step) const {}
  void bind(const ObjectiveInputs& inputs) { in_ = inputs; }
  // The "objective: ..." line of the run's description ("" for plain cross-entropy) and, for
  // objectives that read their own data, the "data: ..." line's text.
  virtual std::string describe() const { return ""; }
  virtual std::string describe_data() const { return ""; }

  // Step `step`'s micro-batches (read or sampled), in order; then loss(m) for each.
  virtual std::vector<MicroBatchSize> begin_step(int64_t step);
  virtual MicroBatchLoss loss(size_t m) = 0;
  // The step's metrics, from the micro-batches' losses since begin_step.
  virtual ObjectiveMetrics end_step() { return {}; }

  // Validation (eval mode, no gradient): a batch's loss as (sum, weight), then the pass's metrics.
  // The default is the token-weighted cross-entropy, reported with its perplexity.
  virtual void begin_validation() {}
  virtual std::pair<double, double> eval_loss(const data::Batch& batch);
  virtual ObjectiveMetrics end_validation(double loss);
  // Whether the next step's loss is a function of the checkpointed state (false: sampled rollouts),
  // so that a checkpoint can record it and a resume check it.
  virtual bool next_loss_is_reproducible() const { return true; }

 protected:
  explicit TrainingObjective(const TrainConfig& config) : config_(config) {}
  models::DecoderLM& policy() const { return *in_.policy; }
  // The batches of the current step (begin_step's default reads them).
  std::vector<data::Batch> batches_;
  const TrainConfig& config_;
  ObjectiveInputs in_;
};

// The objective of config.objective; config must outlive it.
std::unique_ptr<TrainingObjective> make_objective(const TrainConfig& config);

// Each objective's maker, in its own file.
std::unique_ptr<TrainingObjective> make_lm_objective(const TrainConfig& config);
std::unique_ptr<TrainingObjective> make_dpo_objective(const TrainConfig& config);
std::unique_ptr<TrainingObjective> make_distill_objective(const TrainConfig& config);
std::unique_ptr<TrainingObjective> make_grpo_objective(const TrainConfig& config);
std::unique_ptr<TrainingObjective> make_ppo_objective(const TrainConfig& config);

}  // namespace nf::train
