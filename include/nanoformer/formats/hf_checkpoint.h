#pragma once
// Hugging Face model folders for GPT2LMHeadModel and the LLaMA family (LlamaForCausalLM, SmolLM2's
// among them, MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM), read and write (BertModel
// folders: hf_bert.h; load_model picks the reader by config.json's model_type):
//   config.json (the transformers config, translated to and from DecoderLMConfig) and
//   model.safetensors, or a sharded model.safetensors.index.json ({"weight_map": {tensor: shard}})
//   with its shards (written when a maximum shard size is given, as save_pretrained(max_shard_size)).
// Name maps (ours <- theirs):
//   GPT-2  tok_embeddings <- transformer.wte, pos_embeddings <- transformer.wpe,
//          layers.N.attn_norm / mlp_norm <- transformer.h.N.ln_1 / ln_2, norm <- transformer.ln_f,
//          layers.N.attn.{q,k,v}_proj <- transformer.h.N.attn.c_attn (fused, Conv1D (in, out) weights),
//          attn.o_proj <- attn.c_proj, mlp.c_fc / c_proj (linear1 / linear2 for relu) <- mlp.c_fc /
//          c_proj (Conv1D: transposed), output <- lm_head (untied only); config.json's bos_token_id =
//          eos_token_id = <|endoftext|>: 50256 (GPT2Config's) when the vocabulary holds it, else its last id
//   LLaMA  tok_embeddings <- model.embed_tokens, layers.N.attn_norm / mlp_norm <- model.layers.N.
//          input_layernorm / post_attention_layernorm, attn.{q,k,v,o}_proj <- self_attn.{q,k,v,o}_proj,
//          mlp.w1 / w3 / w2 <- mlp.gate_proj / up_proj / down_proj, norm <- model.norm, output <- lm_head
//          (rotate_half RoPE = our `half` layout; rope_theta; rope_scaling linear); an `interleaved`
//          model is written with its q / k rows reordered to the half layout (rope_rows.h)
//   Mistral / Qwen2 / Qwen3  LLaMA's names; Qwen2 has q / k / v biases and no o bias; Qwen3 adds
//          attn.q_norm / k_norm <- self_attn.q_norm / k_norm (learned per-head QK-norm, before RoPE);
//          windows: Mistral's sliding_window on every layer, Qwen's on the layers of layer_types (or
//          i >= max_window_layers) when use_sliding_window. A missing key takes the default of
//          transformers' config class (5.24); save_hf picks the class a model's options need.
// Refused, naming the culprit: an unknown config key, a config value that changes the forward in a
// way DecoderLM does not express, missing / unexpected / mis-shaped / non-float tensors (all listed
// in one error), a shard listed in the index but absent, a tensor in two shards or twice in the index.
#include <map>
#include <memory>
#include <string>

#include "nanoformer/models/decoder_lm.h"

namespace nf::formats {

// A directory holding config.json and model.safetensors or model.safetensors.index.json.
bool is_hf_folder(const std::string& path);
// The model_type of a Hugging Face folder's config.json ("" when it has none): which reader loads it.
std::string hf_model_type(const std::string& dir);
// config.json text -> our config (`source` prefixes errors; name = source's folder name).
models::DecoderLMConfig config_from_hf_json(const std::string& json_text, const std::string& source);
// Our config -> the config.json of GPT2LMHeadModel or the LLaMA-family class its options need;
// `mlp_hidden` is the resolved MLP width. Throws naming the first option none can express.
std::string hf_json_from_config(const models::DecoderLMConfig& config, int64_t mlp_hidden);
// A transformers state dict (GPT2LMHeadModel / LLaMA-family names) -> ours for a model of
// `config`: what load_hf does with a folder's tensors (also maps per-parameter gradients by HF name:
// c_attn split, Conv1D transposed). `source` prefixes errors.
nn::StateDict state_from_hf(const models::DecoderLMConfig& config, const std::map<std::string, Tensor>& tensors,
                            const std::string& source);
std::shared_ptr<models::DecoderLM> load_hf(const std::string& dir);
// Writes dir/config.json and dir/model.safetensors (creating dir), or, when max_shard_bytes > 0 and
// the tensors exceed it, shards model-0000K-of-0000N.safetensors of at most that size (a larger tensor
// alone) and model.safetensors.index.json.
void save_hf(const models::DecoderLM& model, const std::string& dir, int64_t max_shard_bytes = 0);

}  // namespace nf::formats
