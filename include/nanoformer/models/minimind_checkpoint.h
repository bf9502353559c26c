#pragma once
// MiniMind2 folders as reference 002 writes them: config.json with 002's LMConfig fields
// (model_type "minimind": dim, n_layers, n_heads, n_kv_heads, vocab_size, hidden_dim, multiple_of,
// norm_eps, max_seq_len, rope_theta, dropout, flash_attn, use_moe, num_experts_per_tok,
// n_routed_experts, n_shared_experts, scoring_func, aux_loss_alpha, seq_aux, norm_topk_prob, and
// tie_word_embeddings, default true as MiniMind2 ties) and model.safetensors. Name map (ours <- theirs):
//   tok_embeddings <- tok_embeddings, layers.N.attn_norm <- layers.N.attention_norm,
//   layers.N.attn.{q,k,v,o}_proj <- layers.N.attention.w{q,k,v,o}, layers.N.mlp_norm <- layers.N.ffn_norm,
//   layers.N.mlp.w{1,2,3} <- layers.N.feed_forward.w{1,2,3}; MoE: mlp.gate <- feed_forward.gate,
//   mlp.experts.E.w* <- feed_forward.experts.E.w*, mlp.shared_experts.S.w* <- feed_forward.shared_experts.S.w*;
//   norm <- norm, output <- output (untied; a tied file may carry it too).
// The model: RMSNorm, RoPE on interleaved pairs (002's complex pairs), SwiGLU, no biases; MoE routes
// softmax then top-k. 002's persistent causal-mask buffer (layers.N.attention.mask) is ignored.
#include <memory>
#include <string>

#include "nanoformer/models/decoder_lm.h"

namespace nf::models {

// A directory whose config.json says model_type "minimind".
bool is_minimind_folder(const std::string& path);
DecoderLMConfig config_from_minimind_json(const std::string& json_text, const std::string& source);
// Throws naming the first option MiniMind cannot express (hidden_dim null = derived, as ours).
std::string minimind_json_from_config(const DecoderLMConfig& config);
std::shared_ptr<DecoderLM> load_minimind(const std::string& dir);
void save_minimind(const DecoderLM& model, const std::string& dir);

}  // namespace nf::models
