#pragma once
// PPO's critic (value model), as MiniMind's CriticModel (jingyaogong/minimind at d65ef2c,
// trainer/train_ppo.py): a copy of the policy's model whose head is replaced by a Linear(dim, 1)
// over the final norm's output; TRL's PPO likewise trains a separate value model with a one-output
// score head. Its parameters: model.<DecoderLM names> (the model's own head frozen and unused) and
// value_head.{weight, bias}. It trains with an optimizer of its own, saved beside the policy's
// training checkpoint DIR/ckpt_N.safetensors as DIR/ckpt_N.critic.safetensors:
//   tensors  "critic/<name>"            the critic's parameters
//            "critic_optimizer/<name>"  its optimizer's state (OptimizerSet::state_dict)
//            "rollout/<name>"           the run's current rollout (train/ppo_objective.cpp), so that a
//                                       resumed run continues it
//   metadata "format": "nanoformer-ppo-critic", "step", "ppo_state" (the objective's counters, JSON),
//            "checksums" (every tensor's XXH3-64)
// read strictly: every name present and of its shape, every checksum matching, the step the policy's.
#include <cstdint>
#include <memory>
#include <string>

#include "nanoformer/models/decoder_lm.h"
#include "nanoformer/nn/linear.h"
#include "nanoformer/optim/optimizer_set.h"

namespace nf::train {

class Critic : public nn::Module {
 public:
  // A copy of `policy` (its config and current weights), the value head drawn from gen.
  Critic(const models::DecoderLM& policy, Generator& gen);
  // The value of every position (B, T) of ids (B, T): V(ids[:, : t + 1]).
  Tensor values(const Tensor& ids);

  std::shared_ptr<models::DecoderLM> model;
  std::shared_ptr<nn::Linear> value_head;
};

// DIR/ckpt_N.critic.safetensors for DIR/ckpt_N.safetensors.
std::string critic_path(const std::string& checkpoint);
// What a PPO run keeps beside its critic: its rollout's tensors and its counters.
struct PpoRunState {
  nn::StateDict rollout;
  std::string counters = "{}";
};
void save_critic(const std::string& path, const Critic& critic, const optim::OptimizerSet& optimizer, int64_t step,
                 const PpoRunState& run = {});
// Loads what save_critic wrote into critic and optimizer and returns the run state; an nf::Error
// naming the file for one that is missing, of another format, damaged, of another step or shape.
PpoRunState load_critic(const std::string& path, Critic& critic, optim::OptimizerSet& optimizer, int64_t step);

}  // namespace nf::train
