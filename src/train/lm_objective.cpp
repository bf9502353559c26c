// The lm objective: each micro-batch's mean cross-entropy over its target tokens, plus an MoE's
// load-balancing loss.
#include "nanoformer/train/objective.h"

namespace nf::train {
namespace {

class LmObjective final : public TrainingObjective {
 public:
  explicit LmObjective(const TrainConfig& config) : TrainingObjective(config) {}

  MicroBatchLoss loss(size_t m) override {
    const data::Batch& b = batches_[m];
    const models::LMOutput out = policy().forward(b.inputs, b.targets);
    return {out.token_loss, out.aux_loss};
  }
};

}  // namespace

std::unique_ptr<TrainingObjective> make_lm_objective(const TrainConfig& config) {
  return std::make_unique<LmObjective>(config);
}

}  // namespace nf::train
