#pragma once
// The configuration of the encoder-decoder Transformer (reference documents 001 and 004), as one
// flat JSON object with "architecture": "encoder_decoder". Parsing rejects unknown or misspelled
// keys (naming the key, the source and the nearest known key) and bad values; docs/models.md lists
// every key with its default. The preset configs/transformer-base.json is 001's base model.
#include <cstdint>
#include <string>

#include "nanoformer/nn/block.h"
#include "nanoformer/nn/positional.h"

namespace nf::models {

// How a freshly built model's weights are drawn:
//   xavier  every Linear weight xavier_uniform (torch.nn.Transformer's reset), biases 0,
//           embeddings and learned positions normal(0, dim^-1/2) (so that sqrt(dim) x embedding
//           has unit variance)
//   normal  every Linear weight, embedding and learned position normal(0, init_std), biases 0
enum class Seq2SeqInit { xavier, normal };

struct EncoderDecoderConfig {
  static constexpr const char* kArchitecture = "encoder_decoder";  // the config's "architecture" key (required)
  std::string name;                 // a label ("transformer-base"); "" when none
  int64_t src_vocab_size = 0;       // > 0
  int64_t tgt_vocab_size = 0;       // > 0; equal to src_vocab_size with share_embeddings
  int64_t dim = 0;                  // model width d, > 0, divisible by n_heads
  int64_t n_encoder_layers = 0;     // > 0
  int64_t n_decoder_layers = 0;     // > 0
  int64_t n_heads = 0;              // > 0
  nn::MLPKind mlp = nn::MLPKind::relu;
  int64_t mlp_hidden = 0;           // FFN width; 0 = 4 dim
  nn::PositionKind position = nn::PositionKind::sinusoidal;  // sinusoidal or learned
  int64_t max_seq_len = 0;          // > 0: the longest source and target
  nn::NormPlacement norm_placement = nn::NormPlacement::post;  // post (001) or pre (then final norms)
  double norm_eps = 1e-5;
  bool scale_embeddings = true;     // embeddings times sqrt(dim) before the positions are added (004)
  bool share_embeddings = false;    // one embedding matrix for source and target tokens
  bool tie_output = true;           // the pre-softmax linear is the target embedding matrix
  double dropout = 0.0;             // embeddings + positions, attention weights, FFN hidden, sublayer outputs
  Seq2SeqInit init = Seq2SeqInit::xavier;
  double init_std = 0.02;           // `normal` only
};

// Parses a config from JSON text; `source` prefixes every error. Throws nf::Error naming an unknown
// key, a key of the wrong type, or a bad value.
EncoderDecoderConfig parse_encoder_decoder_config(const std::string& json_text, const std::string& source = "<string>");
// The JSON of `config` with every key and "architecture" (pretty-printed); the parser gives it back.
std::string encoder_decoder_config_to_json(const EncoderDecoderConfig& config);
// Throws nf::Error naming the first bad option.
void validate_encoder_decoder_config(const EncoderDecoderConfig& config, const std::string& source = "<config>");

// The exact parameter count of the model `config` describes, without building it (the layers' from
// nn::block_parameter_counts).
int64_t count_parameters(const EncoderDecoderConfig& config);

// The component configs: 001/004's encoder and decoder layers (nn::encoder_layer, decoder_layer)
// with the config's FFN, norm and placement, resolved (nn::resolved), and the absolute positions.
nn::BlockConfig encoder_block_config(const EncoderDecoderConfig& config);
nn::BlockConfig decoder_block_config(const EncoderDecoderConfig& config);
nn::PositionalConfig encoder_decoder_positional_config(const EncoderDecoderConfig& config);

}  // namespace nf::models
