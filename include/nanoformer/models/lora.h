#pragma once
// LoRA on a whole model: adapters (nn/lora.h) on the Linear layers of every TransformerBlock that
// the targets name, every other parameter frozen, and the adapters merged back into the weights.
// Targets name a layer by its role, whatever the architecture calls it:
//   q, k, v, o        attention's q_proj, k_proj, v_proj, o_proj (self- and cross-attention)
//   gate, up, down    a SwiGLU MLP's w1, w3, w2 (LLaMA / MiniMind: gate_proj, up_proj, down_proj)
//   fc, proj          a two-layer MLP's first and second Linear (GPT-2's c_fc / c_proj, nanochat's
//                     c_fc / c_proj, the 001/004 FFN's linear1 / linear2)
// MLP roles reach every expert (routed and shared) of an MoE block; the router, the embeddings, the
// norms and the head are never adapted. State-dict names keep the base's and add PEFT's
// ("layers.0.attn.q_proj.lora_A.weight"), so a base checkpoint loads into an adapted model.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "nanoformer/core/generator.h"
#include "nanoformer/core/quant_type.h"
#include "nanoformer/models/model.h"
#include "nanoformer/nn/linear.h"

namespace nf::models {

struct LoRAOptions {
  int64_t rank = 8;      // r >= 1
  double alpha = 16.0;   // > 0; updates are scaled by alpha / r
  double dropout = 0.0;  // in [0, 1): on each adapter's input, in training
  std::vector<std::string> targets{"q", "k", "v", "o"};
  // QLoRA: the frozen base's Linear weights held block-quantised in this type (q8_0, q4_0, ...;
  // models/quantize.h) while the adapters train over them; embeddings, head and norms stay dense.
  // Merging folds the adapters into the dequantised base.
  std::optional<QuantType> base_type = {};
};

// The target names above, in that order.
const std::vector<std::string>& lora_target_names();
// "q,k,v,o" -> {"q", "k", "v", "o"}; an unknown or repeated name throws, listing the known ones.
std::vector<std::string> parse_lora_targets(const std::string& comma_separated);
// Throws nf::Error naming the value: rank < 1, alpha <= 0, dropout outside [0, 1), no targets, an
// unknown or repeated target.
void check_lora_options(const LoRAOptions& options);
// {"rank": 8, "alpha": 16.0, "dropout": 0.0, "targets": ["q", "k", "v", "o"]} and back (errors
// name `source` and the key at fault; unknown keys are refused).
std::string lora_options_to_json(const LoRAOptions& options);
LoRAOptions lora_options_from_json(const std::string& json_text, const std::string& source);

// Freezes every parameter of `model`, then puts a fresh adapter (A from `gen`, B = 0, so the
// forward is unchanged) on every targeted Linear. Returns the adapted layers' names
// ("layers.0.attn.q_proj", ...). Throws, before changing the model, on bad options, on a model that
// already has adapters and on a target that names no layer of this model (naming the roles it has).
std::vector<std::string> apply_lora(Model& model, const LoRAOptions& options, Generator& gen = default_generator());
// The parameters apply_lora(model, options) would add: rank x (in + out) per targeted Linear
// (INT64_MAX when that overflows), without adding them; throws as apply_lora on bad options.
int64_t lora_parameter_count(Model& model, const LoRAOptions& options);
bool has_lora(const Model& model);
// The adapter tensors, "<layer>.lora_A.weight" and "<layer>.lora_B.weight", in registration order.
std::vector<nn::NamedTensor> lora_parameters(const Model& model);
// W0 += (alpha / r) B A for every adapter, then removes the adapters and unfreezes every parameter:
// a plain model whose forward equals the adapted one. A quantised base comes out dense (dequantised). Throws when the model has no adapter.
void merge_lora(Model& model);

// While it lives, every adapter of `model` is off: the model computes its base's forward (a DPO
// reference at no memory cost, as PEFT's disable_adapter()); the destructor turns them back on.
class LoRAAdaptersOff {
 public:
  explicit LoRAAdaptersOff(Model& model);
  ~LoRAAdaptersOff();
  LoRAAdaptersOff(const LoRAAdaptersOff&) = delete;
  LoRAAdaptersOff& operator=(const LoRAAdaptersOff&) = delete;

 private:
  std::vector<nn::Linear*> layers_;
};

}  // namespace nf::models
