#pragma once
// Speculative decoding with a draft model (llama.cpp's --model-draft): a smaller model with the
// target's vocabulary proposes the next tokens, one forward of it each, and the target checks them
// in one forward (infer/decode_step.h: DecodeStream::draft and verify). The sampling rule is
// Leviathan et al. 2023, "Fast Inference from Transformers via Speculative Decoding"
// (arXiv:2211.17192), Algorithm 1, as Chen et al. 2023 (arXiv:2302.01318) state it:
//
//   catch-up  each stream keeps the draft model's own CachedSequence (the target's cache type and
//             length), fed the prompt with the target's prefill. Before a draft it is brought to
//             what the target holds plus its last token: the longest common prefix kept (a refused
//             draft's tail rolled back), the rest fed in one forward; after the target's context
//             shift its kept tokens are fed again, and a cache that cannot roll back (a
//             sliding-window ring past it) is fed again from the start. A probe after a pause
//             (DraftBackoff) further behind than DraftBackoff::kProbeWindow starts it afresh on the
//             last kProbeWindow tokens
//   propose   draft token i is drawn from q_i: the draft model's logits through the stream's own
//             sampler (Sampler::distribution: the penalties over the history and the draft so far,
//             temperature, top-k, top-p, min-p; greedy: one-hot at the argmax) after the grammar's
//             mask, the constraint advanced along the draft and restored after it, so that every
//             drafted token is allowed. A draft ends at the backoff's window (--draft-max,
//             DraftBackoff), at an end id, or where the grammar can only end; the streams' draft
//             forwards of a step run together (one forward per round over their draft caches)
//   verify    target row i gives p_i, the distribution plain decoding samples from there; d_i is
//             taken with probability min(1, p_i(d_i) / q_i(d_i)) (u q_i(d_i) < p_i(d_i), u uniform);
//             at the first refusal the token is drawn from norm(max(0, p_i - q_i)) and the rest of
//             the draft is dropped; when all k are taken one more is drawn from p_(k+1). Greedy,
//             p and q are one-hot: d_i is taken iff it is the target's argmax, and the residual
//             is the argmax: plain greedy decoding's tokens
//
// Why the tokens keep the target's distribution (Leviathan et al., appendix A.1): the token after
// a row is d with probability q(d) min(1, p(d) / q(d)) = min(q(d), p(d)) from acceptance, plus
// (1 - sum_x min(q(x), p(x))) max(0, p(d) - q(d)) / sum_x max(0, p(x) - q(x)) from the residual;
// sum_x max(0, p - q) = 1 - sum_x min(p, q), so the second term is max(0, p(d) - q(d)), and
// min(q, p) + max(0, p - q) = p(d).
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "nanoformer/grammar/matcher.h"
#include "nanoformer/infer/cached_sequence.h"
#include "nanoformer/infer/sampler.h"

namespace nf::infer {

// Throws nf::Error naming both models (`target_name`, `draft_name`: their files) when the draft
// cannot draft for the target: vocabularies of different sizes, or a draft model whose
// max_seq_len is shorter than the target's context `context`.
void check_draft_model(const models::DecoderLM& target, std::string_view target_name, const models::DecoderLM& draft,
                       std::string_view draft_name, int64_t context);

// A forward of `draft` in forwards of `target`, for the backoff's gain (DraftBackoff): the bytes
// of the draft's weights over the target's, as decoding a token reads each weight once.
double draft_cost(const models::DecoderLM& target, const models::DecoderLM& draft);

// The token taken at a drafted token x drawn from q, where the target's distribution is p (both of
// vocab floats, the sampler's): x with probability min(1, p(x) / q(x)), else a draw from
// norm(max(0, p - q)) (from p itself where rounding leaves that empty). Draws from `sampler`'s
// counters: one, and a second on a refusal.
int64_t speculative_choice(std::span<const float> p, std::span<const float> q, int64_t x, Sampler& sampler);

// How sure the draft model is of its next token, for --draft-p-min: the probability of its most
// likely token in the softmax of its kDraftTopK largest logits, llama.cpp's draft sampler (top-k 10,
// then the softmax, and the draft ends before a token below p_min: common/speculative.cpp of
// llama.cpp 0c1e570, tools/peers/build_llamacpp.sh). `logits`: the row after the grammar's mask.
inline constexpr size_t kDraftTopK = 10;
float draft_confidence(std::span<const float> logits);

// One stream's drafting with a draft model: its sequence in the draft model's cache and the draft
// being proposed (DecodeStream drives it).
class ModelDraft {
 public:
  // `sequence`: the draft model's sequence to keep (a Session's or a server slot's, kept across
  // requests); null: one of the target's length and cache type, owned.
  ModelDraft(models::DecoderLM& draft_model, CachedSequence* sequence, const CachedSequence& target);

  CachedSequence& sequence() { return *sequence_; }
  // Feeds the prompt to the sequence, with the target's prefill (the first draft then feeds the
  // token after it alone; a server's slot feeds its chunks itself).
  void prefill(const std::vector<int64_t>& prompt);
  // Starts a draft of at most `limit` tokens after `context` (the target's tokens and its last
  // one): rolls the sequence back to their common prefix and returns the ids still to feed it.
  // With `window` > 0 (a probe after a pause), more than `window` ids to feed start the sequence
  // afresh on the last `window` tokens of context, which it then follows from there: a draft is
  // only a guess, which the target's verification keeps or refuses whatever the draft model saw.
  std::vector<int64_t> begin(const std::vector<int64_t>& context, int64_t limit, int64_t window = 0);
  // The draft so far, and q_i of each token (vocab floats each).
  const std::vector<int64_t>& tokens() const { return tokens_; }
  std::span<const float> q(size_t i) const { return {q_.data() + i * vocab_, vocab_}; }
  // Adds token x drawn from distribution q; returns whether the draft may go on.
  bool add(int64_t x, std::vector<float> q);
  void end() { limit_ = 0; }
  bool open() const { return static_cast<int64_t>(tokens_.size()) < limit_; }
  // Where the grammar was before the draft (restored after it).
  grammar::GrammarMatcher::State grammar_state;

 private:
  std::unique_ptr<CachedSequence> own_;
  CachedSequence* sequence_;
  size_t from_ = 0;  // the sequence holds the context from this token on (0 unless a window began it)
  std::vector<int64_t> tokens_;
  std::vector<float> q_;
  size_t vocab_;
  int64_t limit_ = 0;
};

}  // namespace nf::infer
