#pragma once
// Generation from a decoder language model with a KV cache that lives as long as the session: a
// prompt is prefilled in one pass, then tokens are sampled one at a time, each fed back alone.
// Between calls the cache keeps what it holds, so a chat sends only the new part of the
// conversation: generate() keeps the longest common prefix of the cached tokens and the new
// sequence (rolling the cache back to it) and prefills the rest, as llama.cpp's server does.
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "nanoformer/infer/decode_step.h"
#include "nanoformer/infer/sampler.h"
#include "nanoformer/infer/stop_criteria.h"
#include "nanoformer/models/decoder_lm.h"
#include "nanoformer/nn/kv_cache.h"

namespace nf::infer {

struct GenerationResult {
  std::vector<int64_t> tokens;      // the new tokens, the end-of-sequence id included when reached
  StopReason reason = StopReason::none;
  int64_t prompt_tokens = 0;        // prefilled by this call (those already cached are not counted)
  double prefill_seconds = 0, decode_seconds = 0;
  int64_t draft_tokens = 0;     // speculative decoding: tokens drafted and verified
  int64_t accepted_tokens = 0;  // of those, the ones taken (each a step saved)
  double acceptance_rate() const;  // accepted / drafted (0 when nothing was drafted)
  double prefill_tokens_per_s() const;
  double decode_tokens_per_s() const;  // the tokens after the first (decoded one by one) / their time
};

class Session {
 public:
  // A cache for one sequence of up to max_len tokens (0: the model's max_seq_len), stored as
  // cache_type (nn/kv_cache.h), continued past that by `shift` (infer/cached_sequence.h).
  explicit Session(models::DecoderLM& model, int64_t max_len = 0, ContextShift shift = {},
                   QuantType cache_type = QuantType::f32);

  using OnToken = infer::OnToken;
  // `sequence` is the whole sequence to continue (the prompt; in a chat, the conversation so far).
  // Samples until an end-of-sequence id, max new tokens, on_token returning false, or a context
  // that cannot make room (reason context_full: --keep holds all of it); past the context's end
  // the context shifts. Throws nf::Error when the sequence leaves no room for a new token (naming
  // its length and the context) or holds an id outside the vocabulary. With a `constraint`, every
  // token keeps the output within its grammar, which ends generation where only the end can follow.
  // `speculative`: drafting by prompt lookup (infer/prompt_lookup.h) or a draft model
  // (infer/draft_model.h, whose cache the session keeps too), the same tokens sooner. `tools`: tools
  // the model calls while it decodes (infer/tool_use.h: nanochat's calculator), their answers taken
  // as the next tokens.
  GenerationResult generate(const std::vector<int64_t>& sequence, Sampler& sampler, const StopCriteria& stop,
                            const OnToken& on_token = {}, grammar::GrammarConstraint* constraint = nullptr,
                            const SpeculativeConfig& speculative = {}, ToolUse* tools = nullptr);

  // Every token the cache holds, in order (the last sequence and what was generated after it, the
  // last sampled token excepted: it is fed only when the next call continues past it; after a
  // context shift, without the dropped tokens).
  const std::vector<int64_t>& cached_tokens() const { return sequence_.tokens(); }
  int64_t max_len() const { return sequence_.max_len(); }
  const nn::KVCache& cache() const { return sequence_.cache(); }
  void reset() { sequence_.reset(); }

 private:
  models::DecoderLM& model_;
  CachedSequence sequence_;
  std::unique_ptr<CachedSequence> draft_sequence_;  // the draft model's, once one drafted
};

}  // namespace nf::infer
