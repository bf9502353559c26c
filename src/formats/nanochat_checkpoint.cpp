// nanochat checkpoints (003): meta_<step>.json's model_config and the tensor name map (see nanochat_checkpoint.h).
#include "nanoformer/formats/nanochat_checkpoint.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "formats/folder_io.h"
#include "formats/name_map.h"
#include "nanoformer/core/error.h"
#include "nanoformer/io/safetensors.h"
#include "nanoformer/io/torch_checkpoint.h"
#include "nanoformer/ops/factory.h"
#include "nanoformer/ops/join.h"
#include "nanoformer/ops/view.h"

namespace nf::formats {
namespace {

namespace fs = std::filesystem;

constexpr double kNanochatEps = std::numeric_limits<float>::epsilon();  // F.rms_norm's default for fp32
constexpr double kNanochatTheta = 10000.0;
constexpr double kNanochatSoftcap = 15.0;
const std::set<std::string> kModelConfigKeys = {"sequence_len", "vocab_size", "n_layer", "n_head", "n_kv_head",
                                                "n_embd", "window_pattern"};
// The current GPT (nanochat@92d63d4): GPTConfig's defaults, RoPE base, q / k scale, vocabulary padding.
struct CurrentGPTConfigDefaults {
  int64_t sequence_len = 2048, vocab_size = 32768, n_layer = 12, n_head = 6, n_kv_head = 6, n_embd = 768;
};
constexpr double kCurrentTheta = 100000.0;
constexpr double kCurrentQKScale = 1.2;  // q, k = 1.2 norm(q), 1.2 norm(k)
constexpr int64_t kCurrentVocabMultiple = 64;
const char* const kCurrentMarker = "smear_gate.weight";  // a tensor only the current form has

int64_t padded_vocab(int64_t vocab) { return (vocab + kCurrentVocabMultiple - 1) / kCurrentVocabMultiple * kCurrentVocabMultiple; }
// nanochat's short window: a quarter of the context rounded up to FA3's tile of 128 (2048 -> 768), as
// flash-attn's (left, 0), which sees left + 1 keys: our sliding_window.
int64_t current_short_window(int64_t sequence_len) { return (sequence_len / 4 + 127) / 128 * 128 + 1; }
// The token tables and head of the current form: padded rows in the file.
bool padded_table(const std::string& name) {
  return name == "transformer.wte.weight" || name == "lm_head.weight" || name.rfind("value_embeds.", 0) == 0;
}

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

models::DecoderLMConfig nanochat_architecture() {
  models::DecoderLMConfig c;
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
  c.init = models::InitScheme::nanochat;
  return c;
}

bool is_current(const models::DecoderLMConfig& c) { return c.value_embeddings || c.residual_scalars || c.smear || c.backout; }

// The current GPT's choices on top of 003's for a model of head_dim hd and context sequence_len.
void make_current(models::DecoderLMConfig& c, const std::string& window_pattern) {
  const int64_t hd = c.dim / c.n_heads;
  c.rope_theta = kCurrentTheta;
  c.attention_scale = kCurrentQKScale * kCurrentQKScale / std::sqrt(static_cast<double>(hd));
  c.value_embeddings = c.residual_scalars = c.smear = c.backout = true;
  // a pattern of L only, or one whose S layers are only the last, is full attention everywhere
  bool windowed = false;
  const int64_t tiled = std::min<int64_t>(c.n_layers - 1, static_cast<int64_t>(window_pattern.size()));
  for (int64_t l = 0; l < tiled; ++l)
    windowed = windowed || window_pattern[static_cast<size_t>(l) % window_pattern.size()] == 'S';
  c.sliding_window = windowed ? current_short_window(c.max_seq_len) : 0;
  c.window_pattern = windowed ? window_pattern : "";
}

void check_expressible(const models::DecoderLMConfig& c) {
  models::DecoderLMConfig a = nanochat_architecture();
  if (is_current(c)) {
    a.dim = c.dim, a.n_heads = c.n_heads, a.n_layers = c.n_layers, a.max_seq_len = c.max_seq_len;
    make_current(a, c.window_pattern.empty() ? "L" : c.window_pattern);
  }
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
  need(c.value_embeddings && c.residual_scalars && c.smear && c.backout ? true : !is_current(c),
       "value_embeddings / residual_scalars / smear / backout", "(only some of them)");
  need(c.attention_scale == a.attention_scale, "attention_scale", std::to_string(c.attention_scale));
  need(c.qk_norm && c.qk_norm_eps == a.qk_norm_eps, "qk_norm", c.qk_norm ? "(other eps)" : "false");
  need(!c.qk_norm_weight, "qk_norm_weight", "true");
  need(c.mlp == a.mlp, "mlp", nn::mlp_kind_name(c.mlp));
  need(nn::mlp_hidden_dim(models::block_config(c).mlp) == 4 * c.dim, "mlp_hidden", std::to_string(c.mlp_hidden));
  need(!c.attention_bias && !c.mlp_bias, "attention_bias / mlp_bias", "true");
  need(!c.tie_embeddings, "tie_embeddings", "true");
  need(c.logit_softcap == a.logit_softcap, "logit_softcap", std::to_string(c.logit_softcap));
  need(!c.moe.has_value(), "moe", "(set)");
  need(c.sliding_window == a.sliding_window && c.window_layers.empty() &&
           (c.sliding_window == 0 || !c.window_pattern.empty()),
       "sliding_window", std::to_string(c.sliding_window));
  need(c.head_dim == 0 || c.head_dim * c.n_heads == c.dim, "head_dim", std::to_string(c.head_dim));
}

NameMap nanochat_name_map(const models::DecoderLMConfig& c) {
  const nn::AttentionConfig a = models::block_config(c).attention;  // resolved: head_dim, n_kv_heads
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
  if (!is_current(c)) return map;
  map.push_back({"resid_lambdas", {c.n_layers}, false, {"residual_scalars.resid_lambdas"}});
  map.push_back({"x0_lambdas", {c.n_layers}, false, {"residual_scalars.x0_lambdas"}});
  map.push_back({"smear_gate.weight", {1, nn::Smear::kChannels}, false, {"smear.gate_weight"}});
  map.push_back({"smear_lambda", {1}, false, {"smear.lambda"}});
  map.push_back({"backout_lambda", {1}, false, {"backout.lambda"}});
  for (int64_t l = 0; l < c.n_layers; ++l) {
    if (!nn::value_embedding_layer(l, c.n_layers)) continue;
    const std::string n = std::to_string(l);
    map.push_back({"transformer.h." + n + ".attn.ve_gate.weight", {a.n_kv_heads, nn::kValueGateChannels}, false,
                   {"layers." + n + ".attn.ve_gate.weight"}});
    map.push_back({"value_embeds." + n + ".weight", {c.vocab_size, kv}, false, {"value_embeds." + n + ".weight"}});
  }
  return map;
}

// The current form's tables without their padding rows (vocab_size rows of padded_vocab(vocab_size)).
std::map<std::string, Tensor> without_padding(std::map<std::string, Tensor> tensors, int64_t vocab,
                                              const std::string& source) {
  for (auto& [name, tensor] : tensors) {
    if (!padded_table(name) || tensor.dim() != 2 || tensor.size(0) == vocab) continue;
    NF_CHECK(tensor.size(0) == padded_vocab(vocab), source, ": tensor '", name, "' has ", tensor.size(0),
             " rows; vocab_size ", vocab, " pads to ", padded_vocab(vocab));
    tensor = narrow(tensor, 0, 0, vocab);
  }
  return tensors;
}

// The same padded with zero rows, as nanochat's GPT holds them.
std::vector<nn::NamedTensor> with_padding(std::vector<nn::NamedTensor> tensors, int64_t vocab) {
  for (auto& [name, tensor] : tensors)
    if (padded_table(name) && padded_vocab(vocab) > vocab)
      tensor = cat({tensor, zeros({padded_vocab(vocab) - vocab, tensor.size(1)}, tensor.dtype())}, 0);
  return tensors;
}

}  // namespace

bool is_nanochat_folder(const std::string& path) {
  const fs::path meta = latest_meta(path);
  return !meta.empty() && fs::exists(model_file_of(meta));
}

models::DecoderLMConfig config_from_nanochat_meta(const std::string& json_text, const std::string& source, bool current) {
  return with_json_errors(source, [&] {
    const Json meta = parse_json_object(json_text, source);
    NF_CHECK(meta.contains("model_config") && meta.at("model_config").is_object(), source,
             ": no 'model_config' object");
    const Json& j = meta.at("model_config");
    for (const auto& [key, value] : j.items())
      NF_CHECK(kModelConfigKeys.count(key), source, ": unknown nanochat model_config key '", key, "'");
    models::DecoderLMConfig c = nanochat_architecture();
    c.name = fs::path(source).parent_path().filename().string();
    std::string window_pattern = "L";  // nanochat's checkpoint_manager: old metas had full context
    if (current) {  // a missing key takes GPTConfig's default
      const CurrentGPTConfigDefaults d;
      c.max_seq_len = int_key(j, "sequence_len", d.sequence_len, source);
      c.vocab_size = int_key(j, "vocab_size", d.vocab_size, source);
      c.n_layers = int_key(j, "n_layer", d.n_layer, source);
      c.n_heads = int_key(j, "n_head", d.n_head, source);
      c.n_kv_heads = int_key(j, "n_kv_head", d.n_kv_head, source);
      c.dim = int_key(j, "n_embd", d.n_embd, source);
      if (j.contains("window_pattern")) {
        NF_CHECK(j.at("window_pattern").is_string(), source, ": model_config key 'window_pattern' must be a string");
        window_pattern = j.at("window_pattern").get<std::string>();
        for (char& ch : window_pattern) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
        NF_CHECK(!window_pattern.empty() && window_pattern.find_first_not_of("SL") == std::string::npos, source,
                 ": model_config key 'window_pattern' \"", j.at("window_pattern").get<std::string>(),
                 "\" takes only S and L");
      }
    } else {
      NF_CHECK(!j.contains("window_pattern") || j.at("window_pattern") == "L", source,
               ": window_pattern ", j.at("window_pattern").dump(), " without the current GPT's tensors (",
               kCurrentMarker, ")");
      c.max_seq_len = int_key(j, "sequence_len", source);
      c.vocab_size = int_key(j, "vocab_size", source);
      c.n_layers = int_key(j, "n_layer", source);
      c.n_heads = int_key(j, "n_head", source);
      c.n_kv_heads = int_key(j, "n_kv_head", c.n_heads, source);
      c.dim = int_key(j, "n_embd", source);
    }
    c.mlp_hidden = 4 * c.dim;
    NF_CHECK(c.n_heads > 0 && c.dim % c.n_heads == 0, source, ": n_embd ", c.dim, " is not divisible by n_head ", c.n_heads);
    if (current) make_current(c, window_pattern);
    models::validate_model_config(c, source);
    return c;
  });
}

std::shared_ptr<models::DecoderLM> load_nanochat(const std::string& dir) {
  NF_CHECK(is_nanochat_folder(dir), dir, ": not a nanochat checkpoint folder (needs meta_<step>.json and "
           "model_<step>.safetensors or model_<step>.pt)");
  const fs::path meta = latest_meta(dir);
  const fs::path weights = model_file_of(meta);
  std::map<std::string, Tensor> tensors =
      weights.extension() == ".pt" ? read_pt_tensors(weights) : read_folder_tensors(dir, weights.filename().string(), "");
  const bool current = tensors.count(kCurrentMarker) > 0;
  const models::DecoderLMConfig config = config_from_nanochat_meta(read_text(meta), meta.string(), current);
  if (current) tensors = without_padding(std::move(tensors), config.vocab_size, weights.string());
  // the tensors are checked against the config before the model is built, so that a config far
  // larger than its files is an error naming the tensors, not an allocation sized by the config
  const nn::StateDict state = import_tensors(nanochat_name_map(config), tensors, {}, weights.string());
  auto model = std::make_shared<models::DecoderLM>(config);
  model->load_state_dict(state);
  return model;
}

void save_nanochat(const models::DecoderLM& model, const std::string& dir) {
  const models::DecoderLMConfig& c = model.config();
  check_expressible(c);
  nlohmann::ordered_json model_config = {
      {"sequence_len", c.max_seq_len}, {"vocab_size", c.vocab_size}, {"n_layer", c.n_layers},
      {"n_head", c.n_heads}, {"n_kv_head", models::block_config(c).attention.n_kv_heads}, {"n_embd", c.dim}};
  if (is_current(c)) model_config["window_pattern"] = c.window_pattern.empty() ? "L" : c.window_pattern;
  const nlohmann::ordered_json meta = {{"step", 0}, {"model_config", model_config}};
  std::vector<nn::NamedTensor> tensors = export_tensors(nanochat_name_map(c), model.state_dict());
  if (is_current(c)) tensors = with_padding(std::move(tensors), c.vocab_size);
  fs::create_directories(dir);
  io::save_safetensors((fs::path(dir) / "model_000000.safetensors").string(), tensors);
  write_text_atomic(fs::path(dir) / "meta_000000.json", meta.dump(2) + "\n");
}

}  // namespace nf::formats
