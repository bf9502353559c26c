// Hugging Face folders: GPT2LMHeadModel, LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM and
// Qwen3ForCausalLM configs and name maps (see hf_checkpoint.h).
#include "nanoformer/formats/hf_checkpoint.h"

#include <algorithm>
#include <array>
#include <optional>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "formats/folder_io.h"
#include "formats/hf_name_maps.h"
#include "formats/nanochat_options.h"
#include "formats/rope_rows.h"
#include "nanoformer/core/error.h"
#include "nanoformer/nn/mlp.h"
#include "util/json_input.h"

namespace nf::formats {
namespace {

namespace fs = std::filesystem;

// gpt2: GPT2LMHeadModel; the others are the LLaMA family (RMSNorm, rotate_half RoPE, SwiGLU, GQA),
// each a configuration of it: mistral's sliding window on every layer, qwen2's q / k / v biases and
// per-layer windows, qwen3's learned per-head QK-norm.
enum class HfFamily { gpt2, llama, mistral, qwen2, qwen3 };

const std::set<std::string> kGpt2Keys = {
    "vocab_size", "n_embd", "n_layer", "n_head", "n_positions", "n_ctx", "n_inner", "layer_norm_epsilon",
    "activation_function", "tie_word_embeddings", "resid_pdrop", "embd_pdrop", "attn_pdrop", "scale_attn_weights",
    "scale_attn_by_inverse_layer_idx", "reorder_and_upcast_attn", "summary_activation",
    "summary_first_dropout", "summary_proj_to_labels", "summary_type", "summary_use_proj"};
const std::set<std::string> kLlamaKeys = {
    "vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
    "num_key_value_heads", "head_dim", "max_position_embeddings", "rms_norm_eps", "rope_theta", "rope_scaling",
    "rope_parameters", "attention_bias", "mlp_bias", "hidden_act", "tie_word_embeddings", "attention_dropout",
    "pretraining_tp",
    // nanotron's conversion leaves these in SmolLM / SmolLM2 folders; LlamaConfig keeps them unread
    "is_llama_config", "rope_interleaved"};
// MistralConfig's keys (transformers 5.24): LLaMA's without the biases, with sliding_window.
const std::set<std::string> kMistralKeys = {
    "vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
    "num_key_value_heads", "head_dim", "max_position_embeddings", "rms_norm_eps", "rope_theta", "rope_scaling",
    "rope_parameters", "hidden_act", "tie_word_embeddings", "attention_dropout", "sliding_window"};
// Qwen2Config's keys (its attention reads head_dim when the config has one); Qwen3Config adds attention_bias.
const std::set<std::string> kQwen2Keys = {
    "vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
    "num_key_value_heads", "head_dim", "max_position_embeddings", "rms_norm_eps", "rope_theta", "rope_scaling",
    "rope_parameters", "hidden_act", "tie_word_embeddings", "attention_dropout", "use_sliding_window",
    "sliding_window", "max_window_layers", "layer_types"};

constexpr std::array<std::pair<HfFamily, const char*>, 5> kModelTypes{{{HfFamily::gpt2, "gpt2"},
                                                                       {HfFamily::llama, "llama"},
                                                                       {HfFamily::mistral, "mistral"},
                                                                       {HfFamily::qwen2, "qwen2"},
                                                                       {HfFamily::qwen3, "qwen3"}}};

// transformers' class and model_type of each family.
const char* class_name(HfFamily family) {
  switch (family) {
    case HfFamily::gpt2: return "GPT2LMHeadModel";
    case HfFamily::llama: return "LlamaForCausalLM";
    case HfFamily::mistral: return "MistralForCausalLM";
    case HfFamily::qwen2: return "Qwen2ForCausalLM";
    case HfFamily::qwen3: return "Qwen3ForCausalLM";
  }
  return "";
}
const char* model_type_name(HfFamily family) {
  for (const auto& [f, name] : kModelTypes)
    if (f == family) return name;
  return "";
}

HfFamily family_of(const Json& j, const std::string& source) {
  const std::string type = j.contains("model_type") ? j.at("model_type").get<std::string>() : "";
  for (const auto& [family, name] : kModelTypes)
    if (type == name) return family;
  NF_FAIL(source, ": model_type '", type, "' is not supported (gpt2, llama, mistral, qwen2, qwen3)");
}

models::DecoderLMConfig gpt2_config(const Json& j, const std::string& source) {
  check_known_keys(j, kGpt2Keys, "GPT-2", source);
  NF_CHECK(bool_key(j, "scale_attn_weights", true, source), source, ": scale_attn_weights false is not supported");
  NF_CHECK(!bool_key(j, "scale_attn_by_inverse_layer_idx", false, source), source,
           ": scale_attn_by_inverse_layer_idx true is not supported");
  models::DecoderLMConfig c;
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

// rope_parameters {rope_type, rope_theta, factor, ...} (transformers 5) or rope_theta + rope_scaling
// {type | rope_type, factor, ...} (transformers 4); yarn with its keys as _compute_yarn_parameters reads
// them (original_max_position_embeddings defaults to max_position_embeddings, attention_factor to 0.1 ln s + 1).
void read_llama_rope(const Json& j, models::DecoderLMConfig& c, const std::string& source) {
  Json scaling = j.contains("rope_parameters") ? j.at("rope_parameters") : j.value("rope_scaling", Json());
  c.rope_theta = number_key(j, "rope_theta", 10000.0, source);
  if (scaling.is_null()) return;
  NF_CHECK(scaling.is_object(), source, ": rope scaling ", util::json_excerpt(scaling), " is not an object");
  c.rope_theta = number_key(scaling, "rope_theta", c.rope_theta, source);
  const std::string type = scaling.value("rope_type", scaling.value("type", std::string("default")));
  if (type == "default") return;
  NF_CHECK(type == "linear" || type == "yarn", source, ": rope_type '", type, "' is not supported (default, linear, yarn)");
  c.rope_scaling = type == "yarn" ? nn::RopeScaling::yarn : nn::RopeScaling::linear;
  c.rope_scale_factor = number_key(scaling, "factor", 1.0, source);
  if (type == "linear") return;
  for (const char* key : {"mscale", "mscale_all_dim", "partial_rotary_factor"})
    NF_CHECK(!scaling.contains(key) || scaling.at(key).is_null(), source, ": rope scaling key '", key, "' ",
             util::json_excerpt(scaling.at(key)), " is not supported (yarn with factor, beta_fast, beta_slow, ",
             "attention_factor, original_max_position_embeddings)");
  NF_CHECK(bool_key(scaling, "truncate", true, source), source,
           ": rope scaling key 'truncate' false is not supported (yarn rounds the ramp's bounds)");
  c.rope_original_max_seq_len = int_key(scaling, "original_max_position_embeddings", 0, source);
  // transformers: `beta_fast or 32`, `beta_slow or 1` (0 or null takes the default)
  const double beta_fast = number_key(scaling, "beta_fast", 32.0, source), beta_slow = number_key(scaling, "beta_slow", 1.0, source);
  c.rope_beta_fast = beta_fast == 0 ? 32.0 : beta_fast;
  c.rope_beta_slow = beta_slow == 0 ? 1.0 : beta_slow;
  c.rope_attention_factor = number_key(scaling, "attention_factor", 0.0, source);
}

// The defaults of a LLaMA-family config class where a key is missing (transformers 5.24's
// LlamaConfig needs the sizes; MistralConfig, Qwen2Config and Qwen3Config give all of them).
struct LlamaFamilyDefaults {
  std::optional<int64_t> vocab_size, hidden_size, intermediate_size, num_hidden_layers, num_attention_heads,
      max_position_embeddings;
  std::optional<int64_t> num_key_value_heads;  // unset: num_attention_heads
  std::optional<int64_t> head_dim;             // unset: hidden_size / num_attention_heads
  double rms_norm_eps = 1e-6;
};

LlamaFamilyDefaults defaults_of(HfFamily family) {
  switch (family) {
    case HfFamily::mistral: return {32000, 4096, 14336, 32, 32, 4096 * 32, 8, {}, 1e-6};
    case HfFamily::qwen2: return {151936, 4096, 22016, 32, 32, 32768, 32, {}, 1e-6};
    case HfFamily::qwen3: return {151936, 4096, 22016, 32, 32, 32768, 32, 128, 1e-6};
    default: return {};
  }
}

// A size (vocabulary, widths, layers, heads, positions): positive. (A 0 would not be a model to
// transformers, and to us it would mean "the default", which a written config spells out.)
int64_t size_key(const Json& j, const std::string& key, std::optional<int64_t> fallback, const std::string& source) {
  const int64_t size = fallback ? int_key(j, key, *fallback, source) : int_key(j, key, source);
  NF_CHECK(size > 0, source, ": ", key, " ", size, " must be positive");
  return size;
}

// The most layers a Qwen config may window one by one (window_layers holds a letter per layer).
constexpr int64_t kMaxWindowLayers = int64_t{1} << 20;

// Qwen2 / Qwen3's windowed layers as Qwen2Config.__post_init__ sets them: none unless use_sliding_window
// (then sliding_window, null = none); layer_types when given, else the layers i >= max_window_layers.
// Written into c as sliding_window and window_layers ("" when every layer is windowed).
void read_qwen_windows(const Json& j, models::DecoderLMConfig& c, const std::string& source) {
  if (!bool_key(j, "use_sliding_window", false, source)) return;
  const int64_t window = int_key(j, "sliding_window", 4096, source);
  if (j.contains("sliding_window") && j.at("sliding_window").is_null()) return;
  NF_CHECK(window > 0, source, ": sliding_window ", window, " must be positive (or null)");
  std::string layers;
  const Json types = j.value("layer_types", Json());
  if (!types.is_null()) {
    NF_CHECK(types.is_array() && static_cast<int64_t>(types.size()) == c.n_layers, source, ": layer_types ",
             util::json_excerpt(types), " must list one type per layer (", c.n_layers, ")");
    for (const Json& t : types) {
      const std::string type = t.is_string() ? t.get<std::string>() : t.dump();
      NF_CHECK(type == "full_attention" || type == "sliding_attention", source, ": layer_types holds '", type,
               "', which is not supported (full_attention, sliding_attention)");
      layers += type == "sliding_attention" ? 'S' : 'L';
    }
  } else {
    const int64_t first = std::max<int64_t>(0, int_key(j, "max_window_layers", 28, source));
    if (first >= c.n_layers) return;  // none
    if (first == 0) {                  // every layer, without spelling them out
      c.sliding_window = window;
      return;
    }
    // one letter per layer: bounded before the string is (the config's own bounds come later)
    NF_CHECK(c.n_layers <= kMaxWindowLayers, source, ": num_hidden_layers ", c.n_layers,
             " is beyond the layers a per-layer window takes (at most ", kMaxWindowLayers, ")");
    layers = std::string(static_cast<size_t>(first), 'L') + std::string(static_cast<size_t>(c.n_layers - first), 'S');
  }
  if (layers.find('S') == std::string::npos) return;  // no windowed layer
  c.sliding_window = window;
  if (layers.find('L') != std::string::npos) c.window_layers = layers;  // else every layer, as Mistral
}

// LlamaConfig, MistralConfig, Qwen2Config, Qwen3Config -> our config.
models::DecoderLMConfig llama_family_config(const Json& j, HfFamily family, const std::string& source) {
  const std::set<std::string> qwen3_keys = [] {
    std::set<std::string> keys = kQwen2Keys;
    keys.insert("attention_bias");
    return keys;
  }();
  const char* label = family == HfFamily::llama ? "LLaMA" : family == HfFamily::mistral ? "Mistral"
                      : family == HfFamily::qwen2 ? "Qwen2" : "Qwen3";
  check_known_keys(j,
                   family == HfFamily::llama     ? kLlamaKeys
                   : family == HfFamily::mistral ? kMistralKeys
                   : family == HfFamily::qwen2   ? kQwen2Keys
                                                 : qwen3_keys,
                   label, source);
  const std::string act = j.value("hidden_act", std::string("silu"));
  NF_CHECK(act == "silu", source, ": hidden_act '", act, "' is not supported (silu)");
  // transformers rotates halves whatever it says; true would mean nanotron's other layout
  NF_CHECK(!bool_key(j, "rope_interleaved", false, source), source,
           ": rope_interleaved true is not supported (LlamaForCausalLM rotates halves)");
  NF_CHECK(number_key(j, "pretraining_tp", 1, source) == 1, source, ": pretraining_tp ", util::json_excerpt(j.at("pretraining_tp")),
           " is not supported (1)");
  const LlamaFamilyDefaults d = defaults_of(family);
  models::DecoderLMConfig c;
  c.vocab_size = size_key(j, "vocab_size", d.vocab_size, source);
  c.dim = size_key(j, "hidden_size", d.hidden_size, source);
  c.mlp_hidden = size_key(j, "intermediate_size", d.intermediate_size, source);
  c.n_layers = size_key(j, "num_hidden_layers", d.num_hidden_layers, source);
  c.n_heads = size_key(j, "num_attention_heads", d.num_attention_heads, source);
  c.n_kv_heads = int_key(j, "num_key_value_heads", d.num_key_value_heads.value_or(c.n_heads), source);
  c.head_dim = int_key(j, "head_dim", d.head_dim.value_or(0), source);
  if (c.n_heads > 0 && c.dim % c.n_heads == 0 && c.head_dim == c.dim / c.n_heads)
    c.head_dim = 0;  // the derived width, kept as ours writes it: 0
  c.max_seq_len = size_key(j, "max_position_embeddings", d.max_position_embeddings, source);
  c.norm = nn::NormKind::rmsnorm;
  c.norm_eps = number_key(j, "rms_norm_eps", d.rms_norm_eps, source);
  c.norm_bias = false;
  c.position = nn::PositionKind::rope;
  c.rope_layout = RopeLayout::half;
  read_llama_rope(j, c, source);
  c.mlp = nn::MLPKind::swiglu;
  c.mlp_bias = bool_key(j, "mlp_bias", false, source);
  c.tie_embeddings = bool_key(j, "tie_word_embeddings", false, source);
  switch (family) {
    case HfFamily::mistral:  // every layer windowed; null = none
      c.attention_bias = false;
      c.sliding_window = int_key(j, "sliding_window", 4096, source);
      if (j.contains("sliding_window") && j.at("sliding_window").is_null()) c.sliding_window = 0;
      NF_CHECK(c.sliding_window >= 0, source, ": sliding_window ", c.sliding_window, " must be positive (or null)");
      break;
    case HfFamily::qwen2:  // q, k, v with biases, o without (Qwen2Attention's, whatever the config)
      c.attention_bias = true;
      c.attention_output_bias = false;
      read_qwen_windows(j, c, source);
      break;
    case HfFamily::qwen3:  // q_norm / k_norm: RMSNorm over head_dim with rms_norm_eps, before rotation
      c.attention_bias = bool_key(j, "attention_bias", false, source);
      c.qk_norm = c.qk_norm_weight = true;
      c.qk_norm_eps = c.norm_eps;
      read_qwen_windows(j, c, source);
      break;
    default:
      c.attention_bias = bool_key(j, "attention_bias", false, source);
  }
  return c;
}

// Which HF class can hold `c`; throws naming the first option that none can. RoPE models go to the
// LLaMA family member their options need: learned QK-norm Qwen3, q / k / v biases without o's Qwen2,
// a window on every layer Mistral (per-layer windows: Qwen2 or Qwen3), else LLaMA.
HfFamily family_for(const models::DecoderLMConfig& c) {
  auto need = [](bool ok, const char* cls, const std::string& option, const std::string& value) {
    NF_CHECK(ok, "save_hf: ", option, " ", value, " cannot be expressed by ", cls);
  };
  need(c.position == nn::PositionKind::learned || c.position == nn::PositionKind::rope, "GPT2LMHeadModel or "
       "LlamaForCausalLM", "position", nn::position_kind_name(c.position));
  const bool gpt2 = c.position == nn::PositionKind::learned;
  const bool qkv_bias_only = c.attention_bias && !c.attention_output_bias;
  const HfFamily family = gpt2                                    ? HfFamily::gpt2
                          : c.qk_norm_weight                      ? HfFamily::qwen3
                          : qkv_bias_only                         ? HfFamily::qwen2
                          : c.sliding_window > 0 && !c.attention_bias ? HfFamily::mistral
                                                                  : HfFamily::llama;
  const char* cls = class_name(family);
  need(nanochat_option_set(c).empty(), cls, nanochat_option_set(c), "(nanochat's current GPT)");
  need(c.norm_placement == nn::NormPlacement::pre, cls, "norm_placement", nn::norm_placement_name(c.norm_placement));
  need(!c.embedding_norm, cls, "embedding_norm", "true");
  need(!c.qk_norm || c.qk_norm_weight, cls, "qk_norm", "true");  // parameter-free: nanochat
  need(c.window_pattern.empty(), cls, "window_pattern", "\"" + c.window_pattern + "\"");
  need(c.logit_softcap == 0.0, cls, "logit_softcap", std::to_string(c.logit_softcap));
  need(!c.moe.has_value(), cls, "moe", "(set)");
  if (gpt2) {
    need(c.sliding_window == 0, cls, "sliding_window", std::to_string(c.sliding_window));
    need(c.norm == nn::NormKind::layernorm && c.norm_bias, cls, "norm", nn::norm_kind_name(c.norm));
    need(c.mlp == nn::MLPKind::gelu_tanh || c.mlp == nn::MLPKind::gelu || c.mlp == nn::MLPKind::relu, cls, "mlp",
         nn::mlp_kind_name(c.mlp));
    need(c.attention_bias && c.attention_output_bias && c.mlp_bias, cls, "attention_bias / attention_output_bias / mlp_bias", "false");
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
  if (family == HfFamily::llama) {
    need(c.sliding_window == 0, cls, "sliding_window", std::to_string(c.sliding_window) + " (with attention biases)");
    return family;
  }
  need(!c.mlp_bias, cls, "mlp_bias", "true");
  if (family == HfFamily::qwen3) {
    need(c.qk_norm_eps == c.norm_eps, cls, "qk_norm_eps", std::to_string(c.qk_norm_eps) + " (other than norm_eps)");
    need(!qkv_bias_only, cls, "attention_output_bias", "false");
  }
  need(family != HfFamily::mistral || c.window_layers.empty(), cls, "window_layers", "\"" + c.window_layers + "\"");
  return family;
}

NameMap gpt2_name_map(const models::DecoderLMConfig& c, int64_t hidden) {
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

NameMap llama_name_map(const models::DecoderLMConfig& c, int64_t hidden) {
  const nn::AttentionConfig a = models::block_config(c).attention;  // resolved: head_dim, n_kv_heads
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
    linear("self_attn.o_proj", "attn.o_proj", D, q, c.attention_bias && c.attention_output_bias);
    if (c.qk_norm_weight) {  // Qwen3
      map.push_back({h + "self_attn.q_norm.weight", {hd}, false, {o + "attn.q_norm.weight"}});
      map.push_back({h + "self_attn.k_norm.weight", {hd}, false, {o + "attn.k_norm.weight"}});
    }
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
std::set<std::string> ignored_names(HfFamily family, const models::DecoderLMConfig& c) {
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

NameMap name_map(HfFamily family, const models::DecoderLMConfig& c, int64_t hidden) {
  return family == HfFamily::gpt2 ? gpt2_name_map(c, hidden) : llama_name_map(c, hidden);
}

}  // namespace

NameMap hf_decoder_name_map(const models::DecoderLMConfig& config) {
  return name_map(family_for(config), config, nn::mlp_hidden_dim(models::block_config(config).mlp));
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

models::DecoderLMConfig config_from_hf_json(const std::string& json_text, const std::string& source) {
  return with_json_errors(source, [&] {
    const Json j = parse_json_object(json_text, source);
    const HfFamily family = family_of(j, source);
    models::DecoderLMConfig c = family == HfFamily::gpt2 ? gpt2_config(j, source) : llama_family_config(j, family, source);
    c.name = fs::path(source).parent_path().filename().string();
    models::validate_model_config(c, source);
    return c;
  });
}

std::string hf_json_from_config(const models::DecoderLMConfig& c, int64_t mlp_hidden) {
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
    const HfFamily family = family_for(c);
    const nn::AttentionConfig a = models::block_config(c).attention;  // resolved: head_dim, n_kv_heads
    const char* rope_type = c.rope_scaling == nn::RopeScaling::linear ? "linear"
                            : c.rope_scaling == nn::RopeScaling::yarn ? "yarn"
                                                                      : "default";
    nlohmann::ordered_json rope = {{"rope_type", rope_type}, {"rope_theta", c.rope_theta}};
    if (c.rope_scaling != nn::RopeScaling::none) rope["factor"] = c.rope_scale_factor;
    if (c.rope_scaling == nn::RopeScaling::yarn) {  // the keys left at 0 take the same defaults in transformers
      if (c.rope_original_max_seq_len) rope["original_max_position_embeddings"] = c.rope_original_max_seq_len;
      rope["beta_fast"] = c.rope_beta_fast;
      rope["beta_slow"] = c.rope_beta_slow;
      if (c.rope_attention_factor > 0) rope["attention_factor"] = c.rope_attention_factor;
    }
    j = {{"architectures", {class_name(family)}}, {"model_type", model_type_name(family)}, {"vocab_size", c.vocab_size},
         {"hidden_size", c.dim}, {"intermediate_size", mlp_hidden}, {"num_hidden_layers", c.n_layers},
         {"num_attention_heads", c.n_heads}, {"num_key_value_heads", a.n_kv_heads}};
    // Qwen2Config has no head_dim of its own (its attention reads one when given)
    if (family != HfFamily::qwen2 || c.head_dim != 0) j["head_dim"] = a.head_dim;
    j["max_position_embeddings"] = c.max_seq_len;
    j["rms_norm_eps"] = c.norm_eps;
    j["rope_parameters"] = rope;
    if (family == HfFamily::llama || family == HfFamily::qwen3) j["attention_bias"] = c.attention_bias;
    if (family == HfFamily::llama) j["mlp_bias"] = c.mlp_bias;
    if (family == HfFamily::mistral) j["sliding_window"] = c.sliding_window > 0 ? nlohmann::ordered_json(c.sliding_window) : nlohmann::ordered_json();
    if (family == HfFamily::qwen2 || family == HfFamily::qwen3) {
      // Qwen2Config's window keys: max_window_layers for none (all layers) or every layer (0), and
      // per-layer windows as layer_types, which then take precedence
      const size_t first = c.window_layers.find('S');
      j["use_sliding_window"] = c.sliding_window > 0;
      j["sliding_window"] = c.sliding_window > 0 ? nlohmann::ordered_json(c.sliding_window) : nlohmann::ordered_json();
      j["max_window_layers"] = c.sliding_window == 0 ? c.n_layers : c.window_layers.empty() ? 0 : int64_t(first);
      if (!c.window_layers.empty()) {
        std::vector<std::string> types;
        for (const char kind : c.window_layers) types.push_back(kind == 'S' ? "sliding_attention" : "full_attention");
        j["layer_types"] = types;
      }
    }
    j["hidden_act"] = "silu";
    j["attention_dropout"] = c.dropout;
    j["tie_word_embeddings"] = c.tie_embeddings;
    j["dtype"] = "float32";
  }
  return j.dump(2) + "\n";
}

nn::StateDict state_from_hf(const models::DecoderLMConfig& config, const std::map<std::string, Tensor>& tensors,
                            const std::string& source) {
  const HfFamily family = family_for(config);
  const int64_t hidden = nn::mlp_hidden_dim(models::block_config(config).mlp);
  return import_tensors(name_map(family, config, hidden), tensors, ignored_names(family, config), source);
}

std::shared_ptr<models::DecoderLM> load_hf(const std::string& dir) {
  NF_CHECK(is_hf_folder(dir), dir, ": not a Hugging Face model folder (needs ", kConfigFile, " and ", kWeightsFile,
           ", ", kIndexFile, " or ", kTorchWeightsFile, ")");
  const fs::path config_path = fs::path(dir) / kConfigFile;
  const models::DecoderLMConfig config = config_from_hf_json(read_text(config_path), config_path.string());
  // the tensors are checked against the config before the model is built, so that a config far
  // larger than its files is an error naming the tensors, not an allocation sized by the config
  const nn::StateDict state = state_from_hf(config, read_folder_tensors(dir, kWeightsFile, kIndexFile), dir);
  auto model = std::make_shared<models::DecoderLM>(config);
  model->load_state_dict(state);
  return model;
}

void save_hf(const models::DecoderLM& model, const std::string& dir, int64_t max_shard_bytes) {
  const models::DecoderLMConfig& c = model.config();
  const HfFamily family = family_for(c);
  const RopeLayout layout = family == HfFamily::gpt2 ? c.rope_layout : RopeLayout::half;  // the LLaMA family: half
  const nn::StateDict state = with_rope_layout(model.state_dict(), c, layout);
  const int64_t hidden = nn::mlp_hidden_dim(models::block_config(c).mlp);
  fs::create_directories(dir);
  write_folder_tensors(dir, export_tensors(name_map(family, c, hidden), state), max_shard_bytes);
  write_text_atomic(fs::path(dir) / kConfigFile, hf_json_from_config(c, hidden));
}

}  // namespace nf::formats
