#pragma once
// Quantising a decoder LM's weights in place, with llama.cpp's choices (llama-quant.cpp): every
// Linear weight of the blocks in `type`; the head (or, when tied, the token embedding that serves
// as the head) in Q6_K for every type but Q8_0, as llama.cpp's default output type; norms, biases,
// position tables, MoE routers and LoRA adapters stay dense. A weight whose rows are not whole
// blocks of its type falls back as llama.cpp does: Q4_K to Q5_0, Q6_K to Q8_0, then F16.
#include <optional>
#include <string>
#include <vector>

#include "nanoformer/core/quant_type.h"
#include "nanoformer/models/decoder_lm.h"

namespace nf::models {

struct QuantizeSpec {
  QuantType type = QuantType::q8_0;
  std::optional<QuantType> output_type = {};     // the head; f32 keeps it dense (llama.cpp's --leave-output-tensor)
  std::optional<QuantType> embedding_type = {};  // the token embedding when untied; default `type`
};

struct QuantizedWeight {
  std::string name;  // dotted, as state_dict names it
  QuantType type;    // f32: left dense
};

// Quantises `model`'s weights in place; returns what each 2-D weight became, in module order.
std::vector<QuantizedWeight> quantize_weights(DecoderLM& model, const QuantizeSpec& spec);
// Every quantised weight of `model` made dense again (f32, its blocks dequantised), in place.
void dequantize_weights(nn::Module& model);
// Throws naming `what`, the model's first quantised weights and `advice` when it holds any: for
// writers of formats that store dense weights only.
void check_dense(const nn::Module& model, const std::string& what, const std::string& advice);
// The type llama.cpp gives the head for a model quantised to `type` (Q6_K, or Q8_0 for Q8_0).
QuantType default_output_type(QuantType type);

}  // namespace nf::models
