#pragma once
// The options only nanochat's current GPT uses, which no format but ours and nanochat's holds: each
// other writer refuses a model that sets one, naming it. Internal to src/formats.
#include <string>

#include "nanoformer/models/config/model_config.h"

namespace nf::formats {

// The first of attention_scale, value_embeddings, residual_scalars, smear, backout that `c` sets, "" when none.
inline std::string nanochat_option_set(const models::DecoderLMConfig& c) {
  if (c.attention_scale > 0) return "attention_scale";
  if (c.value_embeddings) return "value_embeddings";
  if (c.residual_scalars) return "residual_scalars";
  if (c.smear) return "smear";
  if (c.backout) return "backout";
  return "";
}

}  // namespace nf::formats
