#pragma once
// The configuration of an encoder-only stack (EncoderModel): BERT (learned positions, token types,
// LayerNorm after the embedding sum, post-norm GELU layers, a pooler) and the full encoder of
// document 004 (sqrt(dim)-scaled embeddings plus sinusoidal positions, post- or pre-norm ReLU
// layers, a final norm with pre-norm) as one flat JSON object with "architecture": "encoder".
// Parsing rejects unknown keys (naming them and the nearest known key) and bad values (naming key
// and value); docs/models.md lists every key.
#include <cstdint>
#include <string>
#include <vector>

#include "nanoformer/models/model.h"
#include "nanoformer/nn/block.h"
#include "nanoformer/nn/positional.h"

namespace nf::models {

struct EncoderConfig {
  static constexpr const char* kArchitecture = "encoder";  // the config's "architecture" key (required)
  std::string name;                   // a label ("bert-base"); "" when none
  int64_t vocab_size = 0;             // > 0
  int64_t dim = 0;                    // model width, > 0, divisible by n_heads
  int64_t n_layers = 0;               // > 0
  int64_t n_heads = 0;                // > 0
  nn::MLPKind mlp = nn::MLPKind::gelu;  // gelu (erf) for BERT, relu for 004
  int64_t mlp_hidden = 0;             // 0 = derived (4 dim; SwiGLU's from 64)
  int64_t max_seq_len = 0;            // > 0: the positions a forward may reach
  nn::PositionKind position = nn::PositionKind::learned;  // learned or sinusoidal
  int64_t type_vocab_size = 0;        // token-type (segment) embeddings; 0 = none
  int64_t pad_token_id = -1;          // its embedding row gets no gradient (torch's padding_idx); -1 = none
  bool scale_embeddings = false;  // token embeddings x sqrt(dim) before the positions (001, 004; BERT: no)
  bool embedding_norm = true;         // a norm right after the embedding sum (BERT)
  nn::NormKind norm = nn::NormKind::layernorm;
  double norm_eps = 1e-12;            // BERT's; 004 uses 1e-5
  nn::NormPlacement norm_placement = nn::NormPlacement::post;  // post or pre (pre adds a final norm, 004)
  bool pooler = false;                // BERT's pooler: tanh(dense(first token's output))
  double dropout = 0.0;               // on the embeddings and on each sublayer's output before its residual sum
  double attention_dropout = 0.0;     // on the attention weights
  double mlp_dropout = 0.0;           // inside the MLP, where make_mlp puts it (004: after the ReLU; BERT: 0)
  bool attention_bias = true;
  bool mlp_bias = true;
  double init_std = 0.02;             // every embedding and Linear ~ normal(0, init_std), biases 0
};

// Parses a config from JSON text ("architecture": "encoder" required); `source` prefixes every
// error. Throws nf::Error naming an unknown key, a key of the wrong type, or a bad value.
EncoderConfig parse_encoder_config(const std::string& json_text, const std::string& source = "<string>");
// The JSON of `config` with every key and "architecture" (pretty-printed); parsing gives it back.
std::string encoder_config_to_json(const EncoderConfig& config);
// Throws nf::Error naming the first bad option.
void validate_encoder_config(const EncoderConfig& config, const std::string& source = "<config>");

// The components the model builds from: one block (every layer the same, bidirectional attention;
// resolved, see nn::resolved) and the absolute positions.
nn::BlockConfig encoder_block_config(const EncoderConfig& config);
nn::PositionalConfig encoder_positional_config(const EncoderConfig& config);

// The exact parameter counts of the model `config` describes, by part, without building it (the
// layers' from nn::block_parameter_counts): embedding, positions, token types, attention, mlp,
// norms, pooler (parts the model lacks are 0).
std::vector<ParameterPart> encoder_parameter_parts(const EncoderConfig& config);

}  // namespace nf::models
