#pragma once
// The training loop of `nanoformer train`, one object per run:
//   Trainer t(config);  t.run(&stop_flag);
// The constructor builds the model (fresh from a preset or config, from --init-from, or from the
// newest checkpoint of out_dir when resuming), the data and the optimizer, after checking that the
// run fits in memory. Each step t (0-based):
//   lr = schedule(t); for each of the objective's micro-batches m (batch index t * grad_accum + m):
//     loss_m = token_loss_m * n_m / N + aux_loss_m / grad_accum    (n_m its units, N the step's)
//     backward(loss_m)                     (so the gradient is that of the whole step's mean loss)
//   clip the global gradient norm; optimizer step (fp16: skipped when a gradient is not finite)
// The loss of a micro-batch, what it is a mean over and what a step logs beside it are the
// objective's (train/objective.h: cross-entropy, DPO, distillation, GRPO).
// Validation every eval_every steps, a checkpoint every save_every steps, at the end, and when
// the stop flag is raised (Ctrl-C); metrics.jsonl gets one line per step and per validation.
// Everything a step does is a function of the checkpointed state, so a resumed run continues
// bit for bit as the uninterrupted one.
// Data-parallel (a communicator of N ranks, dist/communicator.h): each rank trains on its rows of
// every batch (sharded_batches.h), N is all-reduced first and the gradients summed across ranks
// in buckets overlapping backward (dist/gradient_buckets.h), only on the last micro-batch, so
// the step's gradient is that of one process at batch N x B; clipping and the optimizer then see
// the same gradient on every rank (ZeRO-1: each updates its slice, zero_sharding.h). Rank 0 alone
// writes metrics and checkpoints and shows progress.
#include <atomic>
#include <cstdint>
#include <fstream>
#include <memory>
#include <optional>
#include <string>

#include "nanoformer/data/data.h"
#include "nanoformer/dist/communicator.h"
#include "nanoformer/dist/gradient_buckets.h"
#include "nanoformer/models/decoder_lm.h"
#include "nanoformer/optim/loss_scaler.h"
#include "nanoformer/optim/optimizer_set.h"
#include "nanoformer/optim/zero_sharding.h"
#include "nanoformer/train/objective.h"
#include "nanoformer/train/train_checkpoint.h"
#include "nanoformer/train/train_config.h"

namespace nf::train {

// Throws nf::Error, with the estimate's parts and the memory available, when training `config` at
// batch x context cannot fit. lora_parameters < 0: every weight trains; >= 0: LoRA, the base frozen
// (its weights and activations only) and this many adapter parameters trained (value, gradient,
// two moments each).
void check_training_memory(const models::DecoderLMConfig& config, int64_t batch, int64_t context,
                           int64_t available_bytes, int64_t lora_parameters = -1);

struct StepResult {
  double loss = 0, token_loss = 0, aux_loss = 0;  // means over the step's micro-batches (token_loss: the
                                                  // objective's, e.g. DPO's mean over the step's pairs)
  double lr = 0, grad_norm = 0;
  int64_t tokens = 0;      // target tokens
  bool skipped = false;    // fp16: a non-finite gradient, no update
  double comm_wait_seconds = 0;  // blocked waiting for the gradient all-reduce (data-parallel)
  ObjectiveMetrics metrics;  // the objective's: DPO's rewards, distillation's parts, GRPO's rewards and KL
};

class Trainer {
 public:
  // `data` replaces config.data's files when given (a program's own batches; tests). `comm` (null:
  // one process) must have config.ranks ranks; it outlives the trainer.
  explicit Trainer(TrainConfig config, data::TrainingData data = {}, dist::Communicator* comm = nullptr);
  ~Trainer();

  enum class Outcome { finished, stopped };
  // Trains until schedule.total_steps, or until *stop becomes true (then writes a checkpoint).
  Outcome run(const std::atomic<bool>* stop = nullptr);
  // One optimizer step (the loop's body without logging and checkpoints).
  StepResult train_step();
  // Mean validation loss over eval_batches batches (token-weighted; DPO: pair-weighted), the
  // objective's metrics of the pass into *metrics when given.
  double evaluate(ObjectiveMetrics* metrics = nullptr);
  // Writes the checkpoint of the current step into out_dir and prunes old ones; returns its path.
  std::string save();

  models::DecoderLM& model() { return *model_; }
  const TrainConfig& config() const { return config_; }
  const TrainState& state() const { return state_; }
  // What the run is: model, parameters, data, optimizer groups (printed at the start).
  std::string describe() const;

 private:
  // The fresh (or --init-from) model, its weights drawn from `gen`, and the checks of its memory.
  void start_fresh(Generator& gen);
  // The model a fresh run starts from (the preset or config with weights from `gen`, or init_from),
  // with the model overrides; unchecked.
  std::shared_ptr<models::DecoderLM> build_start_model(Generator& gen) const;
  void resume_from(const std::string& checkpoint);
  void log_metrics(const std::string& json_line);
  // Forward and backward of step t's micro-batches, each loss weighted by its share of the step's
  // units; adds their losses and the step's tokens to r.
  void backward(int64_t t, StepResult& r);

  // The loss of the next step's first micro-batch in eval mode (all ranks' rows), recorded in each
  // checkpoint and checked again after a resume, before the first step.
  double next_batch_loss();
  void check_next_batch_loss();

  bool is_root() const { return comm_->rank() == 0; }
  // Data-parallel: throws nf::Error unless every rank holds the same parameters (a hash compared).
  void check_replicas_agree();

  TrainConfig config_;
  std::unique_ptr<dist::Communicator> own_comm_;  // one process, when none is given
  dist::Communicator* comm_;
  std::shared_ptr<models::DecoderLM> model_;
  std::unique_ptr<TrainingObjective> objective_;
  // The objective's frozen reference, the starting model (DPO; GRPO with a KL term); null without
  // one or with LoRA (the adapters off).
  std::shared_ptr<models::DecoderLM> reference_;
  data::TrainingData data_;
  std::unique_ptr<optim::OptimizerSet> optimizer_;
  std::unique_ptr<optim::DynamicLossScaler> scaler_;  // fp16 only
  std::unique_ptr<optim::ZeroSharding> zero_;         // --zero 1 only
  std::unique_ptr<dist::GradientBuckets> buckets_;
  TrainState state_;
  std::string resumed_from_;
  std::vector<std::string> resume_notes_;  // what a resume changed (a moved file, a longer run)
  std::string metrics_path_;
  std::ofstream metrics_;
};

}  // namespace nf::train
