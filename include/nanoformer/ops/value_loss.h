#pragma once
// PPO's clipped value loss (the critic's), as TRL's PPOTrainer (trl v0.29.1,
// trl/experimental/ppo/ppo_trainer.py) and MiniMind's train_ppo.py (jingyaogong/minimind at d65ef2c)
// write it, over the value mask m of B responses padded to T tokens:
//   v_clip = clamp(v, old - c, old + c)
//   loss   = 0.5 sum m max((v - R)^2, (v_clip - R)^2) / max(sum m, 1)
// with v the critic's values now, old its values when the responses were sampled and R the returns
// (GAE's advantages + old). Only v gets a gradient: (v - R) where the unclipped term is the larger,
// (v_clip - R) [old - c <= v <= old + c] where the clipped one is, half each on a tie (torch.max).
#include "nanoformer/core/tensor.h"

namespace nf {

struct ValueLoss {
  Tensor loss;               // (), differentiable w.r.t. values
  double clip_fraction = 0;  // share of the masked tokens whose clipped term is the larger (TRL's vf_clipfrac)
};

// values, old_values, returns, mask: (B, T) of one floating dtype; cliprange >= 0.
ValueLoss value_loss(const Tensor& values, const Tensor& old_values, const Tensor& returns, const Tensor& mask,
                     double cliprange);

}  // namespace nf
