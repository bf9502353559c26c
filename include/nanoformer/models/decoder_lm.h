#pragma once
// A decoder-only language model built from a DecoderLMConfig, covering GPT-2 (000), MiniMind2
// dense and MoE (002), nanochat (003) and llama2.c's LLaMA as configurations:
//   ids -> tok_embeddings (-> + pos_embeddings) (-> dropout) (-> embedding_norm) (-> smear) = x0
//       -> layers (each: [x = resid_i x + x0_i x0], the block [with layer i's value embedding])
//       (-> backout) -> norm -> head (output, or tok_embeddings.weight when tied) (-> c tanh(logits / c)) -> loss
// (the bracketed parts are nanochat's current GPT: value_embeddings, residual_scalars, smear, backout)
// Parameter names: tok_embeddings.weight, [pos_embeddings.weight], [embedding_norm.*],
// layers.N.<TransformerBlock names>, norm.*, [output.weight] (absent when tied: the head then
// uses tok_embeddings.weight itself, so state_dict lists the matrix once), [value_embeds.N.weight],
// [residual_scalars.{resid_lambdas,x0_lambdas}], [smear.{gate_weight,lambda}], [backout.lambda].
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "nanoformer/core/generator.h"
#include "nanoformer/models/config/model_config.h"
#include "nanoformer/models/model.h"
#include "nanoformer/nn/backout.h"
#include "nanoformer/nn/block.h"
#include "nanoformer/nn/residual_scalars.h"
#include "nanoformer/nn/smear.h"
#include "nanoformer/nn/value_embedding.h"
#include "nanoformer/nn/kv_cache.h"
#include "nanoformer/nn/positional.h"

namespace nf::models {

struct LMOutput {
  Tensor logits;      // (B, T, vocab_size)
  // With targets only (undefined otherwise):
  Tensor token_loss;  // () mean cross-entropy over targets != -100
  Tensor aux_loss;    // () summed MoE load-balancing loss of all layers (0 in eval mode; undefined without MoE)
  Tensor loss;        // () token_loss (+ aux_loss): what training minimises
  // With return_hidden only (empty otherwise): the output of layers.N, (B, T, dim), for every N
  // (before the final norm).
  std::vector<Tensor> hidden;
};

class DecoderLM : public Model {
 public:
  static constexpr const char* kArchitecture = DecoderLMConfig::kArchitecture;

  // Validates the config (nf::Error naming the bad key) and initialises as config.init says.
  explicit DecoderLM(const DecoderLMConfig& config, Generator& gen = default_generator());

  // ids (B, T) integer, T <= max_seq_len; targets (B, T) integer with -100 = ignored, or undefined.
  // return_hidden also keeps every block's output in LMOutput::hidden.
  LMOutput forward(const Tensor& ids, const Tensor& targets = {}, bool return_hidden = false);
  // The final norm's output (B, T, dim) for ids (B, T): what the head reads, without the head (PPO's
  // critic puts its value head there, train/critic.h).
  Tensor final_hidden(const Tensor& ids);

  // A cache for this model: max_batch rows of max_len positions (0 = max_seq_len, the most it may
  // be), stored as cache_type says (f32, f16, bf16, q8_0, q4_0: nn/kv_cache.h); sliding-window layers get
  // ring buffers of O(window) memory; block_len > 0 makes it paged (the other layers in shared blocks
  // of block_len positions, nn/kv_cache.h).
  nn::KVCache make_cache(int64_t max_batch = 1, int64_t max_len = 0, QuantType cache_type = QuantType::f32,
                         int64_t block_len = 0) const;
  // Inference with KV caches (eval mode; no autograd), the same blocks as forward(): ids (B, T) are
  // the next T tokens of the sequences the caches hold, B / caches.size() rows per cache, in order
  // (one cache for a batch, or one cache per sequence when sequences at different lengths decode
  // together: the linear layers and attention run once over every row, each row over its own cache). T is a prompt to
  // prefill (fed in chunks when sliding-window ring buffers need it), 1 per decoded token, or a
  // chunk after a prefix; every cache advances by T. Returns the logits (B, T, vocab_size), or
  // with last_only those of the last token (B, 1, vocab_size). Equal (up to float rounding) to
  // the matching rows of forward() over each whole sequence alone.
  Tensor forward_cached(const Tensor& ids, std::span<nn::KVCache* const> caches, bool last_only = false);
  Tensor forward_cached(const Tensor& ids, nn::KVCache& cache, bool last_only = false) {
    nn::KVCache* const one[] = {&cache};
    return forward_cached(ids, one, last_only);
  }
  // Continues past the cache's end: drops positions keep .. keep + discard - 1 from `cache` and
  // moves the later keys down by `discard` positions (RoPE keys rotated by -discard, as llama.cpp's
  // context shift; score-bias schemes need nothing). False, changing nothing, when the keys
  // cannot be moved: absolute position embeddings live in every layer's hidden states, and a
  // sliding-window ring may lack keys; the caller then re-encodes the kept tokens.
  bool shift_context(nn::KVCache& cache, int64_t keep, int64_t discard);

  const DecoderLMConfig& config() const { return config_; }
  std::string architecture() const override { return kArchitecture; }
  std::string config_json() const override;
  // The parts of model_stats' ParameterCounts (routed / shared experts and router with MoE, else mlp).
  std::vector<ParameterPart> parameter_parts() const override;
  int64_t max_context() const override { return config_.max_seq_len; }
  int64_t tied_head_weights() const override { return output ? 0 : config_.vocab_size * config_.dim; }
  // The dtype activations and the KV cache take: the embedding table's, f32 when it is quantised.
  DType compute_dtype() const;

  std::shared_ptr<nn::Embedding> tok_embeddings;
  std::shared_ptr<nn::AbsolutePosition> pos_embeddings;      // learned or sinusoidal, else null
  std::shared_ptr<nn::UnaryModule> embedding_norm;           // null unless config.embedding_norm
  std::shared_ptr<nn::AttentionPosition> attention_position; // RoPE / ALiBi / identity, shared by all layers
  std::shared_ptr<nn::ModuleList<nn::TransformerBlock>> layers;
  std::shared_ptr<nn::UnaryModule> norm;
  std::shared_ptr<nn::Linear> output;                        // null when tied
  std::shared_ptr<nn::ValueEmbeddings> value_embeds;         // null unless config.value_embeddings
  std::shared_ptr<nn::ResidualScalars> residual_scalars;     // null unless config.residual_scalars
  std::shared_ptr<nn::Smear> smear;                          // null unless config.smear
  std::shared_ptr<nn::Backout> backout;                      // null unless config.backout

 private:
  // tok_embeddings (+ positions: rows [rows_at[i], rows_at[i + 1]) start at positions[i]) (-> dropout)
  // (-> embedding_norm) (-> smear, continuing from what each cache carries, which it then updates)
  Tensor embed(const Tensor& ids, const std::vector<int64_t>& positions, int64_t rows_per_position,
               std::span<nn::KVCache* const> caches = {});
  // The blocks over x (the tokens ids); with caches, layer i reads and extends caches[c]->at(i, steps[c]).
  Tensor blocks(Tensor x, const Tensor& ids, std::span<nn::KVCache* const> caches,
                const std::vector<nn::KVCacheStep>& steps, std::vector<Tensor>* hidden);
  // norm -> head (-> softcap): (B, T, dim) -> (B, T, vocab_size)
  Tensor head(const Tensor& x);

  DecoderLMConfig config_;
  std::shared_ptr<nn::Dropout> dropout_;  // on the embeddings; null when config.dropout is 0
};

// Draws the model's weights as `scheme` says (see InitScheme); the constructor calls it with config.init.
void init_weights(DecoderLM& model, InitScheme scheme, Generator& gen);

}  // namespace nf::models
