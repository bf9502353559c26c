#pragma once
// LoRA (reference 000, section 4.5; Hu et al. 2021): a Linear whose pretrained weight W0 stays
// frozen gains a trained low-rank update,
//   h = W0 x + b + (alpha / r) B A dropout(x),   A (r, in), B (out, r).
// The adapter lives on nn::Linear itself (Linear::add_lora / merge_lora, defined in src/nn/lora.cpp),
// so every Linear of every model can carry one and the names come out as PEFT's for its LoRA Linear
// (without PEFT's adapter name): "<layer>.weight" and "<layer>.bias" stay the base's, so a pretrained
// checkpoint loads unchanged, and "<layer>.lora_A.weight", "<layer>.lora_B.weight" are added.
//   lora_A: kaiming-uniform as PEFT (a = sqrt(5), = torch.nn.Linear's U(-1/sqrt(in), 1/sqrt(in)));
//   lora_B: zeros, so an adapted layer starts equal to its base.
// models/lora.h puts adapters on the layers of a whole model, saves and loads adapter-only files and
// merges them.
#include <cstdint>

#include "nanoformer/nn/linear.h"

namespace nf::nn {

struct LoRAConfig {
  int64_t rank = 8;      // r >= 1
  double alpha = 16.0;   // > 0; the update is scaled by alpha / r
  double dropout = 0.0;  // in [0, 1): dropout on the adapter's input (training only)
};

// Throws nf::Error naming the value when rank < 1, alpha <= 0 or dropout is outside [0, 1).
void check_lora_config(const LoRAConfig& config);

}  // namespace nf::nn
