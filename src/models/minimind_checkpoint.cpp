// MiniMind2 folders (002): LMConfig <-> DecoderLMConfig and the tensor name map (see minimind_checkpoint.h).
#include "nanoformer/models/minimind_checkpoint.h"

#include "models/folder_io.h"
#include "models/name_map.h"
#include "nanoformer/core/error.h"
#include "nanoformer/io/safetensors.h"

namespace nf::models {
namespace {

namespace fs = std::filesystem;

const std::set<std::string> kMiniMindKeys = {
    "dim", "n_layers", "n_heads", "n_kv_heads", "vocab_size", "hidden_dim", "multiple_of", "norm_eps",
    "max_seq_len", "rope_theta", "dropout", "flash_attn", "use_moe", "num_experts_per_tok", "n_routed_experts",
    "n_shared_experts", "scoring_func", "aux_loss_alpha", "seq_aux", "norm_topk_prob", "tie_word_embeddings"};

// n_shared_experts is a count, or (in some MiniMind versions) a bool meaning one.
int64_t shared_experts(const Json& j, const std::string& source) {
  if (j.contains("n_shared_experts") && j.at("n_shared_experts").is_boolean())
    return j.at("n_shared_experts").get<bool>() ? 1 : 0;
  return int_key(j, "n_shared_experts", 0, source);
}

void check_expressible(const DecoderLMConfig& c) {
  auto need = [](bool ok, const std::string& option, const std::string& value) {
    NF_CHECK(ok, "save_minimind: ", option, " ", value, " cannot be expressed by a MiniMind config");
  };
  need(c.norm == nn::NormKind::rmsnorm, "norm", nn::norm_kind_name(c.norm));
  need(c.norm_placement == nn::NormPlacement::pre, "norm_placement", nn::norm_placement_name(c.norm_placement));
  need(c.position == nn::PositionKind::rope, "position", nn::position_kind_name(c.position));
  need(c.rope_layout == RopeLayout::interleaved, "rope_layout", rope_layout_name(c.rope_layout));
  need(c.rope_scaling == nn::RopeScaling::none, "rope_scaling", "(set)");
  need(c.mlp == nn::MLPKind::swiglu, "mlp", nn::mlp_kind_name(c.mlp));
  need(!c.attention_bias && !c.mlp_bias, "attention_bias / mlp_bias", "true");
  need(!c.embedding_norm, "embedding_norm", "true");
  need(!c.qk_norm, "qk_norm", "true");
  need(c.logit_softcap == 0.0, "logit_softcap", std::to_string(c.logit_softcap));
  need(c.head_dim == 0 || c.head_dim * c.n_heads == c.dim, "head_dim", std::to_string(c.head_dim));
  if (c.moe) {
    need(c.moe->routing == nn::MoERouting::softmax_then_topk, "moe.routing", moe_routing_name(c.moe->routing));
    need(!c.moe->gate_bias, "moe.gate_bias", "true");
  }
}

NameMap minimind_name_map(const DecoderLMConfig& c, int64_t hidden) {
  const int64_t D = c.dim, hd = c.dim / c.n_heads, kv = (c.n_kv_heads ? c.n_kv_heads : c.n_heads) * hd;
  NameMap map{{"tok_embeddings.weight", {c.vocab_size, D}, false, {"tok_embeddings.weight"}}};
  for (int64_t l = 0; l < c.n_layers; ++l) {
    const std::string n = "layers." + std::to_string(l) + ".";
    auto add = [&](const std::string& theirs, const std::string& ours, const Shape& shape) {
      map.push_back({n + theirs, shape, false, {n + ours}});
    };
    auto swiglu = [&](const std::string& theirs, const std::string& ours) {
      add(theirs + ".w1.weight", ours + ".w1.weight", {hidden, D});
      add(theirs + ".w2.weight", ours + ".w2.weight", {D, hidden});
      add(theirs + ".w3.weight", ours + ".w3.weight", {hidden, D});
    };
    add("attention_norm.weight", "attn_norm.weight", {D});
    add("attention.wq.weight", "attn.q_proj.weight", {D, D});
    add("attention.wk.weight", "attn.k_proj.weight", {kv, D});
    add("attention.wv.weight", "attn.v_proj.weight", {kv, D});
    add("attention.wo.weight", "attn.o_proj.weight", {D, D});
    add("ffn_norm.weight", "mlp_norm.weight", {D});
    if (!c.moe) {
      swiglu("feed_forward", "mlp");
      continue;
    }
    add("feed_forward.gate.weight", "mlp.gate.weight", {c.moe->n_experts, D});
    for (int64_t e = 0; e < c.moe->n_experts; ++e)
      swiglu("feed_forward.experts." + std::to_string(e), "mlp.experts." + std::to_string(e));
    for (int64_t s = 0; s < c.moe->n_shared_experts; ++s)
      swiglu("feed_forward.shared_experts." + std::to_string(s), "mlp.shared_experts." + std::to_string(s));
  }
  map.push_back({"norm.weight", {D}, false, {"norm.weight"}});
  if (!c.tie_embeddings) map.push_back({"output.weight", {c.vocab_size, D}, false, {"output.weight"}});
  return map;
}

std::set<std::string> ignored_names(const DecoderLMConfig& c) {
  std::set<std::string> ignored;
  for (int64_t l = 0; l < c.n_layers; ++l) ignored.insert("layers." + std::to_string(l) + ".attention.mask");
  if (c.tie_embeddings) ignored.insert("output.weight");
  return ignored;
}

}  // namespace

bool is_minimind_folder(const std::string& path) {
  const fs::path config = fs::path(path) / kConfigFile;
  if (!fs::is_directory(path) || !fs::exists(config)) return false;
  const Json j = Json::parse(read_text(config), nullptr, false);
  return j.is_object() && j.contains("model_type") && j.at("model_type") == "minimind";
}

DecoderLMConfig config_from_minimind_json(const std::string& json_text, const std::string& source) {
  return with_json_errors(source, [&] {
    const Json j = parse_json_object(json_text, source);
    check_known_keys(j, kMiniMindKeys, "MiniMind", source);
    NF_CHECK(j.value("model_type", std::string("minimind")) == "minimind", source, ": model_type '",
             j.value("model_type", std::string()), "' is not minimind");
    DecoderLMConfig c;
    c.name = fs::path(source).parent_path().filename().string();
    c.dim = int_key(j, "dim", source);
    c.n_layers = int_key(j, "n_layers", source);
    c.n_heads = int_key(j, "n_heads", source);
    c.n_kv_heads = int_key(j, "n_kv_heads", c.n_heads, source);
    c.vocab_size = int_key(j, "vocab_size", source);
    c.mlp_hidden = int_key(j, "hidden_dim", 0, source);
    c.mlp_multiple_of = int_key(j, "multiple_of", 64, source);
    c.norm = nn::NormKind::rmsnorm;
    c.norm_eps = number_key(j, "norm_eps", 1e-5, source);
    c.norm_bias = false;
    c.max_seq_len = int_key(j, "max_seq_len", source);
    c.position = nn::PositionKind::rope;
    c.rope_layout = RopeLayout::interleaved;
    c.rope_theta = number_key(j, "rope_theta", 1e6, source);
    c.dropout = number_key(j, "dropout", 0.0, source);
    c.mlp = nn::MLPKind::swiglu;
    c.attention_bias = false;
    c.mlp_bias = false;
    c.tie_embeddings = bool_key(j, "tie_word_embeddings", true, source);
    if (bool_key(j, "use_moe", false, source)) {
      const std::string scoring = j.value("scoring_func", std::string("softmax"));
      NF_CHECK(scoring == "softmax", source, ": scoring_func '", scoring, "' is not supported (softmax)");
      nn::MoEConfig moe;
      moe.n_experts = int_key(j, "n_routed_experts", 4, source);
      moe.top_k = int_key(j, "num_experts_per_tok", 2, source);
      moe.n_shared_experts = shared_experts(j, source);
      moe.routing = nn::MoERouting::softmax_then_topk;
      moe.norm_topk_prob = bool_key(j, "norm_topk_prob", true, source);
      moe.aux_loss_alpha = number_key(j, "aux_loss_alpha", 0.1, source);
      moe.seq_aux = bool_key(j, "seq_aux", true, source);
      c.moe = moe;
    }
    validate_model_config(c, source);
    return c;
  });
}

std::string minimind_json_from_config(const DecoderLMConfig& c) {
  check_expressible(c);
  nlohmann::ordered_json j = {
      {"model_type", "minimind"}, {"dim", c.dim}, {"n_layers", c.n_layers}, {"n_heads", c.n_heads},
      {"n_kv_heads", c.n_kv_heads ? c.n_kv_heads : c.n_heads}, {"vocab_size", c.vocab_size},
      {"hidden_dim", c.mlp_hidden ? Json(c.mlp_hidden) : Json(nullptr)}, {"multiple_of", c.mlp_multiple_of}, {"norm_eps", c.norm_eps},
      {"max_seq_len", c.max_seq_len}, {"rope_theta", c.rope_theta}, {"dropout", c.dropout}, {"flash_attn", true},
      {"use_moe", c.moe.has_value()}, {"tie_word_embeddings", c.tie_embeddings}};
  if (c.moe) {
    j["num_experts_per_tok"] = c.moe->top_k;
    j["n_routed_experts"] = c.moe->n_experts;
    j["n_shared_experts"] = c.moe->n_shared_experts;
    j["scoring_func"] = "softmax";
    j["aux_loss_alpha"] = c.moe->aux_loss_alpha;
    j["seq_aux"] = c.moe->seq_aux;
    j["norm_topk_prob"] = c.moe->norm_topk_prob;
  }
  return j.dump(2) + "\n";
}

std::shared_ptr<DecoderLM> load_minimind(const std::string& dir) {
  NF_CHECK(is_minimind_folder(dir), dir, ": not a MiniMind folder (needs ", kConfigFile,
           " with model_type \"minimind\")");
  const fs::path config_path = fs::path(dir) / kConfigFile;
  const DecoderLMConfig config = config_from_minimind_json(read_text(config_path), config_path.string());
  auto model = std::make_shared<DecoderLM>(config);
  const int64_t hidden = nn::mlp_hidden_dim(block_config(config).mlp);
  model->load_state_dict(import_tensors(minimind_name_map(config, hidden),
                                        read_folder_tensors(dir, kWeightsFile, kIndexFile), ignored_names(config), dir));
  return model;
}

void save_minimind(const DecoderLM& model, const std::string& dir) {
  const DecoderLMConfig& c = model.config();
  const int64_t hidden = nn::mlp_hidden_dim(block_config(c).mlp);
  const std::string json = minimind_json_from_config(c);
  fs::create_directories(dir);
  io::save_safetensors((fs::path(dir) / kWeightsFile).string(), export_tensors(minimind_name_map(c, hidden), model.state_dict()),
                       {{"format", "pt"}});
  write_text_atomic(fs::path(dir) / kConfigFile, json);
}

}  // namespace nf::models
