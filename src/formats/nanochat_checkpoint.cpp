// nanochat checkpoints (003): meta_<step>.json's model_config and the tensor name map (see nanochat_checkpoint.h).
#include "nanoformer/formats/nanochat_checkpoint.h"

#include <limits>

#include "formats/folder_io.h"
#include "formats/name_map.h"
#include "nanoformer/core/error.h"
#include "nanoformer/io/safetensors.h"
#include "nanoformer/io/torch_checkpoint.h"

namespace nf::models {
namespace {

namespace fs = std::filesystem;

constexpr double kNanochatEps = std::numeric_limits<float>::epsilon();  // F.rms_norm's default for fp32
constexpr double kNanochatTheta = 10000.0;
constexpr double kNanochatSoftcap = 15.0;
const std::set<std::string> kModelConfigKeys = {"sequence_len", "vocab_size", "n_layer", "n_head", "n_kv_head",
                                                "n_embd"};

// The meta file of the highest step in `dir` ("" when none); its model file has the same step.
fs::path latest_meta(const fs::path& dir) {
  fs::path best;
  if (!fs::is_directory(dir)) return best;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("meta_", 0) == 0 && entry.path().extension() == ".json" && (best.empty() || name > best.filename().string()))
      best = entry.path();
  }
  return best;
}

// model_<step>.safetensors, else model_<step>.pt as nanochat's torch.save wrote it
fs::path model_file_of(const fs::path& meta) {
  const std::string step = meta.stem().string().substr(5);  // "meta_" + step
  const fs::path safetensors = meta.parent_path() / ("model_" + step + ".safetensors");
  return fs::exists(safetensors) ? safetensors : meta.parent_path() / ("model_" + step + ".pt");
}

// The state dict of model_<step>.pt, without torch.compile's "_orig_mod." prefix
std::map<std::string, Tensor> read_pt_tensors(const fs::path& file) {
  std::map<std::string, Tensor> tensors;
  for (auto& [name, tensor] : io::load_torch_checkpoint(file.string())) {
    const std::string bare = name.rfind("_orig_mod.", 0) == 0 ? name.substr(10) : name;
    NF_CHECK(tensors.emplace(bare, std::move(tensor)).second, file.string(), ": tensor '", bare, "' is there twice (with and without _orig_mod.)");
  }
  return tensors;
}

DecoderLMConfig nanochat_architecture() {
  DecoderLMConfig c;
  c.norm = nn::NormKind::rmsnorm_no_weight;
  c.norm_eps = kNanochatEps;
  c.norm_bias = false;
  c.embedding_norm = true;
  c.position = nn::PositionKind::rope;
  c.rope_layout = RopeLayout::half_negative;
  c.rope_theta = kNanochatTheta;
  c.qk_norm = true;
  c.qk_norm_eps = kNanochatEps;
  c.mlp = nn::MLPKind::relu2;
  c.attention_bias = false;
  c.mlp_bias = false;
  c.tie_embeddings = false;
  c.logit_softcap = kNanochatSoftcap;
  c.init = InitScheme::nanochat;
  return c;
}

void check_expressible(const DecoderLMConfig& c) {
  const DecoderLMConfig a = nanochat_architecture();
  auto need = [](bool ok, const std::string& option, const std::string& value) {
    NF_CHECK(ok, "save_nanochat: ", option, " ", value, " is not nanochat's architecture");
  };
  need(c.norm == a.norm && c.norm_eps == a.norm_eps, "norm", nn::norm_kind_name(c.norm));
  need(c.norm_placement == nn::NormPlacement::pre, "norm_placement", nn::norm_placement_name(c.norm_placement));
  need(c.embedding_norm, "embedding_norm", "false");
  need(c.position == a.position && c.rope_layout == a.rope_layout, "position / rope_layout",
       std::string(nn::position_kind_name(c.position)) + " / " + rope_layout_name(c.rope_layout));
  need(c.rope_theta == a.rope_theta && c.rope_scaling == nn::RopeScaling::none, "rope_theta",
       std::to_string(c.rope_theta));
  need(c.qk_norm && c.qk_norm_eps == a.qk_norm_eps, "qk_norm", c.qk_norm ? "(other eps)" : "false");
  need(!c.qk_norm_weight, "qk_norm_weight", "true");
  need(c.mlp == a.mlp, "mlp", nn::mlp_kind_name(c.mlp));
  need(nn::mlp_hidden_dim(block_config(c).mlp) == 4 * c.dim, "mlp_hidden", std::to_string(c.mlp_hidden));
  need(!c.attention_bias && !c.mlp_bias, "attention_bias / mlp_bias", "true");
  need(!c.tie_embeddings, "tie_embeddings", "true");
  need(c.logit_softcap == a.logit_softcap, "logit_softcap", std::to_string(c.logit_softcap));
  need(!c.moe.has_value(), "moe", "(set)");
  need(c.sliding_window == 0, "sliding_window", std::to_string(c.sliding_window));
  need(c.head_dim == 0 || c.head_dim * c.n_heads == c.dim, "head_dim", std::to_string(c.head_dim));
}

NameMap nanochat_name_map(const DecoderLMConfig& c) {
  const nn::AttentionConfig a = block_config(c).attention;  // resolved: head_dim, n_kv_heads
  const int64_t D = c.dim, hd = a.head_dim, kv = a.n_kv_heads * hd;
  NameMap map{{"transformer.wte.weight", {c.vocab_size, D}, false, {"tok_embeddings.weight"}}};
  for (int64_t l = 0; l < c.n_layers; ++l) {
    const std::string h = "transformer.h." + std::to_string(l) + ".", o = "layers." + std::to_string(l) + ".";
    map.push_back({h + "attn.c_q.weight", {D, D}, false, {o + "attn.q_proj.weight"}});
    map.push_back({h + "attn.c_k.weight", {kv, D}, false, {o + "attn.k_proj.weight"}});
    map.push_back({h + "attn.c_v.weight", {kv, D}, false, {o + "attn.v_proj.weight"}});
    map.push_back({h + "attn.c_proj.weight", {D, D}, false, {o + "attn.o_proj.weight"}});
    map.push_back({h + "mlp.c_fc.weight", {4 * D, D}, false, {o + "mlp.c_fc.weight"}});
    map.push_back({h + "mlp.c_proj.weight", {D, 4 * D}, false, {o + "mlp.c_proj.weight"}});
  }
  map.push_back({"lm_head.weight", {c.vocab_size, D}, false, {"output.weight"}});
  return map;
}

}  // namespace

bool is_nanochat_folder(const std::string& path) {
  const fs::path meta = latest_meta(path);
  return !meta.empty() && fs::exists(model_file_of(meta));
}

DecoderLMConfig config_from_nanochat_meta(const std::string& json_text, const std::string& source) {
  return with_json_errors(source, [&] {
    const Json meta = parse_json_object(json_text, source);
    NF_CHECK(meta.contains("model_config") && meta.at("model_config").is_object(), source,
             ": no 'model_config' object");
    const Json& j = meta.at("model_config");
    for (const auto& [key, value] : j.items())
      NF_CHECK(kModelConfigKeys.count(key), source, ": unknown nanochat model_config key '", key, "'");
    DecoderLMConfig c = nanochat_architecture();
    c.name = fs::path(source).parent_path().filename().string();
    c.max_seq_len = int_key(j, "sequence_len", source);
    c.vocab_size = int_key(j, "vocab_size", source);
    c.n_layers = int_key(j, "n_layer", source);
    c.n_heads = int_key(j, "n_head", source);
    c.n_kv_heads = int_key(j, "n_kv_head", c.n_heads, source);
    c.dim = int_key(j, "n_embd", source);
    c.mlp_hidden = 4 * c.dim;
    validate_model_config(c, source);
    return c;
  });
}

std::shared_ptr<DecoderLM> load_nanochat(const std::string& dir) {
  NF_CHECK(is_nanochat_folder(dir), dir, ": not a nanochat checkpoint folder (needs meta_<step>.json and "
           "model_<step>.safetensors or model_<step>.pt)");
  const fs::path meta = latest_meta(dir);
  const DecoderLMConfig config = config_from_nanochat_meta(read_text(meta), meta.string());
  const fs::path weights = model_file_of(meta);
  // the tensors are checked against the config before the model is built, so that a config far
  // larger than its files is an error naming the tensors, not an allocation sized by the config
  const nn::StateDict state = import_tensors(
      nanochat_name_map(config),
      weights.extension() == ".pt" ? read_pt_tensors(weights) : read_folder_tensors(dir, weights.filename().string(), ""),
      {}, weights.string());
  auto model = std::make_shared<DecoderLM>(config);
  model->load_state_dict(state);
  return model;
}

void save_nanochat(const DecoderLM& model, const std::string& dir) {
  const DecoderLMConfig& c = model.config();
  check_expressible(c);
  nlohmann::ordered_json meta = {
      {"step", 0},
      {"model_config",
       {{"sequence_len", c.max_seq_len}, {"vocab_size", c.vocab_size}, {"n_layer", c.n_layers},
        {"n_head", c.n_heads}, {"n_kv_head", block_config(c).attention.n_kv_heads}, {"n_embd", c.dim}}}};
  fs::create_directories(dir);
  io::save_safetensors((fs::path(dir) / "model_000000.safetensors").string(),
                       export_tensors(nanochat_name_map(c), model.state_dict()));
  write_text_atomic(fs::path(dir) / "meta_000000.json", meta.dump(2) + "\n");
}

}  // namespace nf::models
