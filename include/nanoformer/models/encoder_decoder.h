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
#include "nanoformer/models/config/encoder_decoder_config.h"
#include "nanoformer/models/model.h"
#include "nanoformer/nn/block.h"
#include "nanoformer/nn/kv_cache.h"
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

// What the decoder keeps while it generates over one memory: per decoder layer the cross-attention
// keys and values of the memory (computed once, read at every step), the source padding, and the
// self-attention KV cache of the target so far. A memory of one row serves every row of the cache
// (the beams of one source share it as a stride-0 view).
struct DecoderState {
  std::vector<nn::ContextKV> memory_kv;
  Tensor src_padding;  // (memory rows, S) bool, or undefined
  nn::KVCache cache;
  // Row r continues from row rows[r] (beam search: each beam from its parent): the cache's rows,
  // and the memory's when it has one row per cache row.
  void select_rows(const std::vector<int64_t>& rows);
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

  // Cached decoding (inference: eval mode, no autograd). start_decoding projects the memory
  // (1 or `rows` rows, (., S, dim)) into every layer's cross-attention keys and values and sizes
  // a self-attention cache of `rows` rows and max_len target tokens (0 = max_seq_len);
  // decode_cached(tgt (rows, T), state) feeds the next T target tokens and returns their logits
  // (rows, T or 1 with last_only, tgt_vocab_size), equal to decode() over the whole target so far.
  DecoderState start_decoding(const Tensor& memory, int64_t rows, int64_t max_len = 0, const Tensor& src_padding = {});
  Tensor decode_cached(const Tensor& tgt, DecoderState& state, bool last_only = false);

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
  // (positions from `offset`)
  Tensor embed(nn::Embedding& embedding, nn::AbsolutePosition& positions, const Tensor& ids, const char* what,
               int64_t offset = 0);

  EncoderDecoderConfig config_;
  std::shared_ptr<nn::Dropout> dropout_;  // on the embeddings; null when config.dropout is 0
};

}  // namespace nf::models
