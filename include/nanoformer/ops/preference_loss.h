#pragma once
// Direct preference optimisation losses (Rafailov et al. 2023; IPO: Azar et al. 2023), on the summed
// response log-probs of a batch of B pairs under the policy (pi) and the frozen reference (ref):
//   z_i = (pi_chosen_i - ref_chosen_i) - (pi_rejected_i - ref_rejected_i)
//   sigmoid: loss = mean_i -log sigmoid(beta z_i)          IPO: loss = mean_i (z_i - 1 / (2 beta))^2
//   rewards: chosen_i = beta (pi_chosen_i - ref_chosen_i), rejected_i = beta (pi_rejected_i - ref_rejected_i)
// as TRL's DPOTrainer.dpo_loss (loss_type "sigmoid", label_smoothing 0; "ipo"). TRL's trainer
// divides the log-probs by the response length before IPO; here both losses take the sums.
#include <string>

#include "nanoformer/core/tensor.h"

namespace nf {

enum class PreferenceLossKind { sigmoid, ipo };
// "sigmoid", "ipo"; parsing an unknown name throws listing them.
std::string preference_loss_name(PreferenceLossKind kind);
PreferenceLossKind preference_loss_from_name(const std::string& name);

struct DpoLoss {
  Tensor loss;                              // (), differentiable w.r.t. all four log-prob inputs
  Tensor chosen_rewards, rejected_rewards;  // (B), detached
};

// pi_chosen, pi_rejected, ref_chosen, ref_rejected: (B) f32/f64 of one dtype; beta > 0.
DpoLoss dpo_loss(const Tensor& pi_chosen, const Tensor& pi_rejected, const Tensor& ref_chosen,
                 const Tensor& ref_rejected, double beta, PreferenceLossKind kind = PreferenceLossKind::sigmoid);

}  // namespace nf
