#pragma once
// A decoder LM's weights moved between the two RoPE layouts that rotate the same pairs by the same
// angles: `interleaved` rotates (x[2i], x[2i+1]), `half` rotates (x[i], x[i + d/2]) (d = head_dim),
// both by t theta^(-2i/d). Reordering the rows of q_proj and k_proj (weights and biases) within every
// head, half row i <- interleaved row 2i and half row i + d/2 <- interleaved row 2i + 1 (transformers'
// LLaMA conversion does the same), makes the other layout compute what the model computed: q.k sums
// the same products. Internal to src/formats.
#include "nanoformer/models/config/model_config.h"
#include <vector>

#include "nanoformer/nn/module.h"

namespace nf::formats {

// `state` of a model of `config` as a model with rope_layout `to` needs it (as is when the layouts
// agree). Throws unless both layouts are interleaved or half.
nn::StateDict with_rope_layout(nn::StateDict state, const models::DecoderLMConfig& config, RopeLayout to);
// The same for block-quantised weights (Module::named_quantized): a row's blocks move with the row,
// so reordering the quantised rows equals quantising the reordered ones.
std::vector<nn::NamedQuantized> with_rope_layout(std::vector<nn::NamedQuantized> weights,
                                                 const models::DecoderLMConfig& config, RopeLayout to);

}  // namespace nf::formats
