// DPO's sigmoid and IPO losses over the pairs' log-prob margins, forward and backward side by side.
#include "nanoformer/ops/preference_loss.h"

#include "nanoformer/autograd/grad_mode.h"
#include "nanoformer/autograd/node.h"
#include "nanoformer/core/error.h"
#include "nanoformer/ops/elementwise.h"
#include "nanoformer/ops/reduce.h"
#include "ops/reduce_internal.h"

namespace nf {

std::string preference_loss_name(PreferenceLossKind kind) {
  return kind == PreferenceLossKind::ipo ? "ipo" : "sigmoid";
}

PreferenceLossKind preference_loss_from_name(const std::string& name) {
  if (name == "sigmoid") return PreferenceLossKind::sigmoid;
  if (name == "ipo") return PreferenceLossKind::ipo;
  NF_FAIL("unknown DPO loss \"", name, "\" (known: sigmoid, ipo)");
}

DpoLoss dpo_loss(const Tensor& pi_chosen, const Tensor& pi_rejected, const Tensor& ref_chosen,
                 const Tensor& ref_rejected, double beta, PreferenceLossKind kind) {
  const Tensor* inputs[] = {&pi_chosen, &pi_rejected, &ref_chosen, &ref_rejected};
  const char* names[] = {"pi_chosen", "pi_rejected", "ref_chosen", "ref_rejected"};
  for (int i = 0; i < 4; ++i) {
    NF_CHECK(inputs[i]->defined(), "dpo_loss: ", names[i], " is undefined");
    require_floating_input(*inputs[i], "dpo_loss");
    NF_CHECK(inputs[i]->dim() == 1 && inputs[i]->shape() == pi_chosen.shape() && inputs[i]->dtype() == pi_chosen.dtype(),
             "dpo_loss: ", names[i], " ", shape_str(inputs[i]->shape()), " ", dtype_name(inputs[i]->dtype()),
             " differs from pi_chosen ", shape_str(pi_chosen.shape()), " ", dtype_name(pi_chosen.dtype()),
             " (expects four (B) log-prob vectors of one dtype)");
  }
  NF_CHECK(pi_chosen.size(0) > 0, "dpo_loss: no pairs (B = 0)");
  NF_CHECK(beta > 0, "dpo_loss: beta must be > 0, got ", beta);
  const double pairs = static_cast<double>(pi_chosen.size(0));
  DpoLoss out;
  Tensor dz;  // dloss/dz_i for an upstream gradient of 1
  {
    NoGradGuard no_grad;
    out.chosen_rewards = mul(sub(pi_chosen, ref_chosen), beta);
    out.rejected_rewards = mul(sub(pi_rejected, ref_rejected), beta);
    const Tensor z = sub(sub(pi_chosen, ref_chosen), sub(pi_rejected, ref_rejected));
    if (kind == PreferenceLossKind::sigmoid) {
      // -log sigmoid(beta z) = softplus(-beta z);  d/dz = -beta sigmoid(-beta z)
      const Tensor minus_beta_z = mul(z, -beta);
      out.loss = mean(softplus(minus_beta_z));
      dz = mul(sigmoid(minus_beta_z), -beta / pairs);
    } else {
      // (z - 1 / (2 beta))^2;  d/dz = 2 (z - 1 / (2 beta))
      const Tensor gap = sub(z, 1.0 / (2.0 * beta));
      out.loss = mean(square(gap));
      dz = mul(gap, 2.0 / pairs);
    }
  }
  // z rises with pi_chosen and ref_rejected and falls with pi_rejected and ref_chosen
  autograd::record("dpo_loss", out.loss, {pi_chosen, pi_rejected, ref_chosen, ref_rejected},
                   [dz](const Tensor& g, const autograd::Node& n) {
                     const Tensor up = mul(dz, g), down = neg(up);
                     return std::vector<Tensor>{n.needs_input_grad(0) ? up : Tensor(),
                                                n.needs_input_grad(1) ? down : Tensor(),
                                                n.needs_input_grad(2) ? down : Tensor(),
                                                n.needs_input_grad(3) ? up : Tensor()};
                   });
  return out;
}

}  // namespace nf
