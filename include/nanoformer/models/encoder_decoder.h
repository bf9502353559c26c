#pragma once
// The encoder-decoder Transformer of reference documents 001 and 004, built from an
// EncoderDecoderConfig:
//   encode: src ids -> src_embeddings (x sqrt(dim)) + encoder_positions (-> dropout)
//           -> encoder_layers (self-attention over real source tokens) (-> encoder_norm)  = memory
//   decode: tgt ids -> tgt_embeddings (x sqrt(dim)) + decoder_positions (-> dropout)
//           -> decoder_layers (causal self-attention, cross-attention to memory) (-> decoder_norm)
//           -> head (output, or the target embedding matrix when tied) = logits -> loss
// Every layer is an nn::TransformerBlock (nn::encoder_layer / decoder_layer); the final norms
// exist with pre-norm placement only (post-norm layers end in a norm already).
// Parameter names: src_embeddings.weight, [tgt_embeddings.weight] (absent when shared: the
// decoder then embeds with src_embeddings), encoder_positions.{pe | weight},
// decoder_positions.{pe | weight} (pe a persistent buffer), encoder_layers.N.<block names>,
// decoder_layers.N.<block names>, [encoder_norm.*, decoder_norm.*], [output.weight] (absent when
// tied).
#include <memory>
#include <string>
#include <vector>

#include "nanoformer/core/generator.h"
#include "nanoformer/models/encoder_decoder_config.h"
#include "nanoformer/models/model.h"
#include "nanoformer/nn/block.h"
#include "nanoformer/nn/positional.h"

namespace nf::models {

// Which tokens are real: bool masks, true = a real token, undefined = every token is real.
struct PaddingMasks {
  Tensor src{};  // (B, S): padded source tokens are hidden from encoder self-attention and cross-attention
  Tensor tgt{};  // (B, T): padded target tokens are hidden from decoder self-attention
};

struct Seq2SeqOutput {
  Tensor logits;  // (B, T, tgt_vocab_size)
  Tensor loss;    // () mean cross-entropy over targets != -100; only with targets
};

class EncoderDecoder : public Model {
 public:
  static constexpr const char* kArchitecture = EncoderDecoderConfig::kArchitecture;

  // Validates the config (nf::Error naming the bad key) and initialises as config.init says.
  explicit EncoderDecoder(const EncoderDecoderConfig& config, Generator& gen = default_generator());

  // src (B, S) and tgt (B, T) integer ids, S, T <= max_seq_len; targets (B, T) integer with -100 =
  // ignored, or undefined. Equals decode(tgt, encode(src, padding.src), padding).
  Seq2SeqOutput forward(const Tensor& src, const Tensor& tgt, const Tensor& targets = {},
                        const PaddingMasks& padding = {});
  // The encoder's output (B, S, dim), the memory the decoder attends to.
  Tensor encode(const Tensor& src, const Tensor& src_padding = {});
  // The logits (B, T, tgt_vocab_size) of tgt given the memory; padding.src masks the memory.
  Tensor decode(const Tensor& tgt, const Tensor& memory, const PaddingMasks& padding = {});

  const EncoderDecoderConfig& config() const { return config_; }
  std::string architecture() const override { return kArchitecture; }
  std::string config_json() const override;
  // embeddings, positions, encoder attention, encoder mlp, decoder self-attn, cross-attention,
  // decoder mlp, norms, head: the parameters grouped by name.
  std::vector<ParameterPart> parameter_parts() const override;
  int64_t max_context() const override { return config().max_seq_len; }
  int64_t tied_head_weights() const override { return config().tie_output ? config().tgt_vocab_size * config().dim : 0; }
  // The head's weight (tgt_vocab_size, dim): output->weight, or the target embedding's when tied.
  const Tensor& head_weight() const;

  std::shared_ptr<nn::Embedding> src_embeddings;
  std::shared_ptr<nn::Embedding> tgt_embeddings;  // the same module as src_embeddings when shared
  std::shared_ptr<nn::AbsolutePosition> encoder_positions, decoder_positions;
  std::shared_ptr<nn::ModuleList<nn::TransformerBlock>> encoder_layers, decoder_layers;
  std::shared_ptr<nn::UnaryModule> encoder_norm, decoder_norm;  // pre-norm placement only, else null
  std::shared_ptr<nn::Linear> output;                           // null when tied

 private:
  // ids -> embedding (x sqrt(dim)) + positions (-> dropout): (B, L, dim)
  Tensor embed(nn::Embedding& embedding, nn::AbsolutePosition& positions, const Tensor& ids, const char* what);

  EncoderDecoderConfig config_;
  std::shared_ptr<nn::Dropout> dropout_;  // on the embeddings; null when config.dropout is 0
};

}  // namespace nf::models
