#pragma once
// Choosing the next token from a row of logits: greedy (argmax) or sampling after the logits
// processors of Hugging Face's generate, applied in its order:
//
//   1. repetition penalty (CTRL): for every distinct id t in the tokens so far,
//        x_t <- x_t < 0 ? x_t * penalty : x_t / penalty        (RepetitionPenaltyLogitsProcessor)
//   1b. frequency and presence penalties (OpenAI's), over the tokens generated so far, c_t being
//        how often t was generated:  x_t <- x_t - c_t * frequency - (c_t > 0) * presence
//   2. temperature:  x_i <- x_i / T                             (TemperatureLogitsWarper)
//   3. top-k:        x_i <- -inf where x_i < the k-th largest x (ties at the k-th value all kept)
//   4. top-p:        keep the smallest set of most likely tokens whose probability reaches p:
//                    sort ascending, c_j = cumsum(softmax(x))_j, x_j <- -inf where c_j <= 1 - p
//                    (in f32), the most likely token always kept. Equal logits sort as a
//                    stable sort does (the lower id first, so at the boundary the higher id
//                    is kept), as torch.sort for up to 16 tokens; beyond, its order is arbitrary
//   5. min-p:        x_i <- -inf where p_i < min_p * max_j p_j
//   then draw i with probability softmax(x)_i.
//
// Ids at or above `vocab_limit` (when set) are removed first (logit -inf), so that neither greedy
// nor sampling ever picks an id the tokenizer does not have.
// Greedy (temperature 0, HF's do_sample=False) applies only the penalties and takes the
// argmax (ties: the lowest id, as torch.argmax). Draws come from a Philox generator seeded by
// `seed`: every row sampled takes the next counter of that stream (a batch takes one per row, in
// row order) and draws u in [0, 1) from it, so the same seed gives the same tokens whatever the
// thread count.
#include <cstdint>
#include <span>
#include <vector>

#include "nanoformer/core/generator.h"
#include "nanoformer/core/tensor.h"

namespace nf::infer {

struct SamplerConfig {
  double temperature = 1.0;         // --temperature: 0 = greedy
  int64_t top_k = 0;                // --top-k: 0 = off
  double top_p = 1.0;               // --top-p: in (0, 1]; 1 = off
  double min_p = 0.0;               // --min-p: in [0, 1]; 0 = off
  double repetition_penalty = 1.0;  // --repetition-penalty: > 0; 1 = off
  double frequency_penalty = 0.0;   // --frequency-penalty: in [-2, 2]; 0 = off
  double presence_penalty = 0.0;    // --presence-penalty: in [-2, 2]; 0 = off
  uint64_t seed = 0;                // --seed
  int64_t vocab_limit = 0;          // ids >= this are never drawn (a tokenizer smaller than the model's
                                    // padded vocabulary); 0 = all

  bool greedy() const { return temperature == 0.0; }
  // Throws nf::Error naming the flag and the value out of range.
  void validate() const;
};

// The transforms, each in place on one row of logits (exposed for tests; Sampler applies them).
void apply_repetition_penalty(std::span<float> logits, std::span<const int64_t> tokens, double penalty);
// `generated`: the tokens generated so far (not the prompt's).
void apply_frequency_presence_penalties(std::span<float> logits, std::span<const int64_t> generated, double frequency,
                                        double presence);
void apply_temperature(std::span<float> logits, double temperature);
void apply_top_k(std::span<float> logits, int64_t top_k);
void apply_top_p(std::span<float> logits, double top_p);
void apply_min_p(std::span<float> logits, double min_p);
// x_i <- -inf for i >= vocab_limit (nothing when vocab_limit is 0 or covers the row).
void apply_vocab_limit(std::span<float> logits, int64_t vocab_limit);
// All that `config` turns on, in the order above (only the limit and the penalties when greedy).
// `tokens`: the sequence so far, of which the last `generated` were generated (the frequency and
// presence penalties read those; the repetition penalty reads all).
void process_logits(std::span<float> logits, std::span<const int64_t> tokens, const SamplerConfig& config,
                    size_t generated = 0);

// argmax, the lowest id among equal maxima.
int64_t argmax(std::span<const float> logits);
// The id whose cumulative softmax(logits) first exceeds u in [0, 1) (inverse CDF; -inf never).
int64_t sample_from_logits(std::span<const float> logits, double u);
// softmax(logits) as the sampler draws from it (the softmax op's; -inf gives exactly 0).
std::vector<float> softmax_probabilities(std::span<const float> logits);
// The id whose cumulative weight first exceeds u times the weights' sum (weights >= 0, not
// necessarily normalised; zero weights never): sample_from_logits over softmax_probabilities.
int64_t sample_from_probabilities(std::span<const float> weights, double u);

class Sampler {
 public:
  explicit Sampler(const SamplerConfig& config);  // validates config

  // The next token for one row of logits (vocab floats); `tokens`: the sequence so far (prompt
  // and generated), which the repetition penalty reads; its last `generated` were generated.
  int64_t next(std::span<const float> logits, std::span<const int64_t> tokens, size_t generated = 0);
  // One token per row of (B, V) f32 logits, row b taking the next counter after row b - 1's;
  // tokens[b]: row b's sequence so far, its last `generated` generated (the same count for every row).
  std::vector<int64_t> next(const Tensor& logits, std::span<const std::vector<int64_t>> tokens, size_t generated = 0);

  // The distribution next() draws from for this row: softmax of the processed logits, or, greedy,
  // one-hot at the argmax (speculative decoding's p and q, infer/draft_model.h).
  std::vector<float> distribution(std::span<const float> logits, std::span<const int64_t> tokens, size_t generated = 0);
  // A uniform u in [0, 1) from the next counter (a draw of speculative decoding's rejection rule).
  double uniform();

  const SamplerConfig& config() const { return config_; }

 private:
  int64_t next_row(std::span<const float> logits, std::span<const int64_t> tokens, size_t generated, uint64_t counter);

  SamplerConfig config_;
  Generator generator_;
  std::vector<float> row_;  // the row being processed
};

}  // namespace nf::infer
