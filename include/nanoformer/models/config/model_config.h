#pragma once
// The configuration of a decoder-only language model: every architectural choice the reference
// families make (GPT-2 000, MiniMind2 002, nanochat 003, llama2.c), as one flat JSON object.
// Parsing rejects unknown or misspelled keys (naming the key, the source, and the nearest known
// key) and bad values (naming key and value); docs/models.md lists every key with its default.
// Presets live as JSON files in configs/ and load by name ("gpt2-124m").
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "nanoformer/nn/block.h"
#include "nanoformer/nn/positional.h"

namespace nf::models {

// How a freshly built model's weights are drawn:
//   normal    every Linear and embedding ~ normal(0, init_std), biases 0 (GPT-2, MiniMind)
//   nanochat  Linear ~ normal(0, 1/sqrt(fan_in) min(1, sqrt(fan_out/fan_in))), embedding ~ normal(0, 1),
//             head and every output projection (attention o_proj, the MLP's last Linear) zero (003)
//   deepnet   embeddings and head as `normal`; blocks by nn::deepnorm_init with the decoder-only
//             beta = (8 n_layers)^(-1/4)
enum class InitScheme { normal, nanochat, deepnet };

struct DecoderLMConfig {
  static constexpr const char* kArchitecture = "decoder_lm";  // the config's "architecture" key (optional)
  std::string name;              // a label ("gpt2-124m"); "" when none
  int64_t vocab_size = 0;        // > 0
  int64_t dim = 0;               // model width, > 0
  int64_t n_layers = 0;          // > 0
  int64_t n_heads = 0;           // > 0
  int64_t n_kv_heads = 0;        // dividing n_heads; 0 = n_heads
  int64_t head_dim = 0;          // 0 = dim / n_heads (dim must then be divisible)
  int64_t max_seq_len = 0;       // > 0: positions a forward may reach (learned / sinusoidal / RoPE tables)
  nn::NormKind norm = nn::NormKind::layernorm;
  double norm_eps = 1e-5;
  bool norm_bias = true;         // layernorm only
  nn::NormPlacement norm_placement = nn::NormPlacement::pre;
  bool embedding_norm = false;   // a norm right after the embedding (nanochat)
  nn::PositionKind position = nn::PositionKind::learned;
  nf::RopeLayout rope_layout = nf::RopeLayout::half;
  double rope_theta = 10000.0;
  nn::RopeScaling rope_scaling = nn::RopeScaling::none;
  double rope_scale_factor = 1.0;
  // rope_scaling yarn: trained context (0 = max_seq_len), ramp bounds, cos/sin factor (0 = 0.1 ln s + 1)
  int64_t rope_original_max_seq_len = 0;
  double rope_beta_fast = 32.0, rope_beta_slow = 1.0, rope_attention_factor = 0.0;
  bool qk_norm = false;          // parameter-free RMS norm of q and k (nanochat)
  bool qk_norm_weight = false;   // with qk_norm: learned (head_dim) weights q_norm / k_norm, before rotation (Qwen3)
  double qk_norm_eps = 1e-6;
  double attention_scale = 0.0;  // multiplies q k^T; 0 = 1 / sqrt(head_dim) (nanochat's q, k * 1.2: 1.44 / sqrt(head_dim))
  // Sliding-window attention: a windowed layer's query sees its sliding_window latest keys, itself
  // included (Mistral's sliding_window; nanochat's flash-attn window (N, 0) is N + 1); 0 = none.
  int64_t sliding_window = 0;
  // Which layers are windowed, tiled across the layers: S = sliding_window, L = full attention; the
  // last layer is always L (nanochat's window_pattern, e.g. "SSSL"). Empty: every layer (Mistral).
  std::string window_pattern;
  // Or exactly which layers are windowed: one letter per layer, S or L, no tiling and no rule for
  // the last layer (Qwen2's layer_types); empty: window_pattern decides.
  std::string window_layers;
  nn::MLPKind mlp = nn::MLPKind::gelu_tanh;
  int64_t mlp_hidden = 0;        // 0 = derived (4 dim, or SwiGLU's from mlp_multiple_of)
  int64_t mlp_multiple_of = 64;
  bool attention_bias = true;
  bool attention_output_bias = true;  // with attention_bias: o_proj's bias too (false: q, k, v only, Qwen2)
  bool mlp_bias = true;
  bool tie_embeddings = true;    // the head reuses the token embedding matrix
  // nanochat's current GPT (nn/value_embedding.h, residual_scalars.h, smear.h, backout.h):
  bool value_embeddings = false;  // per-token value tables on alternating layers (last included), 12-channel gates
  bool residual_scalars = false;  // x = resid_lambdas[i] x + x0_lambdas[i] x0 before layer i
  bool smear = false;             // the embedding takes in the previous token's through a gate
  bool backout = false;           // x - lambda x_mid (after layer n_layers / 2) before the final norm
  double logit_softcap = 0.0;    // > 0: logits = c tanh(logits / c) (nanochat: 15); 0 = none
  double dropout = 0.0;          // embeddings, attention weights, MLP (where make_mlp puts it)
  double residual_dropout = 0.0; // each sublayer's output before the residual sum (001/004)
  std::optional<nn::MoEConfig> moe;  // replaces every MLP with routed (+ shared) experts of kind `mlp`
  InitScheme init = InitScheme::normal;
  double init_std = 0.02;        // `normal` and `deepnet` (embeddings and head)
};

// Parses a config from JSON text; `source` (a file path, a preset name) prefixes every error.
// Throws nf::Error naming an unknown key, a key of the wrong type, or a bad value.
DecoderLMConfig parse_model_config(const std::string& json_text, const std::string& source = "<string>");
// The text of a config file (an error naming the path when it cannot be read).
std::string read_config_text(const std::string& path);
// Reads and parses a JSON file.
DecoderLMConfig load_model_config(const std::string& path);
// The JSON of `config` with every key (pretty-printed); parse_model_config gives it back.
std::string model_config_to_json(const DecoderLMConfig& config);
// Throws nf::Error naming the first bad option (parse_model_config and DecoderLM call it).
void validate_model_config(const DecoderLMConfig& config, const std::string& source = "<config>");

// Preset names ("gpt2-124m", ...): the *.json files of the configs directory, sorted. The
// directory is $NANOFORMER_CONFIGS when set, else the nearest configs/ holding gpt2-124m.json
// above the working directory or above the running executable (a build tree inside the repo),
// else share/nanoformer/configs beside the bin/ of an installed program or the lib/ of an
// installed libnanoformer.so.
std::string configs_directory();
std::vector<std::string> preset_names();
// The file of preset `name` (configs/<name>.json); an unknown name is an error listing the known ones,
// and a name that is a path (a '/', or ending in .json, .safetensors or .bin) an error saying that
// no such file exists.
std::string preset_path(const std::string& name);
// A path to a JSON file as is, or a preset name's file.
std::string resolve_config_path(const std::string& name_or_path);
DecoderLMConfig preset_config(const std::string& name);
// A path to a JSON file, or a preset name.
DecoderLMConfig resolve_model_config(const std::string& name_or_path);

// The component configs the model builds from: one block (every layer the same), resolved
// (nn::resolved: n_kv_heads, head_dim and the MLP's hidden filled in, so its fields are the built
// modules' sizes), and the positional scheme (created once, shared by all layers).
nn::BlockConfig block_config(const DecoderLMConfig& config);
// Layer i's attention window (0 = full) as sliding_window and window_pattern say.
int64_t layer_window(const DecoderLMConfig& config, int64_t layer);
nn::PositionalConfig positional_config(const DecoderLMConfig& config);

// A DecoderLM's parameters by part, in arithmetic N (int64_t for ParameterCounts; long double
// bounds a config before its exact count is known to fit). The parts sum to total.
template <class N>
struct BasicParameterCounts {
  N embedding = 0;       // tok_embeddings
  N positions = 0;       // learned position table or T5 bias table (sinusoidal ones are a buffer, RoPE/ALiBi have none)
  N attention = 0;       // q, k, v, o projections (with biases) of every layer
  N mlp = 0;             // the dense MLPs (0 with MoE)
  N routed_experts = 0;  // MoE routed experts of every layer
  N shared_experts = 0;  // MoE shared experts of every layer
  N router = 0;          // MoE gates
  N norms = 0;           // every norm (embedding norm, block norms, final norm)
  N value_embeddings = 0; // value tables (their gates count as attention)
  N scalars = 0;          // resid / x0 lambdas, smear gate and lambda, backout lambda
  N head = 0;            // the untied output matrix (0 when tied: the head is the embedding)
  N total = 0;
};
using ParameterCounts = BasicParameterCounts<int64_t>;

// The exact parameter counts of the model `config` describes, without building it: each part the
// sum of the component counts (nn::block_parameter_counts of block_config, ...), so they equal
// DecoderLM(config)'s parameters grouped by name. Validates the config first.
ParameterCounts parameter_counts(const DecoderLMConfig& config);
// parameter_counts(config).total
int64_t count_parameters(const DecoderLMConfig& config);

// The config names of MoE routings: "topk_then_softmax", "softmax_then_topk", "dense".
std::string moe_routing_name(nn::MoERouting routing);

}  // namespace nf::models
