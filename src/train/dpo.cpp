// DPO's forward on a batch of pairs: summed response log-probs of policy and reference, then the loss.
#include "nanoformer/train/dpo.h"

#include <optional>

#include "nanoformer/autograd/grad_mode.h"
#include "nanoformer/core/error.h"
#include "nanoformer/models/lora.h"
#include "nanoformer/ops/elementwise.h"
#include "nanoformer/ops/indexing.h"
#include "nanoformer/ops/loss.h"
#include "nanoformer/ops/reduce.h"
#include "nanoformer/ops/view.h"

namespace nf::train {

Tensor sequence_log_probs(const Tensor& logits, const Tensor& targets) {
  NF_CHECK(logits.dim() == 3 && targets.dim() == 2 && logits.size(0) == targets.size(0) &&
               logits.size(1) == targets.size(1),
           "sequence_log_probs: logits ", shape_str(logits.shape()), " and targets ", shape_str(targets.shape()),
           " are not (R, T, V) and (R, T)");
  const int64_t rows = logits.size(0), T = logits.size(1);
  // log p(target) = -cross_entropy, 0 where the target is ignored
  const Tensor token_nll = cross_entropy(logits.reshape({rows * T, logits.size(2)}), targets.reshape({rows * T}),
                                         kIgnoreIndex, Reduction::none);
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

DpoLoss dpo_batch_loss(models::DecoderLM& policy, models::DecoderLM* reference, const Batch& batch,
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

}  // namespace nf::train
