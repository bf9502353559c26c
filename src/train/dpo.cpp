// DPO's forward on a batch of pairs (summed response log-probs of policy and reference, then the
// loss), and the dpo objective of training on them.
#include "nanoformer/train/dpo.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>

#include "nanoformer/autograd/grad_mode.h"
#include "nanoformer/core/error.h"
#include "nanoformer/models/lora.h"
#include "nanoformer/ops/elementwise.h"
#include "nanoformer/ops/indexing.h"
#include "nanoformer/ops/loss.h"
#include "nanoformer/ops/reduce.h"
#include "nanoformer/ops/view.h"
#include "nanoformer/train/objective.h"

namespace nf::train {

Tensor sequence_log_probs(const Tensor& logits, const Tensor& targets) {
  NF_CHECK(logits.dim() == 3 && targets.dim() == 2 && logits.size(0) == targets.size(0) &&
               logits.size(1) == targets.size(1),
           "sequence_log_probs: logits ", shape_str(logits.shape()), " and targets ", shape_str(targets.shape()),
           " are not (R, T, V) and (R, T)");
  const int64_t rows = logits.size(0), T = logits.size(1);
  // log p(target) = -cross_entropy, 0 where the target is ignored
  const Tensor token_nll = cross_entropy(logits.reshape({rows * T, logits.size(2)}), targets.reshape({rows * T}),
                                         data::kIgnoreIndex, Reduction::none);
  return neg(sum(token_nll.reshape({rows, T}), {1}));
}

void PreferenceMetrics::add(const DpoLoss& loss) {
  const int64_t n = loss.chosen_rewards.size(0);
  const Tensor chosen = loss.chosen_rewards.to(DType::f64), rejected = loss.rejected_rewards.to(DType::f64);
  const double total = static_cast<double>(pairs + n), w = static_cast<double>(n) / total;
  chosen_reward += (mean(chosen).item() - chosen_reward) * w;
  rejected_reward += (mean(rejected).item() - rejected_reward) * w;
  accuracy += (mean(gt(chosen, rejected).to(DType::f64)).item() - accuracy) * w;
  pairs += n;
}

namespace {

// The (R) summed log-probs of the batch's rows split into chosen (rows 0, 2, ...) and rejected (1, 3, ...).
std::pair<Tensor, Tensor> chosen_and_rejected(const Tensor& row_log_probs) {
  const Tensor pairs = row_log_probs.reshape({row_log_probs.size(0) / 2, 2});
  return {pairs.select(1, 0), pairs.select(1, 1)};
}

}  // namespace

Tensor reference_logits(models::DecoderLM& policy, models::DecoderLM* reference, const Tensor& inputs) {
  NoGradGuard no_grad;
  models::DecoderLM& ref = reference ? *reference : policy;
  const bool was_training = ref.is_training();
  std::optional<models::LoRAAdaptersOff> adapters_off;
  if (!reference) adapters_off.emplace(policy);
  ref.eval();
  Tensor logits = ref.forward(inputs).logits;
  ref.train(was_training);
  return logits;
}

DpoLoss dpo_batch_loss(models::DecoderLM& policy, models::DecoderLM* reference, const data::Batch& batch,
                              const DpoOptions& options) {
  NF_CHECK(batch.inputs.dim() == 2 && batch.inputs.size(0) % 2 == 0, "DPO: a batch of ",
           shape_str(batch.inputs.shape()), " is not rows of chosen/rejected pairs");
  const Tensor ref_row_log_probs = sequence_log_probs(reference_logits(policy, reference, batch.inputs), batch.targets);
  const auto [pi_chosen, pi_rejected] =
      chosen_and_rejected(sequence_log_probs(policy.forward(batch.inputs).logits, batch.targets));
  const auto [ref_chosen, ref_rejected] = chosen_and_rejected(ref_row_log_probs);
  const DType dtype = pi_chosen.dtype();
  return dpo_loss(pi_chosen, pi_rejected, ref_chosen.to(dtype), ref_rejected.to(dtype), options.beta, options.loss);
}

namespace {

// Each micro-batch's mean DPO loss over its pairs, weighted by its share of the step's pairs.
class DpoObjective final : public TrainingObjective {
 public:
  explicit DpoObjective(const TrainConfig& config) : TrainingObjective(config) {}

  int64_t rows_per_batch() const override { return 2 * config_.data.batch_size; }
  bool needs_reference() const override { return true; }
  bool reads_pairs() const override { return true; }
  std::string describe() const override {
    std::string line = "dpo, " + preference_loss_name(config_.dpo.loss) + " loss, beta " + number(config_.dpo.beta);
    return line + ", reference: " + (in_.reference ? "the starting model (a frozen copy)" : "the base (LoRA adapters off)");
  }

  std::vector<MicroBatchSize> begin_step(int64_t step) override {
    std::vector<MicroBatchSize> sizes = TrainingObjective::begin_step(step);
    for (size_t m = 0; m < sizes.size(); ++m) sizes[m].units = static_cast<double>(batches_[m].inputs.size(0) / 2);
    step_ = {};
    step_loss_ = 0;
    return sizes;
  }
  MicroBatchLoss loss(size_t m) override {
    const DpoLoss d = dpo_batch_loss(policy(), in_.reference, batches_[m], config_.dpo);
    const auto pairs = static_cast<double>(d.chosen_rewards.size(0));
    step_loss_ += (d.loss.item() - step_loss_) * pairs / static_cast<double>(step_.pairs + d.chosen_rewards.size(0));
    step_.add(d);
    return {d.loss, {}};
  }
  ObjectiveMetrics end_step() override {  // TRL's names
    ObjectiveMetrics out{{{"rewards/chosen", step_.chosen_reward},
                          {"rewards/rejected", step_.rejected_reward},
                          {"rewards/margins", step_.margin()},
                          {"rewards/accuracies", step_.accuracy}},
                         text("margin %.3f acc %.2f", step_.margin(), step_.accuracy),
                         ""};
    largest_reward_ = std::max({largest_reward_, std::fabs(step_.chosen_reward), std::fabs(step_.rejected_reward)});
    if (++steps_ == kStillSteps && largest_reward_ < 1e-6)
      out.warning = text("warning: DPO: after %lld steps the loss is still %.4f (%s) with zero rewards and margins: "
                         "the policy equals the reference, nothing it trains changes its log-probs (is --lr 0? are "
                         "the LoRA adapters' B still 0?)",
                         static_cast<long long>(kStillSteps), step_loss_,
                         config_.dpo.loss == PreferenceLossKind::sigmoid ? "ln 2" : "1 / (4 beta^2)");
    return out;
  }

  void begin_validation() override { validation_ = {}; }
  std::pair<double, double> eval_loss(const data::Batch& b) override {
    const DpoLoss d = dpo_batch_loss(policy(), in_.reference, b, config_.dpo);
    validation_.add(d);
    const auto pairs = static_cast<double>(b.inputs.size(0) / 2);
    return {d.loss.item() * pairs, pairs};
  }
  ObjectiveMetrics end_validation(double) override {
    return {{{"val_rewards/margins", validation_.margin()}, {"val_rewards/accuracies", validation_.accuracy}},
            text("margin %.4f, accuracy %.3f", validation_.margin(), validation_.accuracy),
            ""};
  }

 private:
  static constexpr int64_t kStillSteps = 5;  // a policy still equal to its reference after this many steps is reported
  template <class... Args>
  static std::string text(const char* format, Args... args) {
    char buf[400];
    std::snprintf(buf, sizeof buf, format, args...);
    return buf;
  }
  static std::string number(double x) { return text("%g", x); }

  PreferenceMetrics step_, validation_;
  double step_loss_ = 0, largest_reward_ = 0;  // the step's mean loss; the run's largest |reward|
  int64_t steps_ = 0;
};

}  // namespace

std::unique_ptr<TrainingObjective> make_dpo_objective(const TrainConfig& config) {
  return std::make_unique<DpoObjective>(config);
}

}  // namespace nf::train
