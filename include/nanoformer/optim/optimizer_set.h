#pragma once
// The optimizers of a training run, built from one JSON-able OptimizerConfig and stepped together:
//   sgd, adam, adamw   one optimizer over default_param_groups (decay on >= 2-D parameters only)
//   muon               Muon for the block matrices, AdamW for the rest (muon_param_groups)
//   nanochat           nanochat's preset (nanochat_param_groups): AdamW (0.8, 0.95, eps 1e-10)
//                      for the head, embeddings and vectors, Muon for the block matrices
// Its state (every optimizer's buffers, per-parameter and total step counts) is a state dict of
// named tensors for the checkpoint, restored exactly: a resumed run steps bit-identically.
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "nanoformer/nn/module.h"
#include "nanoformer/optim/optimizer.h"

namespace nf::optim {

struct OptimizerConfig {
  std::string name = "adamw";      // "sgd", "adam", "adamw", "muon", "nanochat"
  double lr = 1e-3;                // sgd / adam / adamw; muon's AdamW groups
  double weight_decay = 0.0;       // on >= 2-D parameters (muon: Muon's decoupled decay too; nanochat:
                                   // AdamW's embedding and head groups, as 003)
  double beta1 = 0.9, beta2 = 0.95, eps = 1e-8;  // adam / adamw; muon's AdamW
  double momentum = 0.9;           // sgd
  bool nesterov = false;           // sgd
  double embedding_lr = 0.2, unembedding_lr = 0.004, matrix_lr = 0.02;  // nanochat; matrix_lr: muon too
  double vector_lr = 0.005;        // nanochat: 1-D parameters (norm gains, biases)
  double muon_momentum = 0.95;     // muon / nanochat
  bool muon_nesterov = true;       // muon / nanochat
};

// The weight decay a preset gets when none is asked for (`nanoformer train` without --weight-decay):
// 0.1 for sgd, adam and adamw (nanoGPT's); 0 for muon and nanochat, as 003's setup_optimizers
// (its AdamW groups decay by 0, its Muon not at all).
double default_weight_decay(const std::string& optimizer_name);
// Throws nf::Error naming the first bad key and its value.
void validate_optimizer_config(const OptimizerConfig& config, const std::string& source = "optimizer");
// Every key (pretty-printed); optimizer_config_from_json gives it back.
std::string optimizer_config_to_json(const OptimizerConfig& config);
// Keys absent keep their defaults; an unknown key (with the nearest known spelling), a wrong type
// or a bad value is an nf::Error prefixed by `source` (a path, a flag).
OptimizerConfig optimizer_config_from_json(const std::string& text, const std::string& source = "optimizer");

class OptimizerSet {
 public:
  // Throws nf::Error naming a bad option, or saying that the model has nothing to train.
  OptimizerSet(const OptimizerConfig& config, nn::Module& model);

  void step();
  void zero_grad();
  // Every group of every optimizer: lr = initial_lr x factor.
  void set_lr_factor(double factor);
  // Every trained parameter, each once (for gradient clipping).
  std::vector<Tensor> parameters() const;
  // One line per group: optimizer, group, tensors and values, lr, weight decay.
  std::string describe() const;
  const OptimizerConfig& config() const { return config_; }
  const std::vector<std::unique_ptr<Optimizer>>& optimizers() const { return optimizers_; }

  // "<optimizer>.<group>.<parameter>.<slot>" (f32, the parameter's shape; slot as torch names it),
  // "<optimizer>.<group>.<parameter>.step" and "<optimizer>.steps" (i64 scalars), e.g.
  // "muon.matrices.layers.0.attention.wq.weight.momentum_buffer".
  nn::StateDict state_dict() const;
  // The same names, each slot's value given by gather(optimizer, group, index, held slot: undefined
  // when never used) in a fixed order on every rank; names it returns undefined for are left out.
  // ZeRO-1 gathers the sharded slots to rank 0 through it (optim/zero_sharding.h).
  using SlotGather = std::function<Tensor(const Optimizer&, size_t group, size_t index, const Tensor& slot)>;
  nn::StateDict state_dict(const SlotGather& gather) const;
  // Restores exactly what state_dict gave; one nf::Error lists every missing, unexpected,
  // mis-shaped and wrong-dtype name (nothing is changed then).
  void load_state_dict(const nn::StateDict& state);

 private:
  std::string param_name(const Tensor& p) const;

  OptimizerConfig config_;
  std::vector<std::unique_ptr<Optimizer>> optimizers_;
  std::map<const TensorImpl*, std::string> names_;  // every parameter's dotted name
};

}  // namespace nf::optim
