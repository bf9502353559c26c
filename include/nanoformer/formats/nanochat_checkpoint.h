#pragma once
// nanochat checkpoints (reference 003): a folder holding meta_<step>.json, whose "model_config"
// gives sequence_len, vocab_size, n_layer, n_head, n_kv_head, n_embd (other keys of the meta file
// are training state and are ignored; an unknown model_config key is an error), and the weights
// with nanochat's state-dict names: model_<step>.safetensors, or else the model_<step>.pt that
// nanochat's torch.save wrote (read natively, io/torch_checkpoint.h; torch.compile's "_orig_mod."
// prefix dropped). With several steps the highest is read.
// Name map (ours <- theirs): tok_embeddings <- transformer.wte, layers.N.attn.{q,k,v,o}_proj <-
// transformer.h.N.attn.{c_q,c_k,c_v,c_proj}, layers.N.mlp.{c_fc,c_proj} <- transformer.h.N.mlp.{c_fc,c_proj},
// output <- lm_head. The architecture is fixed by 003: norm after the embedding, parameter-free
// RMSNorm (eps = float32 epsilon), RoPE by -theta on half splits (theta 10000), QK norm, relu^2 MLP
// of 4 n_embd, no biases, untied head, logit softcap 15.
//
// nanochat's current GPT (karpathy/nanochat@92d63d4, nanochat/gpt.py), told from 003's by its
// smear_gate.weight tensor, is the same plus: value embeddings with 12-channel gates on alternating
// layers (value_embeds.N <- value_embeds.N, layers.N.attn.ve_gate <- transformer.h.N.attn.ve_gate),
// residual_scalars.{resid_lambdas,x0_lambdas} <- {resid_lambdas,x0_lambdas},
// smear.{gate_weight,lambda} <- {smear_gate.weight,smear_lambda}, backout.lambda <- backout_lambda,
// sliding windows by model_config's window_pattern (S: flash-attn window (ceil(sequence_len / 4 / 128)
// * 128, 0), i.e. that many keys + 1; the last layer L; absent: "L", as nanochat's checkpoint_manager
// patches old metas), RoPE theta 100000, q and k scaled by 1.2 after their norm (attention scale
// 1.44 / sqrt(head_dim)), and the token tables and head padded to a multiple of 64 rows (the padding
// dropped on reading, zeros on writing). Its model_config keys are GPTConfig's; a missing one takes
// GPTConfig's default. Writing keeps the form read: save_nanochat writes the current form for a model
// with value_embeddings, residual_scalars, smear and backout.
#include <memory>
#include <string>

#include "nanoformer/models/decoder_lm.h"

namespace nf::formats {

// A directory holding a meta_*.json and its model_*.safetensors or model_*.pt.
bool is_nanochat_folder(const std::string& path);
// The model_config object of a meta file -> our config: 003's form, or with `current` the current GPT's.
models::DecoderLMConfig config_from_nanochat_meta(const std::string& json_text, const std::string& source, bool current = false);
std::shared_ptr<models::DecoderLM> load_nanochat(const std::string& dir);
// Writes dir/meta_000000.json and dir/model_000000.safetensors; throws naming the first option
// that nanochat's fixed architecture does not have.
void save_nanochat(const models::DecoderLM& model, const std::string& dir);

}  // namespace nf::formats
