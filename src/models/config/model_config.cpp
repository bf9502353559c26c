// DecoderLMConfig: JSON parsing with unknown-key rejection, validation, presets, the component
// configs, and the parameter counts by part.
#include "nanoformer/models/config/model_config.h"

#include <dlfcn.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "models/config/config_keys.h"
#include "nanoformer/core/error.h"
#include "nanoformer/nn/smear.h"
#include "nanoformer/nn/value_embedding.h"
#include "util/json_input.h"

namespace nf::models {
namespace {

using namespace config_keys;

using nlohmann::json;

constexpr std::array<std::pair<InitScheme, const char*>, 3> kInitNames{
    {{InitScheme::normal, "normal"}, {InitScheme::nanochat, "nanochat"}, {InitScheme::deepnet, "deepnet"}}};
constexpr std::array<std::pair<nn::MoERouting, const char*>, 3> kRoutingNames{
    {{nn::MoERouting::topk_then_softmax, "topk_then_softmax"},
     {nn::MoERouting::softmax_then_topk, "softmax_then_topk"},
     {nn::MoERouting::dense, "dense"}}};
constexpr std::array<std::pair<nf::RopeLayout, const char*>, 3> kLayoutNames{
    {{nf::RopeLayout::interleaved, "interleaved"}, {nf::RopeLayout::half, "half"},
     {nf::RopeLayout::half_negative, "half_negative"}}};
constexpr std::array<std::pair<nn::RopeScaling, const char*>, 4> kScalingNames{{{nn::RopeScaling::none, "none"},
                                                                              {nn::RopeScaling::linear, "linear"},
                                                                              {nn::RopeScaling::ntk, "ntk"},
                                                                              {nn::RopeScaling::yarn, "yarn"}}};

template <class Visitor>
void visit_moe_keys(Visitor& v, nn::MoEConfig& m) {
  v.value("n_experts", m.n_experts);
  v.value("n_shared_experts", m.n_shared_experts);
  v.value("top_k", m.top_k);
  v.choice("routing", m.routing, table_parser(kRoutingNames), table_namer(kRoutingNames));
  v.value("norm_topk_prob", m.norm_topk_prob);
  v.value("gate_bias", m.gate_bias);
  v.value("aux_loss_alpha", m.aux_loss_alpha);
  v.value("seq_aux", m.seq_aux);
}

template <class Visitor>
void visit_keys(Visitor& v, DecoderLMConfig& c) {
  v.value("name", c.name);
  v.value("vocab_size", c.vocab_size);
  v.value("dim", c.dim);
  v.value("n_layers", c.n_layers);
  v.value("n_heads", c.n_heads);
  v.value("n_kv_heads", c.n_kv_heads);
  v.value("head_dim", c.head_dim);
  v.value("max_seq_len", c.max_seq_len);
  v.choice("norm", c.norm, nn::norm_kind_from_name, nn::norm_kind_name);
  v.value("norm_eps", c.norm_eps);
  v.value("norm_bias", c.norm_bias);
  v.choice("norm_placement", c.norm_placement, nn::norm_placement_from_name, nn::norm_placement_name);
  v.value("embedding_norm", c.embedding_norm);
  v.choice("position", c.position, nn::parse_position_kind, nn::position_kind_name);
  v.choice("rope_layout", c.rope_layout, table_parser(kLayoutNames), table_namer(kLayoutNames));
  v.value("rope_theta", c.rope_theta);
  v.choice("rope_scaling", c.rope_scaling, table_parser(kScalingNames), table_namer(kScalingNames));
  v.value("rope_scale_factor", c.rope_scale_factor);
  v.value("rope_original_max_seq_len", c.rope_original_max_seq_len);
  v.value("rope_beta_fast", c.rope_beta_fast);
  v.value("rope_beta_slow", c.rope_beta_slow);
  v.value("rope_attention_factor", c.rope_attention_factor);
  v.value("qk_norm", c.qk_norm);
  v.value("qk_norm_weight", c.qk_norm_weight);
  v.value("qk_norm_eps", c.qk_norm_eps);
  v.value("attention_scale", c.attention_scale);
  v.value("sliding_window", c.sliding_window);
  v.value("window_pattern", c.window_pattern);
  v.value("window_layers", c.window_layers);
  v.choice("mlp", c.mlp, nn::mlp_kind_from_name, nn::mlp_kind_name);
  v.value("mlp_hidden", c.mlp_hidden);
  v.value("mlp_multiple_of", c.mlp_multiple_of);
  v.value("attention_bias", c.attention_bias);
  v.value("attention_output_bias", c.attention_output_bias);
  v.value("mlp_bias", c.mlp_bias);
  v.value("tie_embeddings", c.tie_embeddings);
  v.value("value_embeddings", c.value_embeddings);
  v.value("residual_scalars", c.residual_scalars);
  v.value("smear", c.smear);
  v.value("backout", c.backout);
  v.value("logit_softcap", c.logit_softcap);
  v.value("dropout", c.dropout);
  v.value("residual_dropout", c.residual_dropout);
  v.choice("init", c.init, table_parser(kInitNames), table_namer(kInitNames));
  v.value("init_std", c.init_std);
}

// The most parameters a config may describe: every count below then fits int64_t.
constexpr long double kMaxParameters = 1e15L;
// The longest side a config may give (dims, vocab, layers, ...): products of two fit int64_t, so
// the parameter bound below can be computed before anything else is.
constexpr int64_t kMaxSize = int64_t{1} << 40;

// The parameter counts in arithmetic N: long double to check the bound, int64_t once it holds.
template <class N>
BasicParameterCounts<N> counts_in(const DecoderLMConfig& c) {
  const nn::BlockConfig block = block_config(c);
  const nn::BasicBlockParameterCounts<N> layer = nn::block_parameter_counts<N>(block);
  const N L = N(c.n_layers), V = N(c.vocab_size), D = N(c.dim), norm = N(nn::norm_parameter_count(block.norm));
  BasicParameterCounts<N> p;
  p.embedding = nn::embedding_parameter_count(V, D);
  p.positions = nn::positional_parameter_count<N>(positional_config(c));
  p.attention = L * layer.attention;
  p.mlp = L * layer.mlp;
  p.routed_experts = L * layer.routed_experts;
  p.shared_experts = L * layer.shared_experts;
  p.router = L * layer.router;
  p.norms = L * layer.norms + N(c.embedding_norm ? 2 : 1) * norm;  // the layers', [embedding_norm,] norm
  p.head = c.tie_embeddings ? N(0) : nn::linear_parameter_count(D, V, false);
  if (c.value_embeddings) {
    const N layers = N((c.n_layers + 1) / 2);  // n_layers - 1, n_layers - 3, ... (nn::value_embedding_layer)
    const nn::AttentionConfig& a = block.attention;
    p.value_embeddings = layers * nn::embedding_parameter_count(V, N(a.n_kv_heads) * N(a.head_dim));
    p.attention += layers * N(nn::kValueGateChannels) * N(a.n_kv_heads);
  }
  p.scalars = (c.residual_scalars ? N(2) * L : N(0)) + (c.smear ? N(nn::Smear::kChannels + 1) : N(0)) +
              (c.backout ? N(1) : N(0));
  p.total = p.embedding + p.positions + p.attention + p.mlp + p.routed_experts + p.shared_experts + p.router +
            p.norms + p.value_embeddings + p.scalars + p.head;
  return p;
}

}  // namespace

std::string moe_routing_name(nn::MoERouting routing) { return name_of(kRoutingNames, routing); }

DecoderLMConfig parse_model_config(const std::string& json_text, const std::string& source) {
  const json root = util::parse_json(json_text, source + ": ");
  DecoderLMConfig c;
  ObjectReader r(root, source);
  std::string architecture = DecoderLMConfig::kArchitecture;
  r.value("architecture", architecture);
  check(architecture == DecoderLMConfig::kArchitecture, source, "architecture", "\"" + architecture + "\"",
        "a decoder LM config has architecture \"decoder_lm\" (or none)");
  visit_keys(r, c);
  if (const json* moe = r.child("moe")) {
    ObjectReader moe_reader(*moe, source + ": moe");
    visit_moe_keys(moe_reader, c.moe.emplace());
    moe_reader.finish();
  }
  r.finish();
  validate_model_config(c, source);
  return c;
}

void validate_model_config(const DecoderLMConfig& c, const std::string& source) {
  check(c.vocab_size > 0, source, "vocab_size", c.vocab_size, "must be > 0");
  check(c.dim > 0, source, "dim", c.dim, "must be > 0");
  check(c.n_layers > 0, source, "n_layers", c.n_layers, "must be > 0");
  check(c.n_heads > 0, source, "n_heads", c.n_heads, "must be > 0");
  check(c.n_kv_heads >= 0 && (c.n_kv_heads == 0 || c.n_heads % c.n_kv_heads == 0), source, "n_kv_heads",
        c.n_kv_heads, "must divide n_heads (or be 0 = n_heads)");
  check(c.head_dim >= 0, source, "head_dim", c.head_dim, "must be >= 0");
  check(c.head_dim > 0 || c.dim % c.n_heads == 0, source, "n_heads", c.n_heads,
        "must divide dim when head_dim is 0");
  check(c.max_seq_len > 0, source, "max_seq_len", c.max_seq_len, "must be > 0");
  check(c.norm_eps > 0, source, "norm_eps", c.norm_eps, "must be > 0");
  check(c.qk_norm_eps > 0, source, "qk_norm_eps", c.qk_norm_eps, "must be > 0");
  const auto p = c.position;
  check(p == nn::PositionKind::none || p == nn::PositionKind::learned || p == nn::PositionKind::sinusoidal ||
            p == nn::PositionKind::rope || p == nn::PositionKind::alibi || p == nn::PositionKind::t5_bias,
        source, "position", nn::position_kind_name(p),
        "a decoder LM takes none, learned, sinusoidal, rope, alibi or t5_bias");
  check(c.rope_theta > 0, source, "rope_theta", c.rope_theta, "must be > 0");
  check(c.rope_scale_factor >= 1.0, source, "rope_scale_factor", c.rope_scale_factor, "must be >= 1");
  check(c.rope_original_max_seq_len >= 0, source, "rope_original_max_seq_len", c.rope_original_max_seq_len,
        "must be >= 0 (0 = max_seq_len)");
  check(c.rope_beta_fast > 0, source, "rope_beta_fast", c.rope_beta_fast, "must be > 0");
  check(c.rope_beta_slow > 0, source, "rope_beta_slow", c.rope_beta_slow, "must be > 0");
  check(c.rope_attention_factor >= 0, source, "rope_attention_factor", c.rope_attention_factor,
        "must be >= 0 (0 = 0.1 ln(rope_scale_factor) + 1)");
  check(c.mlp_hidden >= 0, source, "mlp_hidden", c.mlp_hidden, "must be >= 0 (0 = derived)");
  check(c.mlp_multiple_of > 0, source, "mlp_multiple_of", c.mlp_multiple_of, "must be > 0");
  check(c.sliding_window >= 0, source, "sliding_window", c.sliding_window, "must be >= 0 (0 = none)");
  check(c.window_pattern.find_first_not_of("SL") == std::string::npos, source, "window_pattern",
        "\"" + c.window_pattern + "\"", "takes only S (sliding window) and L (full attention)");
  check(c.window_pattern.empty() || c.sliding_window > 0, source, "window_pattern", "\"" + c.window_pattern + "\"",
        "needs sliding_window > 0");
  const std::string layers = "\"" + c.window_layers + "\"";
  check(c.window_layers.find_first_not_of("SL") == std::string::npos, source, "window_layers", layers,
        "takes only S (sliding window) and L (full attention)");
  check(c.window_layers.empty() || (c.sliding_window > 0 && c.window_pattern.empty()), source, "window_layers", layers,
        "needs sliding_window > 0 and no window_pattern");
  check(c.window_layers.empty() || static_cast<int64_t>(c.window_layers.size()) == c.n_layers, source,
        "window_layers", layers, "must give one letter per layer (n_layers)");
  check(!c.qk_norm_weight || c.qk_norm, source, "qk_norm_weight", "true", "needs qk_norm true");
  check(c.attention_scale >= 0 && std::isfinite(c.attention_scale), source, "attention_scale", c.attention_scale,
        "must be >= 0 (0 = 1 / sqrt(head_dim))");
  check(!c.smear || c.dim >= nn::Smear::kChannels, source, "smear", "true", "needs dim >= 24 (its gate's channels)");
  check(!c.value_embeddings || c.dim >= nn::kValueGateChannels, source, "value_embeddings", "true",
        "needs dim >= 12 (its gates' channels)");
  check(c.logit_softcap >= 0 && std::isfinite(c.logit_softcap), source, "logit_softcap", c.logit_softcap,
        "must be >= 0 (0 = none)");
  check(c.dropout >= 0 && c.dropout < 1, source, "dropout", c.dropout, "must be in [0, 1)");
  check(c.residual_dropout >= 0 && c.residual_dropout < 1, source, "residual_dropout", c.residual_dropout,
        "must be in [0, 1)");
  check(c.init_std > 0, source, "init_std", c.init_std, "must be > 0");
  check(!(c.init == InitScheme::nanochat && c.tie_embeddings), source, "init", "\"nanochat\"",
        "zeroes the head, so it needs tie_embeddings false");
  if (c.moe) {
    const nn::MoEConfig& m = *c.moe;
    check(m.n_experts >= 1, source, "moe.n_experts", m.n_experts, "must be >= 1");
    check(m.n_shared_experts >= 0, source, "moe.n_shared_experts", m.n_shared_experts, "must be >= 0");
    check(m.top_k >= 1 && m.top_k <= m.n_experts, source, "moe.top_k", m.top_k, "must be in [1, n_experts]");
    check(m.aux_loss_alpha >= 0, source, "moe.aux_loss_alpha", m.aux_loss_alpha, "must be >= 0");
    check(m.routing != nn::MoERouting::dense || m.aux_loss_alpha == 0, source, "moe.aux_loss_alpha",
          m.aux_loss_alpha, "must be 0 with dense routing (every token goes to every expert)");
  }
  for (const auto& [key, value] : {std::pair<const char*, int64_t>{"vocab_size", c.vocab_size}, {"dim", c.dim},
                                   {"n_layers", c.n_layers}, {"n_heads", c.n_heads}, {"head_dim", c.head_dim},
                                   {"max_seq_len", c.max_seq_len}, {"mlp_hidden", c.mlp_hidden},
                                   {"mlp_multiple_of", c.mlp_multiple_of}})
    check(value <= kMaxSize, source, key, value, "is beyond any model this engine can build (at most 2^40)");
  if (c.moe) {
    check(c.moe->n_experts <= kMaxSize, source, "moe.n_experts", c.moe->n_experts, "must be at most 2^40");
    check(c.moe->n_shared_experts <= kMaxSize, source, "moe.n_shared_experts", c.moe->n_shared_experts,
          "must be at most 2^40");
  }
  // every key checked above: the block resolves without an error of its own
  const int64_t head_dim = block_config(c).attention.head_dim;
  check(p != nn::PositionKind::rope || head_dim % 2 == 0, source, "head_dim", head_dim, "must be even for RoPE");
  const long double total = counts_in<long double>(c).total;
  NF_CHECK(total <= kMaxParameters, source, ": the config describes ", static_cast<double>(total),
           " parameters, more than the 1e15 any model here can hold");
}

std::string read_config_text(const std::string& path) {
  std::ifstream in(path);
  NF_CHECK(in, "model config ", path, ": cannot be opened");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

DecoderLMConfig load_model_config(const std::string& path) { return parse_model_config(read_config_text(path), path); }

std::string model_config_to_json(const DecoderLMConfig& config) {
  DecoderLMConfig c = config;
  ObjectWriter w;
  w.object["architecture"] = DecoderLMConfig::kArchitecture;
  visit_keys(w, c);
  w.object["moe"] = nullptr;
  if (c.moe) {
    ObjectWriter moe;
    visit_moe_keys(moe, *c.moe);
    w.object["moe"] = moe.object;
  }
  // a name need not be UTF-8 (a folder's, a GGUF's general.name): its bad bytes become U+FFFD
  return w.object.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string configs_directory() {
  if (const char* dir = std::getenv("NANOFORMER_CONFIGS"); dir && *dir) return dir;
  // the nearest configs/ holding the presets, above the working directory or the executable (a
  // checkout), or share/nanoformer/configs/ beside an installed program's bin/
  namespace fs = std::filesystem;
  std::error_code ignored;
  const fs::path exe_dir = fs::read_symlink("/proc/self/exe", ignored).parent_path();
  for (fs::path start : {fs::current_path(ignored), exe_dir})
    for (fs::path p = start; !p.empty(); p = p.parent_path()) {
      if (fs::exists(p / "configs" / "gpt2-124m.json", ignored)) return (p / "configs").string();
      if (p == p.root_path()) break;
    }
  Dl_info self{};  // the library's own file: a program linking an installed libnanoformer.so
  const fs::path library_dir = dladdr(reinterpret_cast<void*>(&configs_directory), &self) && self.dli_fname
                                   ? fs::path(self.dli_fname).parent_path()
                                   : fs::path();
  for (const fs::path& dir : {exe_dir, library_dir}) {
    const fs::path installed = dir.parent_path() / "share" / "nanoformer" / "configs";
    if (!dir.empty() && fs::exists(installed / "gpt2-124m.json", ignored)) return installed.string();
  }
  return "configs";
}

constexpr const char* kModelFileExtensions[] = {".json", ".safetensors", ".bin"};

std::vector<std::string> preset_names() {
  std::vector<std::string> names;
  const std::filesystem::path dir = configs_directory();
  NF_CHECK(std::filesystem::is_directory(dir), "presets: configs directory ", dir.string(),
           " does not exist (set NANOFORMER_CONFIGS to the presets' directory)");
  for (const auto& entry : std::filesystem::directory_iterator(dir))
    if (entry.path().extension() == ".json") names.push_back(entry.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

std::string preset_path(const std::string& name) {
  // a path (a '/' or a model file's extension) that does not exist is no preset either
  const bool looks_like_path = name.find('/') != std::string::npos ||
                               std::any_of(std::begin(kModelFileExtensions), std::end(kModelFileExtensions),
                                           [&](const char* ext) { return name.ends_with(ext); });
  NF_CHECK(!looks_like_path, name, ": no such file or folder");
  const std::filesystem::path path = std::filesystem::path(configs_directory()) / (name + ".json");
  if (!std::filesystem::exists(path)) {
    std::string known;
    for (const auto& n : preset_names()) known += (known.empty() ? "" : ", ") + n;
    NF_FAIL("preset '", name, "' is unknown (known: ", known, ")");
  }
  return path.string();
}

std::string resolve_config_path(const std::string& name_or_path) {
  return std::filesystem::is_regular_file(name_or_path) ? name_or_path : preset_path(name_or_path);
}

DecoderLMConfig preset_config(const std::string& name) { return load_model_config(preset_path(name)); }

DecoderLMConfig resolve_model_config(const std::string& name_or_path) {
  return load_model_config(resolve_config_path(name_or_path));
}

nn::BlockConfig block_config(const DecoderLMConfig& c) {
  nn::BlockConfig b;
  b.attention = {.dim = c.dim, .n_heads = c.n_heads, .n_kv_heads = c.n_kv_heads, .head_dim = c.head_dim,
                 .bias = c.attention_bias, .output_bias = c.attention_bias && c.attention_output_bias,
                 .qk_norm = c.qk_norm, .qk_norm_weight = c.qk_norm_weight, .qk_norm_eps = c.qk_norm_eps,
                 .dropout = c.dropout, .causal = true};
  if (c.attention_scale > 0) b.attention.scale = c.attention_scale;
  b.mlp = {.kind = c.mlp, .dim = c.dim, .hidden = c.mlp_hidden, .multiple_of = c.mlp_multiple_of,
           .bias = c.mlp_bias, .dropout = c.dropout};
  if (c.moe) {
    b.moe = *c.moe;
    b.moe->dim = c.dim;
  }
  b.norm = {.kind = c.norm, .dim = c.dim, .eps = c.norm_eps, .bias = c.norm_bias};
  b.placement = c.norm_placement;
  b.residual_dropout = c.residual_dropout;
  if (c.norm_placement == nn::NormPlacement::deepnorm)
    b.deepnorm_alpha = nn::deepnorm_constants(0, c.n_layers).decoder_alpha;
  return nn::resolved(b);
}

int64_t layer_window(const DecoderLMConfig& c, int64_t layer) {
  if (c.sliding_window == 0) return 0;
  if (!c.window_layers.empty()) return c.window_layers[static_cast<size_t>(layer)] == 'S' ? c.sliding_window : 0;
  if (c.window_pattern.empty()) return c.sliding_window;
  const bool last = layer == c.n_layers - 1;  // always full, as nanochat's
  const char kind = c.window_pattern[static_cast<size_t>(layer) % c.window_pattern.size()];
  return !last && kind == 'S' ? c.sliding_window : 0;
}

nn::PositionalConfig positional_config(const DecoderLMConfig& c) {
  nn::PositionalConfig p;
  p.kind = c.position;
  p.max_len = c.max_seq_len;
  p.dim = c.dim;
  p.n_heads = c.n_heads;
  p.head_dim = block_config(c).attention.head_dim;
  p.rope_layout = c.rope_layout;
  p.theta = c.rope_theta;
  p.scaling = c.rope_scaling;
  p.scale_factor = c.rope_scale_factor;
  p.original_max_len = c.rope_original_max_seq_len;
  p.beta_fast = c.rope_beta_fast;
  p.beta_slow = c.rope_beta_slow;
  p.attention_factor = c.rope_attention_factor;
  p.bidirectional = false;  // T5 bias: causal buckets (keys at or before the query)
  return p;
}

ParameterCounts parameter_counts(const DecoderLMConfig& c) {
  validate_model_config(c);
  return counts_in<int64_t>(c);
}

int64_t count_parameters(const DecoderLMConfig& c) { return parameter_counts(c).total; }

}  // namespace nf::models
