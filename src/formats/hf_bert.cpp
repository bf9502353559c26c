// Hugging Face BertModel folders: the config translation and the name map (see hf_bert.h).
#include "nanoformer/formats/hf_bert.h"

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "formats/folder_io.h"
#include "formats/name_map.h"
#include "nanoformer/core/error.h"
#include "nanoformer/formats/hf_checkpoint.h"
#include "util/json_input.h"

namespace nf::formats {
namespace {

namespace fs = std::filesystem;

// BertConfig's keys we read, and those that only concern task heads (transformers' generic keys:
// pretrained_config_keys.h).
const std::set<std::string> kBertKeys = {
    "vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size", "hidden_act",
    "hidden_dropout_prob", "attention_probs_dropout_prob", "max_position_embeddings", "type_vocab_size",
    "layer_norm_eps", "position_embedding_type", "is_decoder", "classifier_dropout", "tie_word_embeddings"};

// The prefix of a BertFor* checkpoint's BertModel.
constexpr const char* kBertPrefix = "bert.";

nn::MLPKind mlp_kind_of(const std::string& act, const std::string& source) {
  if (act == "gelu") return nn::MLPKind::gelu;
  if (act == "gelu_new" || act == "gelu_pytorch_tanh") return nn::MLPKind::gelu_tanh;
  if (act == "relu") return nn::MLPKind::relu;
  NF_FAIL(source, ": hidden_act '", act, "' is not supported (gelu, gelu_new, gelu_pytorch_tanh, relu)");
}

NameMap bert_name_map(const models::EncoderConfig& c, int64_t hidden) {
  const int64_t D = c.dim;
  NameMap map{{"embeddings.word_embeddings.weight", {c.vocab_size, D}, false, {"tok_embeddings.weight"}},
              {"embeddings.position_embeddings.weight", {c.max_seq_len, D}, false, {"pos_embeddings.weight"}},
              {"embeddings.token_type_embeddings.weight", {c.type_vocab_size, D}, false, {"token_type_embeddings.weight"}},
              {"embeddings.LayerNorm.weight", {D}, false, {"embedding_norm.weight"}},
              {"embeddings.LayerNorm.bias", {D}, false, {"embedding_norm.bias"}}};
  const nn::TwoLayerMLP::Names mlp = nn::two_layer_mlp_names(c.mlp);
  const std::string fc = mlp.fc, proj = mlp.proj;
  for (int64_t l = 0; l < c.n_layers; ++l) {
    const std::string h = "encoder.layer." + std::to_string(l) + ".", o = "layers." + std::to_string(l) + ".";
    auto add = [&](const std::string& theirs, const std::string& ours, const Shape& weight_shape) {
      map.push_back({h + theirs + ".weight", weight_shape, false, {o + ours + ".weight"}});
      map.push_back({h + theirs + ".bias", {weight_shape[0]}, false, {o + ours + ".bias"}});
    };
    add("attention.self.query", "attn.q_proj", {D, D});
    add("attention.self.key", "attn.k_proj", {D, D});
    add("attention.self.value", "attn.v_proj", {D, D});
    add("attention.output.dense", "attn.o_proj", {D, D});
    add("attention.output.LayerNorm", "attn_norm", {D});
    add("intermediate.dense", "mlp." + fc, {hidden, D});
    add("output.dense", "mlp." + proj, {D, hidden});
    add("output.LayerNorm", "mlp_norm", {D});
  }
  if (c.pooler) {
    map.push_back({"pooler.dense.weight", {D, D}, false, {"pooler.weight"}});
    map.push_back({"pooler.dense.bias", {D}, false, {"pooler.bias"}});
  }
  return map;
}

// Throws naming the first option BertModel cannot express.
void check_expressible(const models::EncoderConfig& c) {
  auto need = [](bool ok, const std::string& option, const std::string& value) {
    NF_CHECK(ok, "save_hf: ", option, " ", value, " cannot be expressed by BertModel");
  };
  need(c.position == nn::PositionKind::learned, "position", nn::position_kind_name(c.position));
  need(c.type_vocab_size > 0, "type_vocab_size", "0");
  need(!c.scale_embeddings, "scale_embeddings", "true");
  need(c.embedding_norm, "embedding_norm", "false");
  need(c.norm == nn::NormKind::layernorm, "norm", nn::norm_kind_name(c.norm));
  need(c.norm_placement == nn::NormPlacement::post, "norm_placement", nn::norm_placement_name(c.norm_placement));
  need(c.mlp == nn::MLPKind::gelu || c.mlp == nn::MLPKind::gelu_tanh || c.mlp == nn::MLPKind::relu, "mlp",
       nn::mlp_kind_name(c.mlp));
  need(c.attention_bias && c.mlp_bias, "attention_bias / mlp_bias", "false");
  need(c.mlp_dropout == 0.0, "mlp_dropout", std::to_string(c.mlp_dropout));
}

// The folder's tensors under BertModel's names: a BertFor* checkpoint's "bert." prefix is removed
// and its heads left out.
std::map<std::string, Tensor> bert_model_tensors(std::map<std::string, Tensor> tensors) {
  const bool prefixed = std::any_of(tensors.begin(), tensors.end(),
                                    [](const auto& entry) { return entry.first.rfind(kBertPrefix, 0) == 0; });
  if (!prefixed) return tensors;
  std::map<std::string, Tensor> model;
  for (auto& [name, t] : tensors)
    if (name.rfind(kBertPrefix, 0) == 0) model[name.substr(std::string(kBertPrefix).size())] = t;
  return model;
}

}  // namespace

models::EncoderConfig encoder_config_from_bert_json(const std::string& json_text, const std::string& source) {
  return with_json_errors(source, [&] {
    const Json j = parse_json_object(json_text, source);
    const std::string type = j.value("model_type", std::string());
    NF_CHECK(type == "bert", source, ": model_type '", type, "' is not BERT's ('bert')");
    check_known_keys(j, kBertKeys, "BERT", source);
    const std::string position = j.value("position_embedding_type", std::string("absolute"));
    NF_CHECK(position == "absolute", source, ": position_embedding_type '", position,
             "' is not supported (absolute)");
    NF_CHECK(!bool_key(j, "is_decoder", false, source), source,
             ": is_decoder true is not supported (an encoder-only BertModel)");
    models::EncoderConfig c;
    c.name = fs::path(source).parent_path().filename().string();
    c.vocab_size = int_key(j, "vocab_size", source);
    c.dim = int_key(j, "hidden_size", source);
    c.n_layers = int_key(j, "num_hidden_layers", source);
    c.n_heads = int_key(j, "num_attention_heads", source);
    c.mlp_hidden = int_key(j, "intermediate_size", source);
    c.mlp = mlp_kind_of(j.value("hidden_act", std::string("gelu")), source);
    c.max_seq_len = int_key(j, "max_position_embeddings", source);
    c.type_vocab_size = int_key(j, "type_vocab_size", 2, source);
    c.pad_token_id = int_key(j, "pad_token_id", -1, source);
    c.norm_eps = number_key(j, "layer_norm_eps", 1e-12, source);
    c.dropout = number_key(j, "hidden_dropout_prob", 0.1, source);
    c.attention_dropout = number_key(j, "attention_probs_dropout_prob", 0.1, source);
    c.init_std = number_key(j, "initializer_range", 0.02, source);
    models::validate_encoder_config(c, source);
    return c;
  });
}

std::string bert_json_from_config(const models::EncoderConfig& c, int64_t mlp_hidden) {
  check_expressible(c);
  const char* act = c.mlp == nn::MLPKind::gelu ? "gelu" : c.mlp == nn::MLPKind::gelu_tanh ? "gelu_new" : "relu";
  nlohmann::ordered_json j;
  j["architectures"] = {"BertModel"};
  j["model_type"] = "bert";
  j["vocab_size"] = c.vocab_size;
  j["hidden_size"] = c.dim;
  j["num_hidden_layers"] = c.n_layers;
  j["num_attention_heads"] = c.n_heads;
  j["intermediate_size"] = mlp_hidden;
  j["hidden_act"] = act;
  j["hidden_dropout_prob"] = c.dropout;
  j["attention_probs_dropout_prob"] = c.attention_dropout;
  j["max_position_embeddings"] = c.max_seq_len;
  j["type_vocab_size"] = c.type_vocab_size;
  j["layer_norm_eps"] = c.norm_eps;
  j["initializer_range"] = c.init_std;
  j["pad_token_id"] = c.pad_token_id >= 0 ? nlohmann::ordered_json(c.pad_token_id) : nlohmann::ordered_json(nullptr);
  j["is_decoder"] = false;
  j["add_cross_attention"] = false;
  j["dtype"] = "float32";
  return j.dump(2) + "\n";
}

std::shared_ptr<models::EncoderModel> load_hf_bert(const std::string& dir) {
  NF_CHECK(is_hf_folder(dir), dir, ": not a Hugging Face model folder (needs ", kConfigFile, " and ", kWeightsFile,
           ", ", kIndexFile, " or ", kTorchWeightsFile, ")");
  const fs::path config_path = fs::path(dir) / kConfigFile;
  models::EncoderConfig c = encoder_config_from_bert_json(read_text(config_path), config_path.string());
  const std::map<std::string, Tensor> tensors = bert_model_tensors(read_folder_tensors(dir, kWeightsFile, kIndexFile));
  c.pooler = tensors.count("pooler.dense.weight") > 0;
  // the tensors are checked against the config before the model is built, so that a config far
  // larger than its files is an error naming the tensors, not an allocation sized by the config
  const int64_t hidden = nn::mlp_hidden_dim(models::encoder_block_config(c).mlp);
  const nn::StateDict state =
      import_tensors(bert_name_map(c, hidden), tensors, {"embeddings.position_ids", "embeddings.token_type_ids"}, dir);
  Generator gen(0);
  auto model = std::make_shared<models::EncoderModel>(c, gen);
  model->load_state_dict(state);
  return model;
}

void save_hf_bert(const models::EncoderModel& model, const std::string& dir, int64_t max_shard_bytes) {
  const models::EncoderConfig& c = model.config();
  check_expressible(c);
  const int64_t hidden = nn::mlp_hidden_dim(models::encoder_block_config(c).mlp);
  fs::create_directories(dir);
  write_folder_tensors(dir, export_tensors(bert_name_map(c, hidden), model.state_dict()), max_shard_bytes);
  write_text_atomic(fs::path(dir) / kConfigFile, bert_json_from_config(c, hidden));
}

}  // namespace nf::formats
