#pragma once
// An encoder-only stack built from an EncoderConfig (BERT; document 004's full encoder):
//   ids -> tok_embeddings (* sqrt(dim)) + pos_embeddings (+ token_type_embeddings)
//       (-> embedding_norm) (-> dropout) -> layers (bidirectional self-attention, padded keys
//       masked) (-> norm, with pre-norm) = last_hidden_state (-> pooler: tanh(dense(first token)))
// Parameter names: tok_embeddings.weight, pos_embeddings.weight (learned; sinusoidal has the buffer
// pos_embeddings.pe), [token_type_embeddings.weight], [embedding_norm.*],
// layers.N.<TransformerBlock names>, [norm.*], [pooler.weight, pooler.bias].
#include <memory>
#include <string>
#include <vector>

#include "nanoformer/core/generator.h"
#include "nanoformer/models/config/encoder_config.h"
#include "nanoformer/models/model.h"
#include "nanoformer/nn/block.h"
#include "nanoformer/nn/positional.h"

namespace nf::models {

struct EncoderOutput {
  Tensor last_hidden_state;    // (B, T, dim)
  Tensor pooler_output;        // (B, dim) with a pooler, else undefined
  std::vector<Tensor> hidden;  // with return_hidden: the output of layers.N, (B, T, dim), for every N
};

class EncoderModel : public Model {
 public:
  static constexpr const char* kArchitecture = EncoderConfig::kArchitecture;

  // Validates the config (nf::Error naming the bad key); every embedding and Linear ~ normal(0,
  // init_std), biases 0, norms 1 and 0, the pad_token_id row 0.
  explicit EncoderModel(const EncoderConfig& config, Generator& gen = default_generator());

  // ids (B, T) integer, T <= max_seq_len; token_type_ids (B, T) integer below type_vocab_size, or
  // undefined (all 0); attention_mask (B, T) integer or bool, 1 = a real token, 0 = padding (no
  // query attends to it), or undefined (all real). return_hidden keeps every layer's output.
  EncoderOutput forward(const Tensor& ids, const Tensor& token_type_ids = {}, const Tensor& attention_mask = {},
                        bool return_hidden = false);

  const EncoderConfig& config() const { return config_; }
  std::string architecture() const override { return kArchitecture; }
  std::string config_json() const override;
  // encoder_parameter_parts(config()): embedding, positions, token types, attention, mlp, norms, pooler.
  std::vector<ParameterPart> parameter_parts() const override;
  int64_t max_context() const override { return config().max_seq_len; }

  std::shared_ptr<nn::Embedding> tok_embeddings;
  std::shared_ptr<nn::AbsolutePosition> pos_embeddings;
  std::shared_ptr<nn::Embedding> token_type_embeddings;       // null when type_vocab_size is 0
  std::shared_ptr<nn::UnaryModule> embedding_norm;            // null unless config.embedding_norm
  std::shared_ptr<nn::ModuleList<nn::TransformerBlock>> layers;
  std::shared_ptr<nn::UnaryModule> norm;                      // the final norm, with pre-norm only
  std::shared_ptr<nn::Linear> pooler;                         // null unless config.pooler

 private:
  void init_weights(Generator& gen);

  EncoderConfig config_;
  std::shared_ptr<nn::Dropout> dropout_;  // on the embeddings; null when config.dropout is 0
};

}  // namespace nf::models
