// EncoderDecoderConfig: JSON parsing with unknown-key rejection, validation, the component configs.
#include "nanoformer/models/config/encoder_decoder_config.h"

#include <array>

#include "models/config/config_keys.h"
#include "nanoformer/core/error.h"
#include "util/json_input.h"

namespace nf::models {
namespace {

using namespace config_keys;

constexpr std::array<std::pair<Seq2SeqInit, const char*>, 2> kInitNames{
    {{Seq2SeqInit::xavier, "xavier"}, {Seq2SeqInit::normal, "normal"}}};

template <class Visitor>
void visit_keys(Visitor& v, EncoderDecoderConfig& c) {
  v.value("name", c.name);
  v.value("src_vocab_size", c.src_vocab_size);
  v.value("tgt_vocab_size", c.tgt_vocab_size);
  v.value("dim", c.dim);
  v.value("n_encoder_layers", c.n_encoder_layers);
  v.value("n_decoder_layers", c.n_decoder_layers);
  v.value("n_heads", c.n_heads);
  v.choice("mlp", c.mlp, nn::mlp_kind_from_name, nn::mlp_kind_name);
  v.value("mlp_hidden", c.mlp_hidden);
  v.choice("position", c.position, nn::parse_position_kind, nn::position_kind_name);
  v.value("max_seq_len", c.max_seq_len);
  v.choice("norm_placement", c.norm_placement, nn::norm_placement_from_name, nn::norm_placement_name);
  v.value("norm_eps", c.norm_eps);
  v.value("scale_embeddings", c.scale_embeddings);
  v.value("share_embeddings", c.share_embeddings);
  v.value("tie_output", c.tie_output);
  v.value("dropout", c.dropout);
  v.choice("init", c.init, table_parser(kInitNames), table_namer(kInitNames));
  v.value("init_std", c.init_std);
}

// The config's own default, 0 = 4 dim for every FFN kind (MLPConfig's would size a SwiGLU otherwise).
int64_t ffn_hidden(const EncoderDecoderConfig& c) { return c.mlp_hidden > 0 ? c.mlp_hidden : 4 * c.dim; }

// 001/004's layer with the config's FFN kind, norm eps and norm placement.
nn::BlockConfig with_config_choices(nn::BlockConfig b, const EncoderDecoderConfig& c) {
  b.mlp.kind = c.mlp;
  b.norm.eps = c.norm_eps;
  b.placement = c.norm_placement;
  return b;
}

}  // namespace

EncoderDecoderConfig parse_encoder_decoder_config(const std::string& json_text, const std::string& source) {
  const EncoderDecoderConfig c = parse_config<EncoderDecoderConfig>(json_text, source, [](auto& visitor, EncoderDecoderConfig& config) { visit_keys(visitor, config); });
  validate_encoder_decoder_config(c, source);
  return c;
}

std::string encoder_decoder_config_to_json(const EncoderDecoderConfig& config) {
  return config_to_json(config, [](auto& visitor, EncoderDecoderConfig& c) { visit_keys(visitor, c); });
}

void validate_encoder_decoder_config(const EncoderDecoderConfig& c, const std::string& source) {
  check(c.src_vocab_size > 0, source, "src_vocab_size", c.src_vocab_size, "must be > 0");
  check_at_most(c.src_vocab_size, kMaxEntries, source, "src_vocab_size");
  check_at_most(c.tgt_vocab_size, kMaxEntries, source, "tgt_vocab_size");
  check_at_most(c.dim, kMaxWidth, source, "dim");
  check_at_most(c.n_encoder_layers, kMaxLayers, source, "n_encoder_layers");
  check_at_most(c.n_decoder_layers, kMaxLayers, source, "n_decoder_layers");
  check_at_most(c.mlp_hidden, kMaxWidth, source, "mlp_hidden");
  check_at_most(c.max_seq_len, kMaxEntries, source, "max_seq_len");
  check(c.tgt_vocab_size > 0, source, "tgt_vocab_size", c.tgt_vocab_size, "must be > 0");
  check(!c.share_embeddings || c.tgt_vocab_size == c.src_vocab_size, source, "tgt_vocab_size", c.tgt_vocab_size,
        "must equal src_vocab_size when share_embeddings is true (one vocabulary)");
  check(c.dim > 0, source, "dim", c.dim, "must be > 0");
  check(c.n_encoder_layers > 0, source, "n_encoder_layers", c.n_encoder_layers, "must be > 0");
  check(c.n_decoder_layers > 0, source, "n_decoder_layers", c.n_decoder_layers, "must be > 0");
  check(c.n_heads > 0 && c.dim % c.n_heads == 0, source, "n_heads", c.n_heads, "must be > 0 and divide dim");
  check(c.mlp_hidden >= 0, source, "mlp_hidden", c.mlp_hidden, "must be >= 0 (0 = 4 dim)");
  check(c.position == nn::PositionKind::sinusoidal || c.position == nn::PositionKind::learned, source, "position",
        nn::position_kind_name(c.position), "an encoder-decoder takes sinusoidal or learned");
  check(c.position != nn::PositionKind::sinusoidal || c.dim % 2 == 0, source, "dim", c.dim,
        "must be even for sinusoidal positions");
  check(c.max_seq_len > 0, source, "max_seq_len", c.max_seq_len, "must be > 0");
  check(c.norm_placement == nn::NormPlacement::post || c.norm_placement == nn::NormPlacement::pre, source,
        "norm_placement", nn::norm_placement_name(c.norm_placement), "an encoder-decoder takes post or pre");
  check(c.norm_eps > 0, source, "norm_eps", c.norm_eps, "must be > 0");
  check(c.dropout >= 0 && c.dropout < 1, source, "dropout", c.dropout, "must be in [0, 1)");
  check(c.init_std > 0, source, "init_std", c.init_std, "must be > 0");
}

int64_t count_parameters(const EncoderDecoderConfig& c) {
  validate_encoder_decoder_config(c);
  const int64_t d = c.dim;
  const nn::BlockConfig encoder_block = encoder_block_config(c);
  const int64_t embeddings = nn::embedding_parameter_count(c.src_vocab_size, d) +
                             (c.share_embeddings ? 0 : nn::embedding_parameter_count(c.tgt_vocab_size, d));
  const int64_t positions = 2 * nn::positional_parameter_count(encoder_decoder_positional_config(c));  // one table each
  const int64_t layers = c.n_encoder_layers * nn::block_parameter_counts(encoder_block).total +
                         c.n_decoder_layers * nn::block_parameter_counts(decoder_block_config(c)).total;
  const int64_t final_norms =
      c.norm_placement == nn::NormPlacement::pre ? 2 * nn::norm_parameter_count(encoder_block.norm) : 0;
  const int64_t head = c.tie_output ? 0 : nn::linear_parameter_count(d, c.tgt_vocab_size, false);
  return embeddings + positions + layers + final_norms + head;
}

nn::BlockConfig encoder_block_config(const EncoderDecoderConfig& c) {
  return nn::resolved(with_config_choices(nn::encoder_layer(c.dim, c.n_heads, ffn_hidden(c), c.dropout), c));
}

nn::BlockConfig decoder_block_config(const EncoderDecoderConfig& c) {
  return nn::resolved(with_config_choices(nn::decoder_layer(c.dim, c.n_heads, ffn_hidden(c), c.dropout), c));
}

nn::PositionalConfig encoder_decoder_positional_config(const EncoderDecoderConfig& c) {
  nn::PositionalConfig p;
  p.kind = c.position;
  p.max_len = c.max_seq_len;
  p.dim = c.dim;
  return p;
}

}  // namespace nf::models
