// Hugging Face folders: GPT2LMHeadModel and LlamaForCausalLM configs and name maps (see hf_checkpoint.h).
#include "nanoformer/formats/hf_checkpoint.h"

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "formats/folder_io.h"
#include "formats/hf_name_maps.h"
#include "formats/rope_rows.h"
#include "nanoformer/core/error.h"
#include "nanoformer/nn/mlp.h"
#include "util/json_input.h"

namespace nf::models {
namespace {

namespace fs = std::filesystem;

enum class HfFamily { gpt2, llama };

const std::set<std::string> kGpt2Keys = {
    "vocab_size", "n_embd", "n_layer", "n_head", "n_positions", "n_ctx", "n_inner", "layer_norm_epsilon",
    "activation_function", "tie_word_embeddings", "resid_pdrop", "embd_pdrop", "attn_pdrop", "scale_attn_weights",
    "scale_attn_by_inverse_layer_idx", "reorder_and_upcast_attn", "summary_activation",
    "summary_first_dropout", "summary_proj_to_labels", "summary_type", "summary_use_proj"};
const std::set<std::string> kLlamaKeys = {
    "vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
    "num_key_value_heads", "head_dim", "max_position_embeddings", "rms_norm_eps", "rope_theta", "rope_scaling",
    "rope_parameters", "attention_bias", "mlp_bias", "hidden_act", "tie_word_embeddings", "attention_dropout",
    "pretraining_tp"};

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
  DecoderLMConfig c;
  c.vocab_size = int_key(j, "vocab_size", source);
  c.dim = int_key(j, "n_embd", source);
  c.n_layers = int_key(j, "n_layer", source);
  c.n_heads = int_key(j, "n_head", source);
  c.max_seq_len = int_key(j, "n_positions", source);
  c.mlp_hidden = int_key(j, "n_inner", 4 * c.dim, source);
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
  NF_CHECK(scaling.is_object(), source, ": rope scaling ", util::json_excerpt(scaling), " is not an object");
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
  NF_CHECK(number_key(j, "pretraining_tp", 1, source) == 1, source, ": pretraining_tp ", util::json_excerpt(j.at("pretraining_tp")),
           " is not supported (1)");
  DecoderLMConfig c;
  c.vocab_size = int_key(j, "vocab_size", source);
  c.dim = int_key(j, "hidden_size", source);
  c.mlp_hidden = int_key(j, "intermediate_size", source);
  c.n_layers = int_key(j, "num_hidden_layers", source);
  c.n_heads = int_key(j, "num_attention_heads", source);
  c.n_kv_heads = int_key(j, "num_key_value_heads", c.n_heads, source);
  c.head_dim = int_key(j, "head_dim", 0, source);
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
  need(c.sliding_window == 0, cls, "sliding_window", std::to_string(c.sliding_window));
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
  // an interleaved model is written with its q / k rows reordered to the half layout (rope_rows.h)
  need(c.rope_layout == RopeLayout::half || c.rope_layout == RopeLayout::interleaved, cls, "rope_layout",
       rope_layout_name(c.rope_layout));
  need(c.rope_scaling != nn::RopeScaling::ntk, cls, "rope_scaling", "ntk");
  need(c.mlp == nn::MLPKind::swiglu, cls, "mlp", nn::mlp_kind_name(c.mlp));
  return HfFamily::llama;
}

NameMap gpt2_name_map(const DecoderLMConfig& c, int64_t hidden) {
  const int64_t D = c.dim;
  NameMap map{{"transformer.wte.weight", {c.vocab_size, D}, false, {"tok_embeddings.weight"}},
              {"transformer.wpe.weight", {c.max_seq_len, D}, false, {"pos_embeddings.weight"}}};
  const nn::TwoLayerMLP::Names names = nn::two_layer_mlp_names(c.mlp);  // ours: mlp.c_fc, or mlp.linear1 for relu
  const std::string fc = std::string("mlp.") + names.fc, proj = std::string("mlp.") + names.proj;
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
        {h + "mlp.c_fc.weight", {D, hidden}, true, {o + fc + ".weight"}},
        {h + "mlp.c_fc.bias", {hidden}, false, {o + fc + ".bias"}},
        {h + "mlp.c_proj.weight", {hidden, D}, true, {o + proj + ".weight"}},
        {h + "mlp.c_proj.bias", {D}, false, {o + proj + ".bias"}}};
    map.insert(map.end(), layer.begin(), layer.end());
  }
  map.push_back({"transformer.ln_f.weight", {D}, false, {"norm.weight"}});
  map.push_back({"transformer.ln_f.bias", {D}, false, {"norm.bias"}});
  if (!c.tie_embeddings) map.push_back({"lm_head.weight", {c.vocab_size, D}, false, {"output.weight"}});
  return map;
}

NameMap llama_name_map(const DecoderLMConfig& c, int64_t hidden) {
  const nn::AttentionConfig a = block_config(c).attention;  // resolved: head_dim, n_kv_heads
  const int64_t D = c.dim, hd = a.head_dim, q = a.n_heads * hd, kv = a.n_kv_heads * hd;
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

// GPT-2's <|endoftext|>, its BOS and EOS: GPT2Config's 50256 when the vocabulary holds it, else
// the last id, where GPT-2 keeps it (50256 of 50257), so that transformers never reads an id the
// model does not have.
int64_t gpt2_end_of_text_id(int64_t vocab_size) { return std::min<int64_t>(50256, vocab_size - 1); }

NameMap name_map(HfFamily family, const DecoderLMConfig& c, int64_t hidden) {
  return family == HfFamily::gpt2 ? gpt2_name_map(c, hidden) : llama_name_map(c, hidden);
}

}  // namespace

NameMap hf_decoder_name_map(const DecoderLMConfig& config) {
  return name_map(family_for(config), config, nn::mlp_hidden_dim(block_config(config).mlp));
}

bool is_hf_folder(const std::string& path) {
  const fs::path dir(path);
  return fs::is_directory(dir) && fs::exists(dir / kConfigFile) &&
         (fs::exists(dir / kWeightsFile) || fs::exists(dir / kIndexFile) || fs::exists(dir / kTorchWeightsFile));
}

std::string hf_model_type(const std::string& dir) {
  const fs::path config_path = fs::path(dir) / kConfigFile;
  return with_json_errors(config_path.string(), [&] {
    return parse_json_object(read_text(config_path), config_path.string()).value("model_type", std::string());
  });
}

DecoderLMConfig config_from_hf_json(const std::string& json_text, const std::string& source) {
  return with_json_errors(source, [&] {
    const Json j = parse_json_object(json_text, source);
    DecoderLMConfig c = family_of(j, source) == HfFamily::gpt2 ? gpt2_config(j, source) : llama_config(j, source);
    c.name = fs::path(source).parent_path().filename().string();
    validate_model_config(c, source);
    return c;
  });
}

std::string hf_json_from_config(const DecoderLMConfig& c, int64_t mlp_hidden) {
  nlohmann::ordered_json j;
  if (family_for(c) == HfFamily::gpt2) {
    const char* act = c.mlp == nn::MLPKind::gelu_tanh ? "gelu_new" : c.mlp == nn::MLPKind::gelu ? "gelu" : "relu";
    j = {{"architectures", {"GPT2LMHeadModel"}}, {"model_type", "gpt2"}, {"vocab_size", c.vocab_size},
         {"n_embd", c.dim}, {"n_layer", c.n_layers}, {"n_head", c.n_heads}, {"n_positions", c.max_seq_len},
         {"n_inner", mlp_hidden}, {"layer_norm_epsilon", c.norm_eps}, {"activation_function", act},
         {"resid_pdrop", c.residual_dropout}, {"embd_pdrop", c.dropout}, {"attn_pdrop", c.dropout},
         {"tie_word_embeddings", c.tie_embeddings}, {"bos_token_id", gpt2_end_of_text_id(c.vocab_size)},
         {"eos_token_id", gpt2_end_of_text_id(c.vocab_size)}, {"dtype", "float32"}};
  } else {
    const nn::AttentionConfig a = block_config(c).attention;  // resolved: head_dim, n_kv_heads
    nlohmann::ordered_json rope = {{"rope_type", c.rope_scaling == nn::RopeScaling::linear ? "linear" : "default"},
                                   {"rope_theta", c.rope_theta}};
    if (c.rope_scaling == nn::RopeScaling::linear) rope["factor"] = c.rope_scale_factor;
    j = {{"architectures", {"LlamaForCausalLM"}}, {"model_type", "llama"}, {"vocab_size", c.vocab_size},
         {"hidden_size", c.dim}, {"intermediate_size", mlp_hidden}, {"num_hidden_layers", c.n_layers},
         {"num_attention_heads", c.n_heads}, {"num_key_value_heads", a.n_kv_heads},
         {"head_dim", a.head_dim}, {"max_position_embeddings", c.max_seq_len},
         {"rms_norm_eps", c.norm_eps}, {"rope_parameters", rope}, {"attention_bias", c.attention_bias},
         {"mlp_bias", c.mlp_bias}, {"hidden_act", "silu"}, {"attention_dropout", c.dropout},
         {"tie_word_embeddings", c.tie_embeddings}, {"dtype", "float32"}};
  }
  return j.dump(2) + "\n";
}

nn::StateDict state_from_hf(const DecoderLMConfig& config, const std::map<std::string, Tensor>& tensors,
                            const std::string& source) {
  const HfFamily family = family_for(config);
  const int64_t hidden = nn::mlp_hidden_dim(block_config(config).mlp);
  return import_tensors(name_map(family, config, hidden), tensors, ignored_names(family, config), source);
}

std::shared_ptr<DecoderLM> load_hf(const std::string& dir) {
  NF_CHECK(is_hf_folder(dir), dir, ": not a Hugging Face model folder (needs ", kConfigFile, " and ", kWeightsFile,
           ", ", kIndexFile, " or ", kTorchWeightsFile, ")");
  const fs::path config_path = fs::path(dir) / kConfigFile;
  const DecoderLMConfig config = config_from_hf_json(read_text(config_path), config_path.string());
  // the tensors are checked against the config before the model is built, so that a config far
  // larger than its files is an error naming the tensors, not an allocation sized by the config
  const nn::StateDict state = state_from_hf(config, read_folder_tensors(dir, kWeightsFile, kIndexFile), dir);
  auto model = std::make_shared<DecoderLM>(config);
  model->load_state_dict(state);
  return model;
}

void save_hf(const DecoderLM& model, const std::string& dir, int64_t max_shard_bytes) {
  const DecoderLMConfig& c = model.config();
  const HfFamily family = family_for(c);
  const RopeLayout layout = family == HfFamily::llama ? RopeLayout::half : c.rope_layout;  // LLaMA's is half
  const nn::StateDict state = with_rope_layout(model.state_dict(), c, layout);
  const int64_t hidden = nn::mlp_hidden_dim(block_config(c).mlp);
  fs::create_directories(dir);
  write_folder_tensors(dir, export_tensors(name_map(family, c, hidden), state), max_shard_bytes);
  write_text_atomic(fs::path(dir) / kConfigFile, hf_json_from_config(c, hidden));
}

}  // namespace nf::models
