#pragma once
// What every decoding loop shares (Session, the server's Scheduler, greedy_generate): a sequence
// held in a KV cache, kept within the cache's context by shifting it, and the step that samples a
// token and decides whether to stop.
//
// Generation past the context: when the next tokens do not fit, the first `keep` tokens stay,
// the oldest half of the rest is dropped and the later keys move down (DecoderLM::shift_context:
// RoPE keys rotated, as llama.cpp's context shift), or, where keys cannot move (absolute position
// embeddings), the kept tokens are re-encoded. `crop` instead drops just enough tokens and always
// re-encodes: nanoGPT's crop to the last max_seq_len tokens, exactly a full forward over that
// window, at one prefill per token.
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "nanoformer/grammar/constraint.h"
#include "nanoformer/infer/sampler.h"
#include "nanoformer/infer/stop_criteria.h"
#include "nanoformer/models/decoder_lm.h"
#include "nanoformer/nn/kv_cache.h"

namespace nf::infer {

struct ContextShift {
  int64_t keep = 0;   // --keep: tokens at the start that are never dropped (a system prompt)
  bool crop = false;  // drop only what must go and re-encode the rest (exact, slow)
};

// A sequence in its own KV cache: tokens() are what the cache holds, in order.
class CachedSequence {
 public:
  // A cache of one row and max_len positions (0: the model's max_seq_len), of cache_type (nn/kv_cache.h).
  CachedSequence(models::DecoderLM& model, int64_t max_len = 0, ContextShift shift = {},
                 QuantType cache_type = QuantType::f32);

  const std::vector<int64_t>& tokens() const { return tokens_; }
  // Becomes a copy of `other` (a sequence over the same model and cache shape): its tokens and cache.
  void copy_from(const CachedSequence& other);
  nn::KVCache& cache() { return cache_; }
  const nn::KVCache& cache() const { return cache_; }
  int64_t max_len() const { return cache_.shape().max_len; }
  void reset();

  // Rolls back to the longest common prefix of tokens() and `sequence`, always leaving at least
  // its last token to feed (so that its logits are computed); returns the tokens kept.
  int64_t keep_common_prefix(const std::vector<int64_t>& sequence);
  // Makes room for n more tokens, shifting the context when they do not fit; false when it cannot
  // (the kept tokens leave no room).
  bool make_room(int64_t n);
  // Feeds ids after tokens() (which must have room: make_room); returns the last position's logits
  // (1, 1, vocab_size), or with all_positions every fed position's (1, T, vocab_size).
  Tensor feed(const std::vector<int64_t>& ids, bool all_positions = false);
  // Records ids that a forward over several caches fed (the server's batched decode step).
  void fed(const std::vector<int64_t>& ids) { tokens_.insert(tokens_.end(), ids.begin(), ids.end()); }

 private:
  models::DecoderLM& model_;
  nn::KVCache cache_;
  ContextShift shift_;
  std::vector<int64_t> tokens_;
};

// After a token: false stops generation (a stop string, a client gone).
using OnToken = std::function<bool(int64_t id)>;

// One step of a decoding loop: samples the next token from a row of logits, appends it to
// `history` (what the repetition penalty reads), and returns it with why to stop after it, the
// `count`-th new token (none to go on).
struct SampledToken {
  int64_t id = 0;
  StopReason reason = StopReason::none;
};
SampledToken sample_step(Sampler& sampler, std::span<const float> logits, std::vector<int64_t>& history,
                         const StopCriteria& stop, int64_t count, const OnToken& on_token);

// A grammar's part in a step (grammar/constraint.h), around sample_step: the row to sample
// from (the logits masked into `masked`, or as they are without a constraint), and after the
// token, the constraint moved past it and the reason to stop (end_of_sequence once only the end
// can follow).
std::span<const float> constrained_row(grammar::GrammarConstraint* constraint, std::span<const float> logits,
                                       std::vector<float>& masked);
StopReason after_constrained_token(grammar::GrammarConstraint* constraint, int64_t id, StopReason reason);

}  // namespace nf::infer
