// MiniMind2 folders in both forms (see minimind_checkpoint.h): 002's LMConfig and the later Hugging
// Face MiniMindConfig, each translated to and from DecoderLMConfig, and one name map with each form's names.
#include "nanoformer/formats/minimind_checkpoint.h"

#include <algorithm>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstdint>
#include <numbers>

#include "formats/folder_io.h"
#include "formats/name_map.h"
#include "formats/nanochat_options.h"
#include "formats/rope_rows.h"
#include "nanoformer/core/error.h"
#include "util/json_input.h"

namespace nf::formats {
namespace {

namespace fs = std::filesystem;

const std::set<std::string> kMiniMindKeys = {
    "dim", "n_layers", "n_heads", "n_kv_heads", "vocab_size", "hidden_dim", "multiple_of", "norm_eps",
    "max_seq_len", "rope_theta", "dropout", "flash_attn", "use_moe", "num_experts_per_tok", "n_routed_experts",
    "n_shared_experts", "scoring_func", "aux_loss_alpha", "seq_aux", "norm_topk_prob", "tie_word_embeddings"};
const std::set<std::string> kMiniMindHfKeys = {
    "hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "vocab_size",
    "intermediate_size", "max_position_embeddings", "rms_norm_eps", "rope_theta", "inference_rope_scaling",
    "rope_scaling", "dropout", "hidden_act", "flash_attn", "use_moe", "num_experts_per_tok", "n_routed_experts",
    "n_shared_experts", "scoring_func", "aux_loss_alpha", "seq_aux", "norm_topk_prob", "tie_word_embeddings"};
// Keys of MiniMind's current form (per-head q_norm / k_norm, renamed MoE keys): a config with one is that form.
const char* const kNewerFormKeys[] = {"head_dim", "num_experts", "moe_intermediate_size", "router_aux_loss_coef"};
// The current form's keys (MiniMindConfig at jingyaogong/minimind@d65ef2c); rope_scaling / rope_parameters
// are read by nobody there (MiniMindConfig sets rope_scaling from inference_rope_scaling).
const std::set<std::string> kMiniMindCurrentKeys = {
    "hidden_size", "num_hidden_layers", "use_moe", "dropout", "vocab_size", "flash_attn", "num_attention_heads",
    "num_key_value_heads", "head_dim", "hidden_act", "intermediate_size", "max_position_embeddings", "rms_norm_eps",
    "rope_theta", "tie_word_embeddings", "inference_rope_scaling", "rope_scaling", "rope_parameters", "num_experts",
    "num_experts_per_tok", "moe_intermediate_size", "norm_topk_prob", "router_aux_loss_coef"};
// MiniMind's YaRN with inference_rope_scaling (d65ef2c's precompute_freqs_cis): fixed values, the ramp
// applied when max_position_embeddings exceeds the original 2048.
constexpr double kMiniMindYarnFactor = 16.0, kMiniMindYarnBetaFast = 32.0, kMiniMindYarnBetaSlow = 1.0;
constexpr int64_t kMiniMindYarnOriginal = 2048;
// Keys only the 2025 form has (the current form renamed or dropped them).
const char* const kOlderFormKeys[] = {"n_routed_experts", "n_shared_experts", "scoring_func", "aux_loss_alpha", "seq_aux"};
// The q / k norm tensors that only the current form has.
const std::string kCurrentFormTensor = "model.layers.0.self_attn.q_norm.weight";

// The tensor names of one form; the map's shape (attention, SwiGLU or gate + routed + shared experts) is common.
struct FormNames {
  std::string embed, layers, attn_norm, q, k, v, o, mlp_norm, mlp, w1, w2, w3, norm, head, q_norm, k_norm;
  RopeLayout rope_layout;     // the layout the form's RoPE rotates in
  bool shared_experts_list;  // shared_experts.S.* (a ModuleList); else one FeedForward, shared_experts.*
};

const FormNames& names_of(MiniMindForm form) {
  static const FormNames lmconfig{"tok_embeddings", "layers.", "attention_norm", "attention.wq", "attention.wk",
                                  "attention.wv", "attention.wo", "ffn_norm", "feed_forward", "w1", "w2", "w3",
                                  "norm", "output", "", "", RopeLayout::interleaved, false};
  static const FormNames hf{"model.embed_tokens", "model.layers.", "input_layernorm", "self_attn.q_proj",
                            "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj", "post_attention_layernorm",
                            "mlp", "gate_proj", "down_proj", "up_proj", "model.norm", "lm_head", "", "",
                            RopeLayout::half, true};
  static const FormNames current = [] {
    FormNames names = hf;
    names.q_norm = "self_attn.q_norm", names.k_norm = "self_attn.k_norm";
    return names;
  }();
  return form == MiniMindForm::current ? current : form == MiniMindForm::hf ? hf : lmconfig;
}

// n_shared_experts. The HF form (MiniMindConfig, default 1): a count (a bool: true = 1). 002's form
// (LMConfig at jingyaogong/minimind@04b56ea, default True): MOEFeedForward builds one shared
// FeedForward whenever the value is not None, so any value (even false or 0) is one, null none.
int64_t shared_experts(const Json& j, MiniMindForm form, const std::string& source) {
  if (form == MiniMindForm::lmconfig) {
    if (!j.contains("n_shared_experts")) return 1;
    const Json& v = j.at("n_shared_experts");
    NF_CHECK(v.is_null() || v.is_boolean() || v.is_number_integer(), source, ": 'n_shared_experts' is ",
             util::json_excerpt(v), ", expected null, true / false or an integer");
    return v.is_null() ? 0 : 1;
  }
  if (j.contains("n_shared_experts") && j.at("n_shared_experts").is_boolean())
    return j.at("n_shared_experts").get<bool>() ? 1 : 0;
  return int_key(j, "n_shared_experts", 1, source);
}

// MiniMindConfig's aux_loss_alpha for our alpha_ours = alpha / k (see minimind_base): of the doubles
// next to alpha_ours * k that read back as alpha_ours exactly, the one with the shortest decimal
// form (so a file's 0.11 with k = 5 is written back 0.11, not 0.10999999999999999).
double minimind_hf_alpha(double ours, int64_t k) {
  const double kd = static_cast<double>(k), product = ours * kd;
  double best = product;
  size_t best_digits = SIZE_MAX;
  double candidate = product;
  for (int i = 0; i < 4; ++i) candidate = std::nextafter(candidate, -HUGE_VAL);
  for (int i = 0; i <= 8; ++i, candidate = std::nextafter(candidate, HUGE_VAL)) {
    if (candidate / kd != ours) continue;
    char text[64];
    const auto end = std::to_chars(text, text + sizeof text, candidate).ptr;
    const size_t digits = static_cast<size_t>(end - text);
    if (digits < best_digits || (digits == best_digits && std::abs(candidate - product) < std::abs(best - product)))
      best = candidate, best_digits = digits;
  }
  return best;
}

// What both forms share: RMSNorm, RoPE, SwiGLU without biases, the MoE keys (use_moe, ...).
models::DecoderLMConfig minimind_base(const Json& j, MiniMindForm form, const std::string& source) {
  NF_CHECK(j.value("model_type", std::string("minimind")) == "minimind", source, ": model_type '",
           j.value("model_type", std::string()), "' is not minimind");
  models::DecoderLMConfig c;
  c.name = fs::path(source).parent_path().filename().string();
  c.norm = nn::NormKind::rmsnorm;
  c.norm_bias = false;
  c.position = nn::PositionKind::rope;
  c.rope_layout = names_of(form).rope_layout;
  c.rope_theta = number_key(j, "rope_theta", 1e6, source);
  c.dropout = number_key(j, "dropout", 0.0, source);
  c.mlp = nn::MLPKind::swiglu;
  c.attention_bias = false;
  c.mlp_bias = false;
  if (!bool_key(j, "use_moe", false, source)) return c;
  const std::string scoring = j.value("scoring_func", std::string("softmax"));
  NF_CHECK(scoring == "softmax", source, ": scoring_func '", scoring, "' is not supported (softmax)");
  nn::MoEConfig moe;
  moe.n_experts = int_key(j, "n_routed_experts", 4, source);
  moe.top_k = int_key(j, "num_experts_per_tok", 2, source);
  moe.n_shared_experts = shared_experts(j, form, source);
  moe.routing = nn::MoERouting::softmax_then_topk;
  moe.norm_topk_prob = bool_key(j, "norm_topk_prob", true, source);
  moe.aux_loss_alpha = number_key(j, "aux_loss_alpha", 0.1, source);
  // MiniMindConfig's balance loss counts the fraction of the T k picks, ours (002) of the T tokens:
  // alpha_ours = alpha / k gives the same loss.
  if (form == MiniMindForm::hf) moe.aux_loss_alpha /= static_cast<double>(moe.top_k);
  moe.seq_aux = bool_key(j, "seq_aux", true, source);
  c.moe = moe;
  return c;
}

void check_expressible(const models::DecoderLMConfig& c, MiniMindForm form) {
  const char* writer = form == MiniMindForm::lmconfig ? "save_minimind" : "save_minimind_hf";
  const char* format = form == MiniMindForm::hf        ? "a MiniMind Hugging Face config"
                       : form == MiniMindForm::current ? "MiniMind's current config (d65ef2c)"
                                                       : "a MiniMind config";
  auto need = [&](bool ok, const std::string& option, const std::string& value) {
    NF_CHECK(ok, writer, ": ", option, " ", value, " cannot be expressed by ", format);
  };
  need(nanochat_option_set(c).empty(), nanochat_option_set(c), "(nanochat's current GPT)");
  need(c.norm == nn::NormKind::rmsnorm, "norm", nn::norm_kind_name(c.norm));
  need(c.norm_placement == nn::NormPlacement::pre, "norm_placement", nn::norm_placement_name(c.norm_placement));
  need(c.position == nn::PositionKind::rope, "position", nn::position_kind_name(c.position));
  need(c.rope_layout == RopeLayout::interleaved || c.rope_layout == RopeLayout::half, "rope_layout",
       rope_layout_name(c.rope_layout));
  need(c.mlp == nn::MLPKind::swiglu, "mlp", nn::mlp_kind_name(c.mlp));
  need(!c.attention_bias && !c.mlp_bias, "attention_bias / mlp_bias", "true");
  need(!c.embedding_norm, "embedding_norm", "true");
  need(c.sliding_window == 0, "sliding_window", std::to_string(c.sliding_window));
  need(c.logit_softcap == 0.0, "logit_softcap", std::to_string(c.logit_softcap));
  if (form == MiniMindForm::current) {  // learned q / k norms, head_dim, untied heads, YaRN as MiniMind fixes it
    need(c.qk_norm && c.qk_norm_weight, "qk_norm_weight", "false (the form's q_norm / k_norm have weights)");
    need(c.qk_norm_eps == c.norm_eps, "qk_norm_eps", std::to_string(c.qk_norm_eps) + " (other than norm_eps)");
    const bool minimind_yarn = c.rope_scaling == nn::RopeScaling::yarn && c.rope_scale_factor == kMiniMindYarnFactor &&
                               c.rope_original_max_seq_len == kMiniMindYarnOriginal &&
                               c.rope_beta_fast == kMiniMindYarnBetaFast && c.rope_beta_slow == kMiniMindYarnBetaSlow &&
                               c.rope_attention_factor == 1.0 && c.max_seq_len > kMiniMindYarnOriginal;
    need(c.rope_scaling == nn::RopeScaling::none || minimind_yarn, "rope_scaling",
         std::string(c.rope_scaling == nn::RopeScaling::yarn ? "yarn" : "linear / ntk") +
             " (other than YaRN x16 from 2048 positions, attention factor 1)");
    if (c.moe) {
      need(c.moe->n_shared_experts == 0, "moe.n_shared_experts", std::to_string(c.moe->n_shared_experts));
      need(c.moe->routing == nn::MoERouting::softmax_then_topk ||
               (c.moe->routing == nn::MoERouting::topk_then_softmax && c.moe->top_k == 1),
           "moe.routing", std::string(models::moe_routing_name(c.moe->routing)) + " with top_k " + std::to_string(c.moe->top_k));
      need(!c.moe->gate_bias, "moe.gate_bias", "true");
      need(!c.moe->seq_aux || c.moe->aux_loss_alpha == 0, "moe.seq_aux", "true");
    }
    return;
  }
  need(c.rope_scaling == nn::RopeScaling::none, "rope_scaling", "(set)");
  need(!c.qk_norm, "qk_norm", "true");
  need(c.head_dim == 0 || c.head_dim * c.n_heads == c.dim, "head_dim", std::to_string(c.head_dim));
  if (form == MiniMindForm::hf) need(c.tie_embeddings, "tie_embeddings", "false");
  if (form == MiniMindForm::lmconfig && c.moe)  // 04b56ea's MOEFeedForward: one shared FeedForward or none
    need(c.moe->n_shared_experts <= 1, "moe.n_shared_experts", std::to_string(c.moe->n_shared_experts));
  if (c.moe) {
    need(c.moe->routing == nn::MoERouting::softmax_then_topk, "moe.routing", models::moe_routing_name(c.moe->routing));
    need(!c.moe->gate_bias, "moe.gate_bias", "true");
  }
}

NameMap minimind_name_map(const models::DecoderLMConfig& c, int64_t hidden, MiniMindForm form) {
  const FormNames& names = names_of(form);
  const nn::AttentionConfig a = models::block_config(c).attention;  // resolved: head_dim, n_kv_heads
  const int64_t D = c.dim, hd = a.head_dim, kv = a.n_kv_heads * hd, q = c.n_heads * hd;
  NameMap map{{names.embed + ".weight", {c.vocab_size, D}, false, {"tok_embeddings.weight"}}};
  for (int64_t l = 0; l < c.n_layers; ++l) {
    const std::string theirs = names.layers + std::to_string(l) + ".", ours = "layers." + std::to_string(l) + ".";
    auto add = [&](const std::string& their_name, const std::string& our_name, const Shape& shape) {
      map.push_back({theirs + their_name + ".weight", shape, false, {ours + our_name + ".weight"}});
    };
    auto swiglu = [&](const std::string& their_mlp, const std::string& our_mlp) {
      add(their_mlp + "." + names.w1, our_mlp + ".w1", {hidden, D});
      add(their_mlp + "." + names.w2, our_mlp + ".w2", {D, hidden});
      add(their_mlp + "." + names.w3, our_mlp + ".w3", {hidden, D});
    };
    add(names.attn_norm, "attn_norm", {D});
    add(names.q, "attn.q_proj", {q, D});
    add(names.k, "attn.k_proj", {kv, D});
    add(names.v, "attn.v_proj", {kv, D});
    add(names.o, "attn.o_proj", {D, q});
    if (!names.q_norm.empty()) {
      add(names.q_norm, "attn.q_norm", {hd});
      add(names.k_norm, "attn.k_norm", {hd});
    }
    add(names.mlp_norm, "mlp_norm", {D});
    if (!c.moe) {
      swiglu(names.mlp, "mlp");
      continue;
    }
    add(names.mlp + ".gate", "mlp.gate", {c.moe->n_experts, D});
    for (int64_t e = 0; e < c.moe->n_experts; ++e)
      swiglu(names.mlp + ".experts." + std::to_string(e), "mlp.experts." + std::to_string(e));
    for (int64_t s = 0; s < c.moe->n_shared_experts; ++s) {
      std::string shared = names.mlp + ".shared_experts";
      if (names.shared_experts_list) shared.append(".").append(std::to_string(s));
      swiglu(shared, "mlp.shared_experts." + std::to_string(s));
    }
  }
  map.push_back({names.norm + ".weight", {D}, false, {"norm.weight"}});
  if (!c.tie_embeddings) map.push_back({names.head + ".weight", {c.vocab_size, D}, false, {"output.weight"}});
  return map;
}

// Tensors that may sit in a folder without being parameters: 002's causal-mask buffers, a tied head.
std::set<std::string> ignored_names(const models::DecoderLMConfig& c, MiniMindForm form) {
  std::set<std::string> ignored;
  if (form == MiniMindForm::lmconfig)
    for (int64_t l = 0; l < c.n_layers; ++l) ignored.insert("layers." + std::to_string(l) + ".attention.mask");
  if (c.tie_embeddings) ignored.insert(names_of(form).head + ".weight");
  return ignored;
}

void save_form(const models::DecoderLM& model, const std::string& dir, MiniMindForm form, int64_t max_shard_bytes) {
  const models::DecoderLMConfig& c = model.config();
  const int64_t hidden = nn::mlp_hidden_dim(models::block_config(c).mlp);
  const std::string json = form == MiniMindForm::current ? minimind_current_json_from_config(c, hidden)
                           : form == MiniMindForm::hf    ? minimind_hf_json_from_config(c, hidden)
                                                         : minimind_json_from_config(c);
  const RopeLayout layout = names_of(form).rope_layout;
  const nn::StateDict state = with_rope_layout(model.state_dict(), c, layout);
  fs::create_directories(dir);
  write_folder_tensors(dir, export_tensors(minimind_name_map(c, hidden, form), state), max_shard_bytes);
  write_text_atomic(fs::path(dir) / kConfigFile, json);
}

}  // namespace

bool is_minimind_folder(const std::string& path) {
  const fs::path config = fs::path(path) / kConfigFile;
  if (!fs::is_directory(path) || !fs::exists(config)) return false;
  const Json j = Json::parse(read_text(config), nullptr, false);
  return j.is_object() && j.contains("model_type") && j.at("model_type") == "minimind";
}

MiniMindForm minimind_folder_form(const std::string& dir) {
  const Json j = Json::parse(read_text(fs::path(dir) / kConfigFile), nullptr, false);
  if (!j.is_object() || !j.contains("hidden_size")) return MiniMindForm::lmconfig;
  for (const char* key : kNewerFormKeys)
    if (j.contains(key)) return MiniMindForm::current;
  return MiniMindForm::hf;
}

models::DecoderLMConfig config_from_minimind_json(const std::string& json_text, const std::string& source) {
  return with_json_errors(source, [&] {
    const Json j = parse_json_object(json_text, source);
    check_known_keys(j, kMiniMindKeys, "MiniMind", source);
    models::DecoderLMConfig c = minimind_base(j, MiniMindForm::lmconfig, source);
    // a missing key takes LMConfig's default (04b56ea): save_pretrained leaves out keys at their default
    c.dim = int_key(j, "dim", 512, source);
    c.n_layers = int_key(j, "n_layers", 8, source);
    c.n_heads = int_key(j, "n_heads", 8, source);
    // Attention: n_kv_heads None (null) means n_heads; the default is 2
    c.n_kv_heads = j.contains("n_kv_heads") ? int_key(j, "n_kv_heads", c.n_heads, source) : 2;
    c.vocab_size = int_key(j, "vocab_size", 6400, source);
    c.mlp_hidden = int_key(j, "hidden_dim", 0, source);
    c.mlp_multiple_of = int_key(j, "multiple_of", 64, source);
    c.norm_eps = number_key(j, "norm_eps", 1e-5, source);
    c.max_seq_len = int_key(j, "max_seq_len", 8192, source);
    c.tie_embeddings = bool_key(j, "tie_word_embeddings", true, source);
    models::validate_model_config(c, source);
    return c;
  });
}

models::DecoderLMConfig config_from_minimind_hf_json(const std::string& json_text, const std::string& source) {
  return with_json_errors(source, [&] {
    const Json j = parse_json_object(json_text, source);
    for (const char* key : kNewerFormKeys)
      NF_CHECK(!j.contains(key), source, ": config key '", key, "' belongs to MiniMind's current form (q_norm / k_norm, ",
               "num_experts), which config_from_minimind_current_json reads");
    check_known_keys(j, kMiniMindHfKeys, "MiniMind (Hugging Face form)", source);
    NF_CHECK(!bool_key(j, "inference_rope_scaling", false, source), source,
             ": inference_rope_scaling true (YaRN rope scaling) is not supported");
    NF_CHECK(!j.contains("rope_scaling") || j.at("rope_scaling").is_null(), source, ": rope_scaling ",
             util::json_excerpt(j.value("rope_scaling", Json())), " (YaRN) is not supported");
    NF_CHECK(bool_key(j, "tie_word_embeddings", true, source), source,
             ": tie_word_embeddings false is not supported (MiniMindForCausalLM always ties lm_head to embed_tokens)");
    const std::string act = j.value("hidden_act", std::string("silu"));
    NF_CHECK(act == "silu", source, ": hidden_act '", act, "' is not supported (silu)");
    models::DecoderLMConfig c = minimind_base(j, MiniMindForm::hf, source);
    c.dim = int_key(j, "hidden_size", source);
    c.n_layers = int_key(j, "num_hidden_layers", 8, source);
    c.n_heads = int_key(j, "num_attention_heads", 8, source);
    c.n_kv_heads = j.contains("num_key_value_heads") ? int_key(j, "num_key_value_heads", c.n_heads, source) : 2;
    c.vocab_size = int_key(j, "vocab_size", 6400, source);
    c.mlp_hidden = int_key(j, "intermediate_size", 0, source);
    c.mlp_multiple_of = 64;
    c.norm_eps = number_key(j, "rms_norm_eps", 1e-5, source);
    c.max_seq_len = int_key(j, "max_position_embeddings", 32768, source);
    c.tie_embeddings = true;
    models::validate_model_config(c, source);
    // missing or null: 8/3 hidden_size rounded up to 64, as MiniMindConfig derives it, spelled out
    // (so that the config read is the config its written form reads as)
    if (c.mlp_hidden == 0) c.mlp_hidden = nn::mlp_hidden_dim(models::block_config(c).mlp);
    return c;
  });
}

models::DecoderLMConfig config_from_minimind_current_json(const std::string& json_text, const std::string& source) {
  return with_json_errors(source, [&] {
    const Json j = parse_json_object(json_text, source);
    NF_CHECK(j.value("model_type", std::string("minimind")) == "minimind", source, ": model_type '",
             j.value("model_type", std::string()), "' is not minimind");
    check_known_keys(j, kMiniMindCurrentKeys, "MiniMind (current form)", source);
    const std::string act = j.value("hidden_act", std::string("silu"));
    NF_CHECK(act == "silu", source, ": hidden_act '", act, "' is not supported (silu)");
    // a missing key takes MiniMindConfig's default at d65ef2c
    models::DecoderLMConfig c;
    c.name = fs::path(source).parent_path().filename().string();
    c.dim = int_key(j, "hidden_size", 768, source);
    c.n_layers = int_key(j, "num_hidden_layers", 8, source);
    c.n_heads = int_key(j, "num_attention_heads", 8, source);
    NF_CHECK(c.dim > 0 && c.n_heads > 0, source, ": hidden_size ", c.dim, " and num_attention_heads ", c.n_heads,
             " must be positive");
    c.n_kv_heads = j.contains("num_key_value_heads") ? int_key(j, "num_key_value_heads", c.n_heads, source) : 4;
    c.head_dim = int_key(j, "head_dim", c.dim / c.n_heads, source);
    c.vocab_size = int_key(j, "vocab_size", 6400, source);
    c.max_seq_len = int_key(j, "max_position_embeddings", 32768, source);
    c.norm = nn::NormKind::rmsnorm;
    c.norm_bias = false;
    c.norm_eps = number_key(j, "rms_norm_eps", 1e-6, source);
    c.qk_norm = c.qk_norm_weight = true;  // q_norm / k_norm: RMSNorm(head_dim, rms_norm_eps) before RoPE
    c.qk_norm_eps = c.norm_eps;
    c.position = nn::PositionKind::rope;
    c.rope_layout = RopeLayout::half;
    c.rope_theta = number_key(j, "rope_theta", 1e6, source);
    c.dropout = number_key(j, "dropout", 0.0, source);
    c.mlp = nn::MLPKind::swiglu;
    c.attention_bias = c.attention_output_bias = c.mlp_bias = false;
    c.tie_embeddings = bool_key(j, "tie_word_embeddings", true, source);
    // intermediate_size: ceil(hidden_size pi / 64) 64 when missing; the experts' moe_intermediate_size
    const int64_t derived =  // (a width past 2^40 is refused by validation below)
        c.dim < (int64_t{1} << 40) ? static_cast<int64_t>(std::ceil(static_cast<double>(c.dim) * std::numbers::pi / 64.0)) * 64 : 0;
    const int64_t dense_hidden = int_key(j, "intermediate_size", derived, source);
    const bool use_moe = bool_key(j, "use_moe", false, source);
    c.mlp_hidden = use_moe ? int_key(j, "moe_intermediate_size", dense_hidden, source) : dense_hidden;
    if (use_moe) {
      nn::MoEConfig moe;
      moe.n_experts = int_key(j, "num_experts", 4, source);
      moe.top_k = int_key(j, "num_experts_per_tok", 1, source);
      moe.norm_topk_prob = bool_key(j, "norm_topk_prob", true, source);
      // softmax, top-k, renormalised when norm_topk_prob even for k = 1 (weight 1: softmax of the one chosen logit)
      moe.routing = moe.top_k == 1 && moe.norm_topk_prob ? nn::MoERouting::topk_then_softmax
                                                        : nn::MoERouting::softmax_then_topk;
      moe.n_shared_experts = 0;
      moe.aux_loss_alpha = number_key(j, "router_aux_loss_coef", 5e-4, source);  // E sum_i f_i P_i over the batch
      moe.seq_aux = false;
      c.moe = moe;
    }
    if (bool_key(j, "inference_rope_scaling", false, source) && c.max_seq_len > kMiniMindYarnOriginal) {
      c.rope_scaling = nn::RopeScaling::yarn;
      c.rope_scale_factor = kMiniMindYarnFactor;
      c.rope_original_max_seq_len = kMiniMindYarnOriginal;
      c.rope_beta_fast = kMiniMindYarnBetaFast;
      c.rope_beta_slow = kMiniMindYarnBetaSlow;
      c.rope_attention_factor = 1.0;
      // MiniMind ends the ramp at head_dim / 2 - 1, transformers (ours) at head_dim - 1: equal unless the
      // unclamped end passes head_dim / 2 - 1
      const double end = std::ceil(static_cast<double>(c.head_dim) * std::log(kMiniMindYarnOriginal / (kMiniMindYarnBetaSlow * 2.0 * std::numbers::pi)) /
                                   (2.0 * std::log(c.rope_theta)));
      NF_CHECK(end <= static_cast<double>(c.head_dim / 2 - 1), source, ": inference_rope_scaling with rope_theta ",
               c.rope_theta, " and head_dim ", c.head_dim, " is not supported (MiniMind's YaRN ramp ends at ",
               c.head_dim / 2 - 1, " where transformers' ends at ", end, ")");
    }
    models::validate_model_config(c, source);
    return c;
  });
}

std::string minimind_json_from_config(const models::DecoderLMConfig& c) {
  check_expressible(c, MiniMindForm::lmconfig);
  nlohmann::ordered_json j = {
      {"model_type", "minimind"}, {"dim", c.dim}, {"n_layers", c.n_layers}, {"n_heads", c.n_heads},
      {"n_kv_heads", models::block_config(c).attention.n_kv_heads}, {"vocab_size", c.vocab_size},
      {"hidden_dim", c.mlp_hidden ? Json(c.mlp_hidden) : Json(nullptr)}, {"multiple_of", c.mlp_multiple_of}, {"norm_eps", c.norm_eps},
      {"max_seq_len", c.max_seq_len}, {"rope_theta", c.rope_theta}, {"dropout", c.dropout}, {"flash_attn", true},
      {"use_moe", c.moe.has_value()}, {"tie_word_embeddings", c.tie_embeddings}};
  if (c.moe) {
    j["num_experts_per_tok"] = c.moe->top_k;
    j["n_routed_experts"] = c.moe->n_experts;
    j["n_shared_experts"] = c.moe->n_shared_experts ? Json(true) : Json(nullptr);  // LMConfig: None = no shared expert
    j["scoring_func"] = "softmax";
    j["aux_loss_alpha"] = c.moe->aux_loss_alpha;
    j["seq_aux"] = c.moe->seq_aux;
    j["norm_topk_prob"] = c.moe->norm_topk_prob;
  }
  return j.dump(2) + "\n";
}

std::string minimind_hf_json_from_config(const models::DecoderLMConfig& c, int64_t mlp_hidden) {
  check_expressible(c, MiniMindForm::hf);
  // MiniMindConfig writes its MoE keys for dense models too (with its defaults)
  const nn::MoEConfig moe = c.moe ? *c.moe : nn::MoEConfig{.n_experts = 4, .top_k = 2, .n_shared_experts = 1};
  nlohmann::ordered_json j = {
      {"architectures", {"MiniMindForCausalLM"}}, {"model_type", "minimind"}, {"hidden_size", c.dim},
      {"num_hidden_layers", c.n_layers}, {"num_attention_heads", c.n_heads},
      {"num_key_value_heads", models::block_config(c).attention.n_kv_heads}, {"vocab_size", c.vocab_size},
      {"intermediate_size", mlp_hidden}, {"max_position_embeddings", c.max_seq_len}, {"rms_norm_eps", c.norm_eps},
      {"rope_theta", c.rope_theta}, {"inference_rope_scaling", false}, {"hidden_act", "silu"},
      {"dropout", c.dropout}, {"flash_attn", true}, {"use_moe", c.moe.has_value()},
      {"num_experts_per_tok", moe.top_k}, {"n_routed_experts", moe.n_experts},
      {"n_shared_experts", moe.n_shared_experts}, {"scoring_func", "softmax"},
      {"aux_loss_alpha", c.moe ? minimind_hf_alpha(moe.aux_loss_alpha, moe.top_k) : moe.aux_loss_alpha},
      {"seq_aux", moe.seq_aux}, {"norm_topk_prob", moe.norm_topk_prob}, {"dtype", "float32"}};
  return j.dump(2) + "\n";
}

std::string minimind_current_json_from_config(const models::DecoderLMConfig& c, int64_t mlp_hidden) {
  check_expressible(c, MiniMindForm::current);
  // MiniMindConfig writes its MoE keys for dense models too (with its defaults); top-1 renormalised is
  // our topk_then_softmax, top-1 unrenormalised softmax_then_topk (whose norm_topk_prob does not act at k = 1)
  const nn::MoEConfig moe = c.moe ? *c.moe : nn::MoEConfig{.n_experts = 4, .top_k = 1, .aux_loss_alpha = 5e-4};
  const bool norm_topk_prob = moe.routing == nn::MoERouting::topk_then_softmax || (moe.top_k > 1 && moe.norm_topk_prob) ||
                              (!c.moe && moe.norm_topk_prob);
  nlohmann::ordered_json j = {
      {"architectures", {"MiniMindForCausalLM"}}, {"model_type", "minimind"}, {"hidden_size", c.dim},
      {"num_hidden_layers", c.n_layers}, {"num_attention_heads", c.n_heads},
      {"num_key_value_heads", models::block_config(c).attention.n_kv_heads}, {"head_dim", block_config(c).attention.head_dim},
      {"vocab_size", c.vocab_size}, {"intermediate_size", mlp_hidden}, {"max_position_embeddings", c.max_seq_len},
      {"rms_norm_eps", c.norm_eps}, {"rope_theta", c.rope_theta},
      {"inference_rope_scaling", c.rope_scaling == nn::RopeScaling::yarn}, {"hidden_act", "silu"},
      {"dropout", c.dropout}, {"flash_attn", true}, {"tie_word_embeddings", c.tie_embeddings},
      {"use_moe", c.moe.has_value()}, {"num_experts", moe.n_experts}, {"num_experts_per_tok", moe.top_k},
      {"moe_intermediate_size", mlp_hidden}, {"norm_topk_prob", norm_topk_prob},
      {"router_aux_loss_coef", moe.aux_loss_alpha}, {"dtype", "float32"}};
  return j.dump(2) + "\n";
}

nn::StateDict state_from_minimind(const models::DecoderLMConfig& config, MiniMindForm form,
                                  std::map<std::string, Tensor> tensors, const std::string& source) {
  const FormNames& names = names_of(form);
  const std::string embed = names.embed + ".weight", head = names.head + ".weight";
  if (config.tie_embeddings && !tensors.count(embed) && tensors.count(head)) {  // a tied head saved under its name
    tensors.emplace(embed, tensors.at(head));
    tensors.erase(head);
  }
  const int64_t hidden = nn::mlp_hidden_dim(models::block_config(config).mlp);
  return import_tensors(minimind_name_map(config, hidden, form), tensors, ignored_names(config, form), source);
}

std::shared_ptr<models::DecoderLM> load_minimind(const std::string& dir) {
  NF_CHECK(is_minimind_folder(dir), dir, ": not a MiniMind folder (needs ", kConfigFile,
           " with model_type \"minimind\")");
  const fs::path config_path = fs::path(dir) / kConfigFile;
  const std::string text = read_text(config_path);
  std::map<std::string, Tensor> tensors = read_folder_tensors(dir, kWeightsFile, kIndexFile);
  MiniMindForm form = minimind_folder_form(dir);
  // a current-form config at every default but the sizes names none of its keys: its q_norm tensors tell
  // it, unless the config has a key only the 2025 form has
  if (form == MiniMindForm::hf && tensors.count(kCurrentFormTensor)) {
    const Json j = Json::parse(text, nullptr, false);
    const auto older = [&](const char* key) { return j.is_object() && j.contains(key); };
    if (std::none_of(std::begin(kOlderFormKeys), std::end(kOlderFormKeys), older)) form = MiniMindForm::current;
  }
  const models::DecoderLMConfig config = form == MiniMindForm::current ? config_from_minimind_current_json(text, config_path.string())
                                 : form == MiniMindForm::hf    ? config_from_minimind_hf_json(text, config_path.string())
                                                               : config_from_minimind_json(text, config_path.string());
  // the tensors are checked against the config before the model is built, so that a config far
  // larger than its files is an error naming the tensors, not an allocation sized by the config
  const nn::StateDict state = state_from_minimind(config, form, std::move(tensors), dir);
  auto model = std::make_shared<models::DecoderLM>(config);
  model->load_state_dict(state);
  return model;
}

void save_minimind(const models::DecoderLM& model, const std::string& dir, int64_t max_shard_bytes) {
  save_form(model, dir, MiniMindForm::lmconfig, max_shard_bytes);
}

void save_minimind_hf(const models::DecoderLM& model, const std::string& dir, int64_t max_shard_bytes) {
  const models::DecoderLMConfig& c = model.config();
  const bool current = c.qk_norm && c.qk_norm_weight;  // every model of the current form has them
  save_form(model, dir, current ? MiniMindForm::current : MiniMindForm::hf, max_shard_bytes);
}

}  // namespace nf::formats
