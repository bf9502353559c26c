#pragma once
// Hugging Face BertModel folders, read and write: config.json (BertConfig, translated to and from
// EncoderConfig) and model.safetensors (or a sharded index on read). Name map (ours <- theirs):
//   tok_embeddings / pos_embeddings / token_type_embeddings <- embeddings.word_embeddings /
//     position_embeddings / token_type_embeddings, embedding_norm <- embeddings.LayerNorm,
//   layers.N.attn.{q,k,v}_proj <- encoder.layer.N.attention.self.{query,key,value},
//   layers.N.attn.o_proj <- attention.output.dense, layers.N.attn_norm <- attention.output.LayerNorm,
//   layers.N.mlp.c_fc / c_proj (gelu; linear1 / linear2 for relu) <- intermediate.dense / output.dense,
//   layers.N.mlp_norm <- output.LayerNorm, pooler <- pooler.dense (the model has a pooler when the
//   folder holds pooler.dense.*).
// A BertFor* checkpoint (names under "bert.") loads its BertModel; its task heads are left out, as
// BertModel.from_pretrained does. Refused, naming the culprit: an unknown config key, a value that
// changes the forward in a way EncoderModel does not express (position_embedding_type other than
// absolute, hidden_act other than gelu / gelu_new / gelu_pytorch_tanh / relu, is_decoder,
// add_cross_attention, is_encoder_decoder), and missing / unexpected / mis-shaped / non-float
// tensors (all listed in one error).
#include <memory>
#include <string>

#include "nanoformer/models/encoder_model.h"

namespace nf::formats {

// config.json text -> our config (`source` prefixes errors; name = source's folder name;
// pooler false: the tensors say whether there is one).
models::EncoderConfig encoder_config_from_bert_json(const std::string& json_text, const std::string& source);
// Our config -> BertModel's config.json; throws naming the first option BertModel cannot express.
std::string bert_json_from_config(const models::EncoderConfig& config, int64_t mlp_hidden);
std::shared_ptr<models::EncoderModel> load_hf_bert(const std::string& dir);
// Writes dir/config.json and dir/model.safetensors (creating dir).
// max_shard_bytes > 0 splits the tensors over shards with an index, as save_hf.
void save_hf_bert(const models::EncoderModel& model, const std::string& dir, int64_t max_shard_bytes = 0);

}  // namespace nf::formats
