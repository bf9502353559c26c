#pragma once
// MiniMind2 folders, in the two forms whose config.json says model_type "minimind" (told apart by
// the config: `dim` is 002's form, `hidden_size` the Hugging Face form), read and write:
//
// 002's form (format "minimind"): config.json with 002's LMConfig fields (dim, n_layers, n_heads,
// n_kv_heads, vocab_size, hidden_dim, multiple_of, norm_eps, max_seq_len, rope_theta, dropout,
// flash_attn, use_moe, num_experts_per_tok, n_routed_experts, n_shared_experts, scoring_func,
// aux_loss_alpha, seq_aux, norm_topk_prob, and tie_word_embeddings, default true as MiniMind2 ties;
// a missing key takes LMConfig's default at jingyaogong/minimind@04b56ea: dim 512, 8 layers, 8 heads,
// 2 kv heads (null: n_heads), vocab 6400, max_seq_len 8192, n_shared_experts True; n_shared_experts
// is one shared expert unless null, as 04b56ea's MOEFeedForward builds it) and model.safetensors.
// Name map (ours <- theirs):
//   tok_embeddings <- tok_embeddings, layers.N.attn_norm <- layers.N.attention_norm,
//   layers.N.attn.{q,k,v,o}_proj <- layers.N.attention.w{q,k,v,o}, layers.N.mlp_norm <- layers.N.ffn_norm,
//   layers.N.mlp.w{1,2,3} <- layers.N.feed_forward.w{1,2,3}; MoE: mlp.gate <- feed_forward.gate,
//   mlp.experts.E.w* <- feed_forward.experts.E.w*, mlp.shared_experts.0.w* <- feed_forward.shared_experts.w*
//   (one FeedForward at 04b56ea, not a list);
//   norm <- norm, output <- output (untied; a tied file may carry it too). RoPE on interleaved pairs
//   (002's complex pairs); 002's persistent causal-mask buffer (layers.N.attention.mask) is ignored.
//
// The Hugging Face form (format "minimind-hf"; MiniMindConfig / MiniMindForCausalLM, what
// save_pretrained writes): config.json with hidden_size, num_hidden_layers, num_attention_heads,
// num_key_value_heads, vocab_size, intermediate_size (null = 8/3 hidden_size rounded up to 64),
// max_position_embeddings, rms_norm_eps, rope_theta, inference_rope_scaling, dropout, hidden_act,
// flash_attn, the MoE keys above, and bookkeeping (architectures, auto_map, dtype, ...), and
// model.safetensors or a sharded index. Name map: tok_embeddings <- model.embed_tokens (or a lone
// lm_head.weight: the head is always tied), layers.N.attn_norm / mlp_norm <- model.layers.N.
// input_layernorm / post_attention_layernorm, attn.{q,k,v,o}_proj <- self_attn.{q,k,v,o}_proj,
// mlp.w1 / w3 / w2 <- mlp.gate_proj / up_proj / down_proj; MoE mlp.gate <- mlp.gate, mlp.experts.E.w1 /
// w3 / w2 <- mlp.experts.E.gate_proj / up_proj / down_proj, the same for shared_experts.S; norm <-
// model.norm. RoPE by rotate_half: our `half` layout. Refused by name: inference_rope_scaling true /
// a rope_scaling (YaRN), tie_word_embeddings false.
//
// MiniMind's current form (format "minimind-hf" too; model/model_minimind.py at jingyaogong/minimind@d65ef2c):
// told apart by a key of its own (head_dim, num_experts, moe_intermediate_size, router_aux_loss_coef)
// or, when save_pretrained left them all out, by its q_norm tensors. Keys and their defaults there:
// hidden_size 768, num_hidden_layers 8, num_attention_heads 8, num_key_value_heads 4 (null: heads),
// head_dim hidden / heads, vocab_size 6400, intermediate_size ceil(hidden pi / 64) 64,
// max_position_embeddings 32768, rms_norm_eps 1e-6, rope_theta 1e6, tie_word_embeddings true,
// use_moe false, num_experts 4, num_experts_per_tok 1, moe_intermediate_size intermediate_size,
// norm_topk_prob true, router_aux_loss_coef 5e-4 (= our aux_loss_alpha, batch-level), and
// inference_rope_scaling: YaRN factor 16 from 2048 positions, beta 32 / 1, attention factor 1, when
// max_position_embeddings > 2048 (rope_scaling / rope_parameters are ignored, as MiniMindConfig
// ignores them). Names as the 2025 form plus self_attn.q_norm / k_norm (our attn.q_norm / k_norm,
// the learned per-head QK-norm, eps rms_norm_eps, before RoPE); no shared experts. Weights in
// model.safetensors or the folder's only .pth (MiniMind's training scripts' torch.save state dicts).
//
// Both: RMSNorm, SwiGLU, no biases, MoE softmax then top-k (renormalised when top_k > 1 and
// norm_topk_prob) plus unweighted shared experts. A model in the other RoPE layout (interleaved /
// half) is saved with its q / k rows reordered (formats/rope_rows.h), so converting between the forms
// keeps the logits.
#include <map>
#include <memory>
#include <string>

#include "nanoformer/models/decoder_lm.h"

namespace nf::formats {

// 002's LMConfig form, the Hugging Face form, and MiniMind's current Hugging Face form (d65ef2c)
enum class MiniMindForm { lmconfig, hf, current };

// A directory whose config.json says model_type "minimind".
bool is_minimind_folder(const std::string& path);
// Which form the folder's config.json is (hidden_size: the Hugging Face form).
MiniMindForm minimind_folder_form(const std::string& dir);
models::DecoderLMConfig config_from_minimind_json(const std::string& json_text, const std::string& source);
models::DecoderLMConfig config_from_minimind_hf_json(const std::string& json_text, const std::string& source);
models::DecoderLMConfig config_from_minimind_current_json(const std::string& json_text, const std::string& source);
// Throw naming the first option the form cannot express (hidden_dim null = derived, as ours;
// intermediate_size is `mlp_hidden`, the resolved MLP width).
std::string minimind_json_from_config(const models::DecoderLMConfig& config);
std::string minimind_hf_json_from_config(const models::DecoderLMConfig& config, int64_t mlp_hidden);
std::string minimind_current_json_from_config(const models::DecoderLMConfig& config, int64_t mlp_hidden);
// A MiniMind state dict of `form` -> ours for a model of `config` (what the loader does with the
// folder's tensors; also maps per-parameter gradients by MiniMind name). `source` prefixes errors.
nn::StateDict state_from_minimind(const models::DecoderLMConfig& config, MiniMindForm form,
                                  std::map<std::string, Tensor> tensors, const std::string& source);
// Reads any form (a hidden_size config is the current form when it has a key of that form or its
// weights have q_norm tensors).
std::shared_ptr<models::DecoderLM> load_minimind(const std::string& dir);
// Write dir/config.json and the weights, as one model.safetensors or, when max_shard_bytes > 0,
// shards of at most that size plus model.safetensors.index.json (folder_io.h).
void save_minimind(const models::DecoderLM& model, const std::string& dir, int64_t max_shard_bytes = 0);
// save_minimind_hf writes the current form for a model with learned per-head q / k norms (all of that
// form's models have them), else the 2025 form.
void save_minimind_hf(const models::DecoderLM& model, const std::string& dir, int64_t max_shard_bytes = 0);

}  // namespace nf::formats
