// EncoderConfig: JSON keys through config_keys.h (unknown keys rejected), validation, and the
// component configs.
#include "nanoformer/models/config/encoder_config.h"

#include <array>

#include "models/config/config_keys.h"
#include "nanoformer/core/error.h"
#include "util/json_input.h"

namespace nf::models {
namespace {

using namespace config_keys;

template <class Visitor>
void visit_keys(Visitor& v, EncoderConfig& c) {
  v.value("name", c.name);
  v.value("vocab_size", c.vocab_size);
  v.value("dim", c.dim);
  v.value("n_layers", c.n_layers);
  v.value("n_heads", c.n_heads);
  v.choice("mlp", c.mlp, nn::mlp_kind_from_name, nn::mlp_kind_name);
  v.value("mlp_hidden", c.mlp_hidden);
  v.value("max_seq_len", c.max_seq_len);
  v.choice("position", c.position, nn::parse_position_kind, nn::position_kind_name);
  v.value("type_vocab_size", c.type_vocab_size);
  v.value("pad_token_id", c.pad_token_id);
  v.value("scale_embeddings", c.scale_embeddings);
  v.value("embedding_norm", c.embedding_norm);
  v.choice("norm", c.norm, nn::norm_kind_from_name, nn::norm_kind_name);
  v.value("norm_eps", c.norm_eps);
  v.choice("norm_placement", c.norm_placement, nn::norm_placement_from_name, nn::norm_placement_name);
  v.value("pooler", c.pooler);
  v.value("dropout", c.dropout);
  v.value("attention_dropout", c.attention_dropout);
  v.value("mlp_dropout", c.mlp_dropout);
  v.value("attention_bias", c.attention_bias);
  v.value("mlp_bias", c.mlp_bias);
  v.value("init_std", c.init_std);
}

bool is_probability(double p) { return p >= 0 && p < 1; }

}  // namespace

EncoderConfig parse_encoder_config(const std::string& json_text, const std::string& source) {
  const EncoderConfig c = parse_config<EncoderConfig>(json_text, source, [](auto& visitor, EncoderConfig& config) { visit_keys(visitor, config); });
  validate_encoder_config(c, source);
  return c;
}

std::string encoder_config_to_json(const EncoderConfig& config) {
  return config_to_json(config, [](auto& visitor, EncoderConfig& c) { visit_keys(visitor, c); });
}

void validate_encoder_config(const EncoderConfig& c, const std::string& source) {
  check(c.vocab_size > 0, source, "vocab_size", c.vocab_size, "must be > 0");
  check_at_most(c.vocab_size, kMaxEntries, source, "vocab_size");
  check_at_most(c.dim, kMaxWidth, source, "dim");
  check_at_most(c.n_layers, kMaxLayers, source, "n_layers");
  check_at_most(c.mlp_hidden, kMaxWidth, source, "mlp_hidden");
  check_at_most(c.max_seq_len, kMaxEntries, source, "max_seq_len");
  check_at_most(c.type_vocab_size, kMaxEntries, source, "type_vocab_size");
  check(c.dim > 0, source, "dim", c.dim, "must be > 0");
  check(c.n_layers > 0, source, "n_layers", c.n_layers, "must be > 0");
  check(c.n_heads > 0, source, "n_heads", c.n_heads, "must be > 0");
  check(c.dim % c.n_heads == 0, source, "n_heads", c.n_heads, "must divide dim");
  check(c.mlp_hidden >= 0, source, "mlp_hidden", c.mlp_hidden, "must be >= 0 (0 = derived)");
  check(c.max_seq_len > 0, source, "max_seq_len", c.max_seq_len, "must be > 0");
  check(c.position == nn::PositionKind::learned || c.position == nn::PositionKind::sinusoidal, source, "position",
        nn::position_kind_name(c.position), "an encoder takes learned or sinusoidal");
  check(c.type_vocab_size >= 0, source, "type_vocab_size", c.type_vocab_size, "must be >= 0 (0 = none)");
  check(c.pad_token_id >= -1 && c.pad_token_id < c.vocab_size, source, "pad_token_id", c.pad_token_id,
        "must be a token id below vocab_size, or -1 (none)");
  check(c.norm_eps > 0, source, "norm_eps", c.norm_eps, "must be > 0");
  check(c.norm_placement == nn::NormPlacement::post || c.norm_placement == nn::NormPlacement::pre, source,
        "norm_placement", nn::norm_placement_name(c.norm_placement), "an encoder takes post or pre");
  check(is_probability(c.dropout), source, "dropout", c.dropout, "must be in [0, 1)");
  check(is_probability(c.attention_dropout), source, "attention_dropout", c.attention_dropout, "must be in [0, 1)");
  check(is_probability(c.mlp_dropout), source, "mlp_dropout", c.mlp_dropout, "must be in [0, 1)");
  check(c.init_std > 0, source, "init_std", c.init_std, "must be > 0");
}

nn::BlockConfig encoder_block_config(const EncoderConfig& c) {
  nn::BlockConfig b;
  b.attention = {.dim = c.dim, .n_heads = c.n_heads, .bias = c.attention_bias, .dropout = c.attention_dropout,
                 .causal = false};
  b.mlp = {.kind = c.mlp, .dim = c.dim, .hidden = c.mlp_hidden, .bias = c.mlp_bias, .dropout = c.mlp_dropout};
  b.norm = {.kind = c.norm, .dim = c.dim, .eps = c.norm_eps};
  b.placement = c.norm_placement;
  b.residual_dropout = c.dropout;
  return nn::resolved(b);
}

nn::PositionalConfig encoder_positional_config(const EncoderConfig& c) {
  return {.kind = c.position, .max_len = c.max_seq_len, .dim = c.dim};
}

std::vector<ParameterPart> encoder_parameter_parts(const EncoderConfig& c) {
  validate_encoder_config(c);
  const nn::BlockConfig block = encoder_block_config(c);
  const nn::BlockParameterCounts layer = nn::block_parameter_counts(block);
  const int64_t D = c.dim, L = c.n_layers;
  // [embedding_norm,] [norm]: the norms outside the layers
  const int64_t outer_norms = (c.embedding_norm ? 1 : 0) + (c.norm_placement == nn::NormPlacement::pre ? 1 : 0);
  return {{"embedding", nn::embedding_parameter_count(c.vocab_size, D)},
          {"positions", nn::positional_parameter_count(encoder_positional_config(c))},
          {"token types", nn::embedding_parameter_count(c.type_vocab_size, D)},
          {"attention", L * layer.attention},
          {"mlp", L * layer.mlp},
          {"norms", L * layer.norms + outer_norms * nn::norm_parameter_count(block.norm)},
          {"pooler", c.pooler ? nn::linear_parameter_count(D, D, true) : 0}};
}

}  // namespace nf::models
