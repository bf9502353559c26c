// Hugging Face ViTForImageClassification folders: config and name map (see hf_vit.h).
#include "nanoformer/formats/hf_vit.h"

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

const std::set<std::string> kViTKeys = {
    "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size", "hidden_act",
    "hidden_dropout_prob", "attention_probs_dropout_prob", "initializer_range", "layer_norm_eps", "image_size",
    "patch_size", "num_channels", "qkv_bias", "id2label", "label2id", "num_labels", "problem_type",
    // bookkeeping: masked-image-modelling's decoder stride and the pooler ViTForImageClassification lacks
    "encoder_stride", "pooler_output_size", "pooler_act"};

// image_size / patch_size: an integer, or [s, s] (ViTClassifier takes square images and patches).
int64_t square_key(const Json& j, const std::string& key, int64_t fallback, const std::string& source) {
  if (!j.contains(key) || j.at(key).is_null()) return fallback;
  const Json& v = j.at(key);
  if (v.is_array() && v.size() == 2 && v[0].is_number_integer() && v[0] == v[1]) return v[0].get<int64_t>();
  NF_CHECK(!v.is_array(), source, ": '", key, "' is ", util::json_excerpt(v), ": only square sizes [s, s] are supported");
  return int_key(j, key, source);
}

// num_labels, or the size of id2label (transformers writes only the latter); 2 when neither is given.
int64_t class_count(const Json& j, const std::string& source) {
  const Json id2label = j.value("id2label", Json());
  NF_CHECK(id2label.is_null() || id2label.is_object(), source, ": 'id2label' is ", util::json_excerpt(id2label),
           ", expected an object");
  const int64_t labels = id2label.is_object() ? static_cast<int64_t>(id2label.size()) : 2;
  const int64_t n = int_key(j, "num_labels", labels, source);
  NF_CHECK(id2label.is_null() || n == labels, source, ": 'num_labels' is ", n, " but 'id2label' has ", labels,
           " entries");
  return n;
}

NameMap vit_name_map(const models::ViTConfig& c) {
  const int64_t D = c.dim, H = vit_block_config(c).mlp.hidden, C = c.in_channels, P = c.patch_size;
  const std::string e = "vit.embeddings.";
  NameMap map{{e + "cls_token", {1, 1, D}, false, {"class_token"}},
              {e + "position_embeddings", {1, models::vit_num_patches(c) + 1, D}, false, {"pos_embeddings.weight"},
               {vit_num_patches(c) + 1, D}},
              {e + "patch_embeddings.projection.weight", {D, C, P, P}, false, {"patch_embed.proj.weight"}, {D, C * P * P}},
              {e + "patch_embeddings.projection.bias", {D}, false, {"patch_embed.proj.bias"}}};
  auto add = [&](const std::string& theirs, const std::string& ours, Shape shape) {
    map.push_back({theirs, std::move(shape), false, {ours}});
  };
  for (int64_t l = 0; l < c.n_layers; ++l) {
    const std::string h = "vit.encoder.layer." + std::to_string(l) + ".", o = "layers." + std::to_string(l) + ".";
    auto linear = [&](const std::string& theirs, const std::string& ours, int64_t out, int64_t in, bool bias) {
      add(h + theirs + ".weight", o + ours + ".weight", {out, in});
      if (bias) add(h + theirs + ".bias", o + ours + ".bias", {out});
    };
    add(h + "layernorm_before.weight", o + "attn_norm.weight", {D});
    add(h + "layernorm_before.bias", o + "attn_norm.bias", {D});
    linear("attention.attention.query", "attn.q_proj", D, D, c.qkv_bias);
    linear("attention.attention.key", "attn.k_proj", D, D, c.qkv_bias);
    linear("attention.attention.value", "attn.v_proj", D, D, c.qkv_bias);
    linear("attention.output.dense", "attn.o_proj", D, D, true);
    add(h + "layernorm_after.weight", o + "mlp_norm.weight", {D});
    add(h + "layernorm_after.bias", o + "mlp_norm.bias", {D});
    linear("intermediate.dense", "mlp.c_fc", H, D, true);
    linear("output.dense", "mlp.c_proj", D, H, true);
  }
  add("vit.layernorm.weight", "norm.weight", {D});
  add("vit.layernorm.bias", "norm.bias", {D});
  add("classifier.weight", "head.weight", {c.n_classes, D});
  add("classifier.bias", "head.bias", {c.n_classes});
  return map;
}

// A ViTModel's pooler, saved by some exports next to the classifier: not a parameter of ours.
const std::set<std::string> kIgnoredTensors = {"vit.pooler.dense.weight", "vit.pooler.dense.bias"};

}  // namespace

models::ViTConfig vit_config_from_hf_json(const std::string& json_text, const std::string& source) {
  return with_json_errors(source, [&] {
    const Json j = parse_json_object(json_text, source);
    const std::string type = j.value("model_type", std::string());
    NF_CHECK(type == "vit", source, ": model_type '", type, "' is not a ViT (vit)");
    check_known_keys(j, kViTKeys, "ViT", source);
    const std::string act = j.value("hidden_act", std::string("gelu"));
    NF_CHECK(act == "gelu", source, ": hidden_act '", act, "' is not supported (gelu)");
    const std::string problem = j.value("problem_type", Json()).is_null() ? "" : j.at("problem_type").get<std::string>();
    NF_CHECK(problem.empty() || problem == "single_label_classification", source, ": problem_type '", problem,
             "' is not supported (single_label_classification)");
    models::ViTConfig c;
    c.name = fs::path(source).parent_path().filename().string();
    c.dim = int_key(j, "hidden_size", 768, source);
    c.n_layers = int_key(j, "num_hidden_layers", 12, source);
    c.n_heads = int_key(j, "num_attention_heads", 12, source);
    c.mlp_hidden = int_key(j, "intermediate_size", 3072, source);
    c.dropout = number_key(j, "hidden_dropout_prob", 0.0, source);
    c.attention_dropout = number_key(j, "attention_probs_dropout_prob", 0.0, source);
    c.init_std = number_key(j, "initializer_range", 0.02, source);
    c.norm_eps = number_key(j, "layer_norm_eps", 1e-12, source);
    c.image_size = square_key(j, "image_size", 224, source);
    c.patch_size = square_key(j, "patch_size", 16, source);
    c.in_channels = int_key(j, "num_channels", 3, source);
    c.qkv_bias = bool_key(j, "qkv_bias", true, source);
    c.n_classes = class_count(j, source);
    models::validate_vit_config(c, source);
    return c;
  });
}

std::string hf_json_from_vit_config(const models::ViTConfig& c) {
  nlohmann::ordered_json id2label, label2id;
  for (int64_t i = 0; i < c.n_classes; ++i) {
    id2label[std::to_string(i)] = "LABEL_" + std::to_string(i);
    label2id["LABEL_" + std::to_string(i)] = i;
  }
  const nlohmann::ordered_json j = {
      {"architectures", {"ViTForImageClassification"}}, {"model_type", "vit"}, {"hidden_size", c.dim},
      {"num_hidden_layers", c.n_layers}, {"num_attention_heads", c.n_heads},
      {"intermediate_size", models::vit_block_config(c).mlp.hidden}, {"hidden_act", "gelu"},
      {"hidden_dropout_prob", c.dropout}, {"attention_probs_dropout_prob", c.attention_dropout},
      {"initializer_range", c.init_std}, {"layer_norm_eps", c.norm_eps}, {"image_size", c.image_size},
      {"patch_size", c.patch_size}, {"num_channels", c.in_channels}, {"qkv_bias", c.qkv_bias},
      {"id2label", id2label}, {"label2id", label2id}, {"dtype", "float32"}};
  return j.dump(2) + "\n";
}

std::shared_ptr<models::ViTClassifier> load_hf_vit(const std::string& dir) {
  NF_CHECK(is_hf_folder(dir), dir, ": not a Hugging Face model folder (needs ", kConfigFile, " and ", kWeightsFile,
           ", ", kIndexFile, " or ", kTorchWeightsFile, ")");
  const fs::path config_path = fs::path(dir) / kConfigFile;
  const models::ViTConfig config = vit_config_from_hf_json(read_text(config_path), config_path.string());
  // the tensors are checked against the config before the model is built, so that a config far
  // larger than its files is an error naming the tensors, not an allocation sized by the config
  const nn::StateDict state =
      import_tensors(vit_name_map(config), read_folder_tensors(dir, kWeightsFile, kIndexFile), kIgnoredTensors, dir);
  Generator gen(0);
  auto model = std::make_shared<models::ViTClassifier>(config, gen);
  model->load_state_dict(state);
  return model;
}

void save_hf_vit(const models::ViTClassifier& model, const std::string& dir, int64_t max_shard_bytes) {
  fs::create_directories(dir);
  write_folder_tensors(dir, export_tensors(vit_name_map(model.config()), model.state_dict()), max_shard_bytes);
  write_text_atomic(fs::path(dir) / kConfigFile, hf_json_from_vit_config(model.config()));
}

}  // namespace nf::formats
