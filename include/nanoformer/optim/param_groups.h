#pragma once
// Which parameters an optimizer trains, in which groups, at which learning rate and weight decay.
// Only parameters with requires_grad are taken (a frozen base under LoRA stays out), each once
// (a tied matrix is one tensor); groups that would be empty are dropped.
//
//   default_param_groups   nanoGPT's configure_optimizers rule: "decay" = every parameter with
//                          >= 2 dims (matrices and embeddings), "no_decay" = biases, norm gains and
//                          every other 1-D or 0-D tensor.
//   muon_param_groups      Muon for the block matrices (2-D parameters under "layers."), AdamW for
//                          the rest by the rule above.
//   nanochat_param_groups  nanochat's setup_optimizers (003) on DecoderLM's names:
//     group        parameters                                  optimizer  lr
//     unembedding  output.weight (tok_embeddings.weight, tied)  AdamW      unembedding_lr (d/768)^-0.5
//     embedding    tok_embeddings.weight, pos_embeddings.weight AdamW      embedding_lr (d/768)^-0.5
//     vectors      every other parameter (norm gains, biases)   AdamW      vector_lr, no decay
//     matrices     the 2-D parameters under "layers."           Muon       matrix_lr
//   AdamW there with betas (0.8, 0.95), eps 1e-10 and weight_decay (003: 0); d = the embedding width.
//   nanochat's own GPT has no 1-D parameters (parameter-free norms, no biases) and is never tied;
//   see docs/training.md for the choices made for them here.
#include <string>
#include <vector>

#include "nanoformer/nn/module.h"
#include "nanoformer/optim/optimizer.h"

namespace nf::optim {

std::vector<ParamGroup> default_param_groups(const nn::Module& model, double lr, double weight_decay);

// Groups for the two optimizers of a Muon run.
struct HybridParamGroups {
  std::vector<ParamGroup> adamw;
  std::vector<ParamGroup> muon;
};

// Muon (matrix_lr, weight_decay) for the block matrices; AdamW groups at adamw_lr for the rest
// ("decay" with weight_decay, "no_decay").
HybridParamGroups muon_param_groups(const nn::Module& model, double adamw_lr, double matrix_lr, double weight_decay);

struct NanochatLearningRates {
  double embedding_lr = 0.2;
  double unembedding_lr = 0.004;
  double matrix_lr = 0.02;
  double vector_lr = 0.005;    // ours: nanochat's lr for its per-layer residual scalars (0.5 x 0.01)
  double weight_decay = 0.0;   // AdamW's embedding and unembedding groups, as 003
};

// Throws nf::Error when the model has no tok_embeddings.weight (the preset reads DecoderLM's names).
HybridParamGroups nanochat_param_groups(const nn::Module& model, const NanochatLearningRates& rates);

// The AdamW learning-rate scale of nanochat's preset: (d_model / 768)^-0.5.
double nanochat_lr_scale(int64_t d_model);

}  // namespace nf::optim
