// The choice of objective, and what most objectives share: micro-batches read from the training
// batches, validated by token-weighted cross-entropy.
#include "nanoformer/train/objective.h"

#include <cmath>
#include <cstdio>

#include "nanoformer/core/error.h"

namespace nf::train {

std::unique_ptr<TrainingObjective> make_objective(const TrainConfig& config) {
  switch (config.objective) {
    case Objective::lm: return make_lm_objective(config);
    case Objective::dpo: return make_dpo_objective(config);
    case Objective::distill: return make_distill_objective(config);
    case Objective::grpo: return make_grpo_objective(config);
    case Objective::ppo: return make_ppo_objective(config);
  }
  NF_FAIL("train: unknown objective ", static_cast<int>(config.objective));
}

int64_t TrainingObjective::rows_per_batch() const { return config_.data.batch_size; }

// grad_accum batches of indices step x grad_accum + m; units: their target tokens
std::vector<MicroBatchSize> TrainingObjective::begin_step(int64_t step) {
  NF_CHECK(in_.train, "train: objective ", objective_name(config_.objective), " has no training batches");
  batches_.clear();
  std::vector<MicroBatchSize> sizes;
  for (int64_t m = 0; m < config_.grad_accum; ++m) {
    batches_.push_back(in_.train->batch(static_cast<uint64_t>(step * config_.grad_accum + m)));
    const int64_t tokens = batches_.back().target_tokens;
    sizes.push_back({static_cast<double>(tokens), tokens});
  }
  return sizes;
}

std::pair<double, double> TrainingObjective::eval_loss(const data::Batch& b) {
  const models::LMOutput out = policy().forward(b.inputs, b.targets);
  return {out.token_loss.item() * static_cast<double>(b.target_tokens), static_cast<double>(b.target_tokens)};
}

ObjectiveMetrics TrainingObjective::end_validation(double loss) {
  char text[64];
  std::snprintf(text, sizeof text, "perplexity %.2f", std::exp(loss));
  return {{{"val_ppl", std::exp(loss)}}, text, ""};
}

}  // namespace nf::train
