#pragma once
// A decoder-only language model built from a DecoderLMConfig, covering GPT-2 (000), MiniMind2
// dense and MoE (002), nanochat (003) and llama2.c's LLaMA as configurations:
//   ids -> tok_embeddings (-> + pos_embeddings) (-> dropout) (-> embedding_norm) -> layers
//       -> norm -> head (output, or tok_embeddings.weight when tied) (-> c tanh(logits / c)) -> loss
// Parameter names: tok_embeddings.weight, [pos_embeddings.weight], [embedding_norm.*],
// layers.N.<TransformerBlock names>, norm.*, [output.weight] (absent when tied: the head then
// uses tok_embeddings.weight itself, so state_dict lists the matrix once).
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "nanoformer/core/generator.h"
#include "nanoformer/models/config/model_config.h"
#include "nanoformer/models/model.h"
#include "nanoformer/nn/block.h"
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

  // A cache for this model: max_batch rows of max_len tokens (0 = max_seq_len, the most it may be).
  nn::KVCache make_cache(int64_t max_batch = 1, int64_t max_len = 0) const;
  // Inference with a KV cache (eval mode; no autograd): ids (B, T) are the next T tokens of the
  // B sequences the cache holds (T = the prompt's length to prefill, then 1 per decoded token, or a
  // chunk of any length after a prefix); they are written into the cache, which advances by T.
  // Returns the logits (B, T, vocab_size), or with last_only those of the last token (B, 1, vocab_size).
  // Equal (up to float rounding) to the matching rows of forward() over the whole sequences.
  Tensor forward_cached(const Tensor& ids, nn::KVCache& cache, bool last_only = false);
  // Continuous batching: row b of ids (B, T) continues the one sequence caches[b] holds, each
  // cache at its own length (sequences that joined at different steps decode together). The
  // linear layers run once over the B rows, attention per cache. Equal (up to float rounding) to
  // forward_cached of each row alone with its cache; logits (B, T or 1, vocab_size).
  Tensor forward_cached_rows(const Tensor& ids, std::span<nn::KVCache* const> caches, bool last_only = false);
  // Prefills prompts of different lengths into an empty cache (left-padded, see nn/kv_cache.h):
  // each prompt alone into its row, right-aligned. Returns each prompt's last logits (B, 1, vocab_size).
  Tensor prefill_ragged(const std::vector<std::vector<int64_t>>& prompts, nn::KVCache& cache);

  const DecoderLMConfig& config() const { return config_; }
  std::string architecture() const override { return kArchitecture; }
  std::string config_json() const override;
  // The parts of model_stats' ParameterCounts (routed / shared experts and router with MoE, else mlp).
  std::vector<ParameterPart> parameter_parts() const override;
  int64_t max_context() const override { return config_.max_seq_len; }
  int64_t tied_head_weights() const override { return output ? 0 : head_weight().numel(); }
  // The head's weight (vocab_size, dim): output->weight, or tok_embeddings->weight when tied.
  const Tensor& head_weight() const;

  std::shared_ptr<nn::Embedding> tok_embeddings;
  std::shared_ptr<nn::AbsolutePosition> pos_embeddings;      // learned or sinusoidal, else null
  std::shared_ptr<nn::UnaryModule> embedding_norm;           // null unless config.embedding_norm
  std::shared_ptr<nn::AttentionPosition> attention_position; // RoPE / ALiBi / identity, shared by all layers
  std::shared_ptr<nn::ModuleList<nn::TransformerBlock>> layers;
  std::shared_ptr<nn::UnaryModule> norm;
  std::shared_ptr<nn::Linear> output;                        // null when tied

 private:
  // tok_embeddings (+ positions, row b's first token at positions[b]) (-> dropout) (-> embedding_norm)
  Tensor embed(const Tensor& ids, const std::vector<int64_t>& positions);
  // The cached forward of ids whose rows go to caches[i] (steps[i] begun on it), in order.
  Tensor forward_steps(const Tensor& ids, std::span<nn::KVCache* const> caches, const std::vector<nn::KVCacheStep>& steps,
                       bool last_only);
  // norm -> head (-> softcap): (B, T, dim) -> (B, T, vocab_size)
  Tensor head(const Tensor& x);

  DecoderLMConfig config_;
  std::shared_ptr<nn::Dropout> dropout_;  // on the embeddings; null when config.dropout is 0
};

// Draws the model's weights as `scheme` says (see InitScheme); the constructor calls it with config.init.
void init_weights(DecoderLM& model, InitScheme scheme, Generator& gen);

}  // namespace nf::models
