#pragma once
// Running a trained decoder LM at positions it was not built for, without touching its weights:
// a longer context (max_seq_len) and, for RoPE, a scaling chosen at evaluation time (position
// interpolation, NTK-aware or YaRN, nn/rotary_position.h;
// YaRN's original context is the model's max_seq_len unless its config names one). What may be extended:
//   learned      no: positions past the learned table have no embedding (an error names the table);
//   sinusoidal   yes: the encoding is a formula, its table is recomputed for the longer context;
//   rope         yes: the cos/sin tables are recomputed (with the scaling asked for);
//   alibi, t5_bias, xl_relative, none: yes, nothing in them depends on max_seq_len.
// The model is rebuilt from its config with those keys changed and its state dict is loaded
// into it (the sinusoidal table excepted), so the result is exactly the trained model with
// longer tables; while rebuilding, two copies of the weights are held.
#include <cstdint>
#include <memory>
#include <optional>

#include "nanoformer/models/decoder_lm.h"

namespace nf::models {

struct ContextExtension {
  int64_t max_seq_len = 0;                                   // the context to reach; 0 or below the model's: the model's
  std::optional<nn::RopeScaling> rope_scaling = std::nullopt;  // unset: the model's own scaling
  double rope_factor = 1.0;                                  // the scale factor s (>= 1) of rope_scaling
};

// Throws nf::Error naming the value at fault when `model` cannot be run as `extension` asks: a
// context longer than a learned position table, a RoPE scaling on a model without RoPE, a factor
// below 1.
void check_context_extension(const DecoderLM& model, const ContextExtension& extension);

// `model` itself when nothing changes; else a new model in eval mode with the same weights whose
// positions reach extension.max_seq_len under the scaling asked for.
std::shared_ptr<DecoderLM> extend_context(const std::shared_ptr<DecoderLM>& model, const ContextExtension& extension);

}  // namespace nf::models
