#pragma once
// Hugging Face ViTForImageClassification folders, read and write: config.json (model_type "vit",
// translated to and from ViTConfig) and model.safetensors (or a sharded index), with the tensor
// names save_pretrained writes. Name map (ours <- theirs):
//   class_token <- vit.embeddings.cls_token (1, 1, D)
//   pos_embeddings.weight (N+1, D) <- vit.embeddings.position_embeddings (1, N+1, D)
//   patch_embed.proj.{weight (D, C*P*P), bias} <- vit.embeddings.patch_embeddings.projection (Conv2d (D, C, P, P))
//   layers.N.attn_norm / mlp_norm <- vit.encoder.layer.N.layernorm_before / layernorm_after
//   layers.N.attn.{q,k,v}_proj <- vit.encoder.layer.N.attention.attention.{query,key,value}
//   layers.N.attn.o_proj <- vit.encoder.layer.N.attention.output.dense
//   layers.N.mlp.c_fc / c_proj <- vit.encoder.layer.N.intermediate.dense / output.dense
//   norm <- vit.layernorm, head <- classifier
// Refused, naming the culprit: an unknown config key, a value ViTClassifier does not express
// (hidden_act other than gelu, a non-square image or patch, a problem_type other than single-label,
// num_labels disagreeing with id2label), and missing / unexpected / mis-shaped / non-float tensors
// (all listed in one error). encoder_stride and the pooler keys (no pooler in the classifier) are
// read as bookkeeping.
#include <memory>
#include <string>

#include "nanoformer/models/vit.h"

namespace nf::formats {

// config.json text -> our config (`source` prefixes errors; name = source's folder name).
models::ViTConfig vit_config_from_hf_json(const std::string& json_text, const std::string& source);
// Our config -> the config.json of ViTForImageClassification.
std::string hf_json_from_vit_config(const models::ViTConfig& config);
std::shared_ptr<models::ViTClassifier> load_hf_vit(const std::string& dir);
// Writes dir/config.json and dir/model.safetensors (creating dir).
// max_shard_bytes > 0 splits the tensors over shards with an index, as save_hf.
void save_hf_vit(const models::ViTClassifier& model, const std::string& dir, int64_t max_shard_bytes = 0);

}  // namespace nf::formats
