// Hugging Face folders: GPT2LMHeadModel and LlamaForCausalLM configs and name maps (see hf_checkpoint.h).
#include "nanoformer/models/hf_checkpoint.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "models/name_map.h"
#include "nanoformer/core/error.h"
#include "nanoformer/io/safetensors.h"

namespace nf::models {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

constexpr const char* kConfigFile = "config.json";
constexpr const char* kWeightsFile = "model.safetensors";
constexpr const char* kIndexFile = "model.safetensors.index.json";

enum class HfFamily { gpt2, llama };

// Keys that describe bookkeeping, tokens or training only: accepted and ignored on read.
const std::set<std::string> kCommonIgnoredKeys = {
    "architectures", "model_type", "transformers_version", "dtype", "torch_dtype", "bos_token_id", "eos_token_id",
    "pad_token_id", "initializer_range", "use_cache", "_name_or_path", "tokenizer_class", "output_attentions",
    "output_hidden_states", "return_dict", "is_decoder", "task_specific_params"};
const std::set<std::string> kGpt2Keys = {
    "vocab_size", "n_embd", "n_layer", "n_head", "n_positions", "n_ctx", "n_inner", "layer_norm_epsilon",
    "activation_function", "tie_word_embeddings", "resid_pdrop", "embd_pdrop", "attn_pdrop", "scale_attn_weights",
    "scale_attn_by_inverse_layer_idx", "reorder_and_upcast_attn", "add_cross_attention", "summary_activation",
    "summary_first_dropout", "summary_proj_to_labels", "summary_type", "summary_use_proj"};
const std::set<std::string> kLlamaKeys = {
    "vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
    "num_key_value_heads", "head_dim", "max_position_embeddings", "rms_norm_eps", "rope_theta", "rope_scaling",
    "rope_parameters", "attention_bias", "mlp_bias", "hidden_act", "tie_word_embeddings", "attention_dropout",
    "pretraining_tp"};

const Json& required(const Json& j, const std::string& key, const std::string& source) {
  NF_CHECK(j.contains(key) && !j.at(key).is_null(), source, ": missing key '", key, "'");
  return j.at(key);
}

int64_t int_key(const Json& j, const std::string& key, const std::string& source) {
  const Json& v = required(j, key, source);
  NF_CHECK(v.is_number_integer(), source, ": '", key, "' is ", v.dump(), ", expected an integer");
  return v.get<int64_t>();
}

double number_key(const Json& j, const std::string& key, double fallback, const std::string& source) {
  if (!j.contains(key) || j.at(key).is_null()) return fallback;
  NF_CHECK(j.at(key).is_number(), source, ": '", key, "' is ", j.at(key).dump(), ", expected a number");
  return j.at(key).get<double>();
}

bool bool_key(const Json& j, const std::string& key, bool fallback, const std::string& source) {
  if (!j.contains(key) || j.at(key).is_null()) return fallback;
  NF_CHECK(j.at(key).is_boolean(), source, ": '", key, "' is ", j.at(key).dump(), ", expected true or false");
  return j.at(key).get<bool>();
}

// Every key of `j` is mapped or ignorable; otherwise an error naming the first that is not.
void check_known_keys(const Json& j, const std::set<std::string>& mapped, const std::string& family,
                      const std::string& source) {
  for (const auto& [key, value] : j.items())
    NF_CHECK(mapped.count(key) || kCommonIgnoredKeys.count(key), source, ": unknown ", family, " config key '", key,
             "'");
}

HfFamily family_of(const Json& j, const std::string& source) {
  const std::string type = j.contains("model_type") ? j.at("model_type").get<std::string>() : "";
  if (type == "gpt2") return HfFamily::gpt2;
  if (type == "llama") return HfFamily::llama;
  NF_FAIL(source, ": model_type '", type, "' is not supported (gpt2 or llama)");
}

DecoderLMConfig gpt2_config(const Json& j, const std::string& source) {
  check_known_keys(j, kGpt2Keys, "GPT-2", source);
  NF_CHECK(bool_key(j, "scale_attn_weights", true, source), source, ": scale_attn_weights false is not supported");
  NF_CHECK(!bool_key(j, "scale_attn_by_inverse_layer_idx", false, source), source,
           ": scale_attn_by_inverse_layer_idx true is not supported");
  NF_CHECK(!bool_key(j, "add_cross_attention", false, source), source, ": add_cross_attention true is not supported");
  DecoderLMConfig c;
  c.vocab_size = int_key(j, "vocab_size", source);
  c.dim = int_key(j, "n_embd", source);
  c.n_layers = int_key(j, "n_layer", source);
  c.n_heads = int_key(j, "n_head", source);
  c.max_seq_len = int_key(j, "n_positions", source);
  c.mlp_hidden = j.contains("n_inner") && !j.at("n_inner").is_null() ? int_key(j, "n_inner", source) : 4 * c.dim;
  c.norm = nn::NormKind::layernorm;
  c.norm_eps = number_key(j, "layer_norm_epsilon", 1e-5, source);
  const std::string act = j.value("activation_function", std::string("gelu_new"));
  if (act == "gelu_new" || act == "gelu_pytorch_tanh")
    c.mlp = nn::MLPKind::gelu_tanh;
  else if (act == "gelu")
    c.mlp = nn::MLPKind::gelu;
  else if (act == "relu")
    c.mlp = nn::MLPKind::relu;
  else
    NF_FAIL(source, ": activation_function '", act, "' is not supported (gelu_new, gelu_pytorch_tanh, gelu, relu)");
  c.position = nn::PositionKind::learned;
  c.tie_embeddings = bool_key(j, "tie_word_embeddings", true, source);
  return c;
}

// rope_parameters {rope_type, rope_theta, factor} (transformers 5) or rope_theta + rope_scaling
// {type | rope_type, factor} (transformers 4).
void read_llama_rope(const Json& j, DecoderLMConfig& c, const std::string& source) {
  Json scaling = j.contains("rope_parameters") ? j.at("rope_parameters") : j.value("rope_scaling", Json());
  c.rope_theta = number_key(j, "rope_theta", 10000.0, source);
  if (scaling.is_null()) return;
  NF_CHECK(scaling.is_object(), source, ": rope scaling ", scaling.dump(), " is not an object");
  c.rope_theta = number_key(scaling, "rope_theta", c.rope_theta, source);
  const std::string type = scaling.value("rope_type", scaling.value("type", std::string("default")));
  if (type == "default") return;
  NF_CHECK(type == "linear", source, ": rope_type '", type, "' is not supported (default, linear)");
  c.rope_scaling = nn::RopeScaling::linear;
  c.rope_scale_factor = number_key(scaling, "factor", 1.0, source);
}

DecoderLMConfig llama_config(const Json& j, const std::string& source) {
  check_known_keys(j, kLlamaKeys, "LLaMA", source);
  const std::string act = j.value("hidden_act", std::string("silu"));
  NF_CHECK(act == "silu", source, ": hidden_act '", act, "' is not supported (silu)");
  NF_CHECK(number_key(j, "pretraining_tp", 1, source) == 1, source, ": pretraining_tp ", j.at("pretraining_tp").dump(),
           " is not supported (1)");
  DecoderLMConfig c;
  c.vocab_size = int_key(j, "vocab_size", source);
  c.dim = int_key(j, "hidden_size", source);
  c.mlp_hidden = int_key(j, "intermediate_size", source);
  c.n_layers = int_key(j, "num_hidden_layers", source);
  c.n_heads = int_key(j, "num_attention_heads", source);
  c.n_kv_heads = j.contains("num_key_value_heads") && !j.at("num_key_value_heads").is_null()
                     ? int_key(j, "num_key_value_heads", source) : c.n_heads;
  c.head_dim = j.contains("head_dim") && !j.at("head_dim").is_null() ? int_key(j, "head_dim", source) : 0;
  c.max_seq_len = int_key(j, "max_position_embeddings", source);
  c.norm = nn::NormKind::rmsnorm;
  c.norm_eps = number_key(j, "rms_norm_eps", 1e-6, source);
  c.norm_bias = false;
  c.position = nn::PositionKind::rope;
  c.rope_layout = RopeLayout::half;
  read_llama_rope(j, c, source);
  c.mlp = nn::MLPKind::swiglu;
  c.attention_bias = bool_key(j, "attention_bias", false, source);
  c.mlp_bias = bool_key(j, "mlp_bias", false, source);
  c.tie_embeddings = bool_key(j, "tie_word_embeddings", false, source);
  return c;
}

// Which HF class can hold `c`; throws naming the first option that neither can.
HfFamily family_for(const DecoderLMConfig& c) {
  auto need = [](bool ok, const char* cls, const std::string& option, const std::string& value) {
    NF_CHECK(ok, "save_hf: ", option, " ", value, " cannot be expressed by ", cls);
  };
  need(c.position == nn::PositionKind::learned || c.position == nn::PositionKind::rope, "GPT2LMHeadModel or "
       "LlamaForCausalLM", "position", nn::position_kind_name(c.position));
  const bool gpt2 = c.position == nn::PositionKind::learned;
  const char* cls = gpt2 ? "GPT2LMHeadModel" : "LlamaForCausalLM";
  need(c.norm_placement == nn::NormPlacement::pre, cls, "norm_placement", nn::norm_placement_name(c.norm_placement));
  need(!c.embedding_norm, cls, "embedding_norm", "true");
  need(!c.qk_norm, cls, "qk_norm", "true");
  need(c.logit_softcap == 0.0, cls, "logit_softcap", std::to_string(c.logit_softcap));
  need(!c.moe.has_value(), cls, "moe", "(set)");
  if (gpt2) {
    need(c.norm == nn::NormKind::layernorm && c.norm_bias, cls, "norm", nn::norm_kind_name(c.norm));
    need(c.mlp == nn::MLPKind::gelu_tanh || c.mlp == nn::MLPKind::gelu || c.mlp == nn::MLPKind::relu, cls, "mlp",
         nn::mlp_kind_name(c.mlp));
    need(c.attention_bias && c.mlp_bias, cls, "attention_bias / mlp_bias", "false");
    need(c.n_kv_heads == 0 || c.n_kv_heads == c.n_heads, cls, "n_kv_heads", std::to_string(c.n_kv_heads));
    need(c.head_dim == 0 || c.head_dim * c.n_heads == c.dim, cls, "head_dim", std::to_string(c.head_dim));
    return HfFamily::gpt2;
  }
  need(c.norm == nn::NormKind::rmsnorm, cls, "norm", nn::norm_kind_name(c.norm));
  need(c.rope_layout == RopeLayout::half, cls, "rope_layout", rope_layout_name(c.rope_layout));
  need(c.rope_scaling != nn::RopeScaling::ntk, cls, "rope_scaling", "ntk");
  need(c.mlp == nn::MLPKind::swiglu, cls, "mlp", nn::mlp_kind_name(c.mlp));
  return HfFamily::llama;
}

NameMap gpt2_name_map(const DecoderLMConfig& c, int64_t hidden) {
  const int64_t D = c.dim;
  NameMap map{{"transformer.wte.weight", {c.vocab_size, D}, false, {"tok_embeddings.weight"}},
              {"transformer.wpe.weight", {c.max_seq_len, D}, false, {"pos_embeddings.weight"}}};
  for (int64_t l = 0; l < c.n_layers; ++l) {
    const std::string h = "transformer.h." + std::to_string(l) + ".", o = "layers." + std::to_string(l) + ".";
    const std::vector<MappedTensor> layer{
        {h + "ln_1.weight", {D}, false, {o + "attn_norm.weight"}},
        {h + "ln_1.bias", {D}, false, {o + "attn_norm.bias"}},
        {h + "attn.c_attn.weight", {D, 3 * D}, true,
         {o + "attn.q_proj.weight", o + "attn.k_proj.weight", o + "attn.v_proj.weight"}},
        {h + "attn.c_attn.bias", {3 * D}, false, {o + "attn.q_proj.bias", o + "attn.k_proj.bias", o + "attn.v_proj.bias"}},
        {h + "attn.c_proj.weight", {D, D}, true, {o + "attn.o_proj.weight"}},
        {h + "attn.c_proj.bias", {D}, false, {o + "attn.o_proj.bias"}},
        {h + "ln_2.weight", {D}, false, {o + "mlp_norm.weight"}},
        {h + "ln_2.bias", {D}, false, {o + "mlp_norm.bias"}},
        {h + "mlp.c_fc.weight", {D, hidden}, true, {o + "mlp.c_fc.weight"}},
        {h + "mlp.c_fc.bias", {hidden}, false, {o + "mlp.c_fc.bias"}},
        {h + "mlp.c_proj.weight", {hidden, D}, true, {o + "mlp.c_proj.weight"}},
        {h + "mlp.c_proj.bias", {D}, false, {o + "mlp.c_proj.bias"}}};
    map.insert(map.end(), layer.begin(), layer.end());
  }
  map.push_back({"transformer.ln_f.weight", {D}, false, {"norm.weight"}});
  map.push_back({"transformer.ln_f.bias", {D}, false, {"norm.bias"}});
  if (!c.tie_embeddings) map.push_back({"lm_head.weight", {c.vocab_size, D}, false, {"output.weight"}});
  return map;
}

NameMap llama_name_map(const DecoderLMConfig& c, int64_t hidden) {
  const int64_t D = c.dim, hd = c.head_dim ? c.head_dim : c.dim / c.n_heads;
  const int64_t q = c.n_heads * hd, kv = (c.n_kv_heads ? c.n_kv_heads : c.n_heads) * hd;
  NameMap map{{"model.embed_tokens.weight", {c.vocab_size, D}, false, {"tok_embeddings.weight"}}};
  for (int64_t l = 0; l < c.n_layers; ++l) {
    const std::string h = "model.layers." + std::to_string(l) + ".", o = "layers." + std::to_string(l) + ".";
    auto linear = [&](const std::string& theirs, const std::string& ours, int64_t out, int64_t in, bool bias) {
      map.push_back({h + theirs + ".weight", {out, in}, false, {o + ours + ".weight"}});
      if (bias) map.push_back({h + theirs + ".bias", {out}, false, {o + ours + ".bias"}});
    };
    map.push_back({h + "input_layernorm.weight", {D}, false, {o + "attn_norm.weight"}});
    linear("self_attn.q_proj", "attn.q_proj", q, D, c.attention_bias);
    linear("self_attn.k_proj", "attn.k_proj", kv, D, c.attention_bias);
    linear("self_attn.v_proj", "attn.v_proj", kv, D, c.attention_bias);
    linear("self_attn.o_proj", "attn.o_proj", D, q, c.attention_bias);
    map.push_back({h + "post_attention_layernorm.weight", {D}, false, {o + "mlp_norm.weight"}});
    linear("mlp.gate_proj", "mlp.w1", hidden, D, c.mlp_bias);
    linear("mlp.up_proj", "mlp.w3", hidden, D, c.mlp_bias);
    linear("mlp.down_proj", "mlp.w2", D, hidden, c.mlp_bias);
  }
  map.push_back({"model.norm.weight", {D}, false, {"norm.weight"}});
  if (!c.tie_embeddings) map.push_back({"lm_head.weight", {c.vocab_size, D}, false, {"output.weight"}});
  return map;
}

// Tensors that may sit in a folder without being parameters: GPT-2's causal-mask buffers, old
// LLaMA rotary tables, and a tied head written out anyway.
std::set<std::string> ignored_names(HfFamily family, const DecoderLMConfig& c) {
  std::set<std::string> ignored;
  for (int64_t l = 0; l < c.n_layers; ++l) {
    const std::string n = std::to_string(l);
    if (family == HfFamily::gpt2) {
      ignored.insert("transformer.h." + n + ".attn.bias");
      ignored.insert("transformer.h." + n + ".attn.masked_bias");
    } else {
      ignored.insert("model.layers." + n + ".self_attn.rotary_emb.inv_freq");
    }
  }
  if (c.tie_embeddings) ignored.insert("lm_head.weight");
  return ignored;
}

NameMap name_map(HfFamily family, const DecoderLMConfig& c, int64_t hidden) {
  return family == HfFamily::gpt2 ? gpt2_name_map(c, hidden) : llama_name_map(c, hidden);
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  NF_CHECK(in.good(), path.string(), ": cannot open");
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

// The weight_map of a shard index, refusing a tensor listed twice.
std::map<std::string, std::string> read_weight_map(const fs::path& index_path) {
  std::set<std::string> seen;
  std::string duplicate;
  bool in_weight_map = false;
  const Json::parser_callback_t on_event = [&](int depth, Json::parse_event_t event, Json& parsed) {
    if (event == Json::parse_event_t::key && depth == 1) in_weight_map = parsed.get<std::string>() == "weight_map";
    if (event == Json::parse_event_t::key && depth == 2 && in_weight_map && !seen.insert(parsed.get<std::string>()).second &&
        duplicate.empty())
      duplicate = parsed.get<std::string>();
    return true;
  };
  const Json index = Json::parse(read_text(index_path), on_event);
  NF_CHECK(duplicate.empty(), index_path.string(), ": tensor '", duplicate, "' is listed twice in the weight_map");
  NF_CHECK(index.contains("weight_map") && index.at("weight_map").is_object(), index_path.string(),
           ": no 'weight_map' object");
  return index.at("weight_map").get<std::map<std::string, std::string>>();
}

std::map<std::string, Tensor> read_sharded(const fs::path& dir) {
  const fs::path index_path = dir / kIndexFile;
  std::map<std::string, std::string> shard_of = read_weight_map(index_path);
  std::map<std::string, io::SafetensorsFile> shards;
  for (const auto& [tensor, shard] : shard_of)
    if (!shards.count(shard)) {
      NF_CHECK(fs::is_regular_file(dir / shard), index_path.string(), ": shard '", shard, "' (holding ", tensor,
               ") is missing");
      shards.emplace(shard, io::SafetensorsFile::open((dir / shard).string()));
    }
  std::map<std::string, Tensor> tensors;
  std::map<std::string, std::string> found_in;
  for (const auto& [shard, file] : shards)
    for (const io::TensorEntry& e : file.entries()) {
      NF_CHECK(!found_in.count(e.name), index_path.string(), ": tensor '", e.name, "' is in two shards, ",
               found_in[e.name], " and ", shard);
      found_in[e.name] = shard;
      NF_CHECK(shard_of.count(e.name) && shard_of.at(e.name) == shard, index_path.string(), ": tensor '", e.name,
               "' is in shard ", shard, " but the weight_map says ",
               shard_of.count(e.name) ? shard_of.at(e.name) : std::string("nothing"));
      tensors[e.name] = file.view(e.name);
    }
  for (const auto& [tensor, shard] : shard_of)
    NF_CHECK(found_in.count(tensor), index_path.string(), ": tensor '", tensor, "' is not in its shard ", shard);
  return tensors;
}

std::map<std::string, Tensor> read_folder_tensors(const fs::path& dir) {
  if (!fs::exists(dir / kWeightsFile)) return read_sharded(dir);
  const io::SafetensorsFile file = io::SafetensorsFile::open((dir / kWeightsFile).string());
  std::map<std::string, Tensor> tensors;
  for (const io::TensorEntry& e : file.entries()) tensors[e.name] = file.view(e.name);
  return tensors;
}

}  // namespace

bool is_hf_folder(const std::string& path) {
  const fs::path dir(path);
  return fs::is_directory(dir) && fs::exists(dir / kConfigFile) &&
         (fs::exists(dir / kWeightsFile) || fs::exists(dir / kIndexFile));
}

DecoderLMConfig config_from_hf_json(const std::string& json_text, const std::string& source) {
  Json j;
  try {
    j = Json::parse(json_text);
  } catch (const Json::exception& e) {
    NF_FAIL(source, ": not valid JSON (", e.what(), ")");
  }
  NF_CHECK(j.is_object(), source, ": expected a JSON object");
  DecoderLMConfig c = family_of(j, source) == HfFamily::gpt2 ? gpt2_config(j, source) : llama_config(j, source);
  c.name = fs::path(source).parent_path().filename().string();
  validate_model_config(c, source);
  return c;
}

std::string hf_json_from_config(const DecoderLMConfig& c, int64_t mlp_hidden) {
  nlohmann::ordered_json j;
  if (family_for(c) == HfFamily::gpt2) {
    const char* act = c.mlp == nn::MLPKind::gelu_tanh ? "gelu_new" : c.mlp == nn::MLPKind::gelu ? "gelu" : "relu";
    j = {{"architectures", {"GPT2LMHeadModel"}}, {"model_type", "gpt2"}, {"vocab_size", c.vocab_size},
         {"n_embd", c.dim}, {"n_layer", c.n_layers}, {"n_head", c.n_heads}, {"n_positions", c.max_seq_len},
         {"n_inner", mlp_hidden}, {"layer_norm_epsilon", c.norm_eps}, {"activation_function", act},
         {"resid_pdrop", c.residual_dropout}, {"embd_pdrop", c.dropout}, {"attn_pdrop", c.dropout},
         {"tie_word_embeddings", c.tie_embeddings}, {"dtype", "float32"}};
  } else {
    nlohmann::ordered_json rope = {{"rope_type", c.rope_scaling == nn::RopeScaling::linear ? "linear" : "default"},
                                   {"rope_theta", c.rope_theta}};
    if (c.rope_scaling == nn::RopeScaling::linear) rope["factor"] = c.rope_scale_factor;
    j = {{"architectures", {"LlamaForCausalLM"}}, {"model_type", "llama"}, {"vocab_size", c.vocab_size},
         {"hidden_size", c.dim}, {"intermediate_size", mlp_hidden}, {"num_hidden_layers", c.n_layers},
         {"num_attention_heads", c.n_heads}, {"num_key_value_heads", c.n_kv_heads ? c.n_kv_heads : c.n_heads},
         {"head_dim", c.head_dim ? c.head_dim : c.dim / c.n_heads}, {"max_position_embeddings", c.max_seq_len},
         {"rms_norm_eps", c.norm_eps}, {"rope_parameters", rope}, {"attention_bias", c.attention_bias},
         {"mlp_bias", c.mlp_bias}, {"hidden_act", "silu"}, {"attention_dropout", c.dropout},
         {"tie_word_embeddings", c.tie_embeddings}, {"dtype", "float32"}};
  }
  return j.dump(2) + "\n";
}

std::shared_ptr<DecoderLM> load_hf(const std::string& dir) {
  NF_CHECK(is_hf_folder(dir), dir, ": not a Hugging Face model folder (needs ", kConfigFile, " and ", kWeightsFile,
           " or ", kIndexFile, ")");
  const fs::path config_path = fs::path(dir) / kConfigFile;
  const std::string text = read_text(config_path);
  const DecoderLMConfig config = config_from_hf_json(text, config_path.string());
  const HfFamily family = family_of(Json::parse(text), config_path.string());
  auto model = std::make_shared<DecoderLM>(config);
  const int64_t hidden = block_config(config).mlp.hidden;
  model->load_state_dict(import_tensors(name_map(family, config, hidden), read_folder_tensors(dir),
                                        ignored_names(family, config), dir));
  return model;
}

void save_hf(const DecoderLM& model, const std::string& dir) {
  const DecoderLMConfig& c = model.config();
  const HfFamily family = family_for(c);
  const nn::StateDict state = model.state_dict();
  const std::string first_mlp = family == HfFamily::gpt2 ? "layers.0.mlp.c_fc.weight" : "layers.0.mlp.w1.weight";
  const int64_t hidden = state.at(first_mlp).size(0);
  fs::create_directories(dir);
  io::save_safetensors((fs::path(dir) / kWeightsFile).string(), export_tensors(name_map(family, c, hidden), state),
                       {{"format", "pt"}});
  const fs::path config_path = fs::path(dir) / kConfigFile, tmp = config_path.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << hf_json_from_config(c, hidden);
    NF_CHECK(out.good(), "save_hf: cannot write ", tmp.string());
  }
  fs::rename(tmp, config_path);
}

}  // namespace nf::models
