#pragma once
// Quantising a decoder LM's weights in place, with llama.cpp's choices (llama-quant.cpp at 0c1e570,
// llama_tensor_get_type). A plain type ("q8_0", "q4_k", ...) is pure: every Linear weight of the
// blocks in `type`; the head (or, when tied, the token embedding that serves as the head) in Q6_K
// for every type but Q8_0, as llama.cpp's default output type. A mix ("q4_k_m", "q3_k_s", ...,
// llama-quantize's names) gives some tensors more bits by role and layer, as llama-quantize does
// without an importance matrix (docs/quantisation.md, "Which weights get which type"). Norms,
// biases, position tables, MoE routers and LoRA adapters stay dense. A weight whose rows are not
// whole blocks of its type falls back as llama.cpp does: Q4_K to Q5_0, Q5_K to Q5_1, Q6_K to Q8_0,
// Q3_K to Q4_0, then F16.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "nanoformer/core/quant_type.h"
#include "nanoformer/models/decoder_lm.h"

namespace nf::models {

// llama-quantize's K mixes (llama_ftype MOSTLY_Q3_K_S ... MOSTLY_Q5_K_M); none: a pure type
enum class QuantMix { none, q3_k_s, q3_k_m, q4_k_s, q4_k_m, q5_k_s, q5_k_m };

struct QuantizeSpec {
  QuantType type = QuantType::q8_0;  // a mix's base type (q3_k, q4_k, q5_k)
  QuantMix mix = QuantMix::none;
  std::optional<QuantType> output_type = {};     // the head; f32 keeps it dense (llama.cpp's --leave-output-tensor)
  std::optional<QuantType> embedding_type = {};  // the token embedding when untied; default `type`
};

// The spec of a name as llama-quantize and --type spell it, either case: a mix ("q4_k_m", "Q5_K_S")
// or a weight type ("q8_0", "q4_k", "f16"; pure). Throws naming the text and the known names, and
// refusing activation-only types (q8_1, q8_k), f64 and types without kernels.
QuantizeSpec quantize_spec(std::string_view name);
// The spec's name: the mix's ("q4_k_m") or the type's.
std::string quantize_spec_name(const QuantizeSpec& spec);
// llama.cpp's llama_ftype of the spec, as llama-quantize records it in general.file_type (Q4_K_M:
// 15, ...; a pure K type the mix that uses it throughout: q4_k -> Q4_K_S 14, q5_k -> Q5_K_S 16,
// q3_k -> Q3_K_S 11).
uint32_t llama_file_type(const QuantizeSpec& spec);

struct QuantizedWeight {
  std::string name;  // dotted, as state_dict names it
  QuantType type;    // f32: left dense
};

// Quantises `model`'s weights in place; returns what each 2-D weight became, in module order.
std::vector<QuantizedWeight> quantize_weights(DecoderLM& model, const QuantizeSpec& spec);
// What quantize_weights would make each 2-D weight, quantising nothing (llama-quantize's --dry-run).
std::vector<QuantizedWeight> quantization_plan(DecoderLM& model, const QuantizeSpec& spec);
// Every quantised weight of `model` made dense again (f32, its blocks dequantised), in place.
void dequantize_weights(nn::Module& model);
// Throws naming `what`, the model's first quantised weights and `advice` when it holds any: for
// writers of formats that store dense weights only.
void check_dense(const nn::Module& model, const std::string& what, const std::string& advice);
// The type llama.cpp gives the head for a model quantised to `type` (Q6_K, or Q8_0 for Q8_0).
QuantType default_output_type(QuantType type);

// ---- the choice itself (quantize_mix.cpp), for quantize_weights and its tests ----

// A weight's role, as llama.cpp's tensor_get_category names it (attn_qkv: GPT-2's fused q, k, v).
enum class TensorRole { output, token_embd, attn_q, attn_k, attn_v, attn_qkv, attn_output, ffn_gate, ffn_up, ffn_down, other };
// The type llama_tensor_get_type chooses for a weight of `role` in layer `layer` of `n_layers`
// whose rows are `cols` values (fallbacks included); `tied`: the token embedding is the head.
QuantType mix_tensor_type(const QuantizeSpec& spec, TensorRole role, int64_t layer, int64_t n_layers, int64_t cols,
                          bool tied);

}  // namespace nf::models
