#pragma once
// The one decoding loop, as nanochat's engine.py: streams, each a sequence in its own KV cache
// (infer/cached_sequence.h) with its sampler, stop criteria, grammar and callbacks, decoded
// together, one token each per step. Session (generate, chat, the C API), greedy_generate, the
// eval harness's generative tasks, GRPO's rollouts and the server's Scheduler all run it; the
// scheduler adds only scheduling (admission, chunked prefill, which streams step together).
//
//   prefill  the prompt fed to the stream's sequence, the next token accepted from its last logits;
//            with a draft model, the prompt fed to its sequence too
//   step     every running stream's last token fed in one forward over their caches
//            (CachedSequence::feed: the linear layers once over the stacked rows, attention per
//            cache at its own length), then each stream accepts the next token from its row
//   accept   the grammar's mask, the sampler, the stop criteria, on_logprobs and on_token, and
//            room in the cache for the token (the context shift); a stream whose sampler or
//            callback throws ends alone, its exception kept; with tools (infer/tool_use.h), the
//            tokens a tool hands back after a token are taken next, one a step, unsampled
//   wait     with tools answered off the decoding thread (ToolUse::answer_off_thread, the server's),
//            a stream whose call runs is left out of the steps (fed nothing, sampling nothing) while
//            the others go on; each step asks its tool again, and once the answer is there its
//            tokens are taken as above, from the next step. Where nothing else runs, decode()
//            sleeps until the answer arrives. Off by default: a stream then never waits, and steps
//            (and a shared sampler's draws) come in the same order as without tools
//   draft    with speculative decoding, a stream guesses the tokens after its last one, by prompt
//            lookup (infer/prompt_lookup.h) or with a draft model (infer/draft_model.h: the
//            streams' draft-model forwards of a step run together); decode_step then feeds it
//            [last, guesses] (every position's logits, in one forward with the other streams whose
//            drafts have as many tokens) and accepts row by row: a lookup guess while the token the
//            row's plain sampling takes equals it, a draft model's by the rejection rule; the
//            cache is rolled back to what was taken
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "nanoformer/grammar/constraint.h"
#include "nanoformer/infer/cached_sequence.h"
#include "nanoformer/infer/draft_model.h"
#include "nanoformer/infer/logprobs.h"
#include "nanoformer/infer/prompt_lookup.h"
#include "nanoformer/infer/sampler.h"
#include "nanoformer/infer/stop_criteria.h"
#include "nanoformer/infer/tool_use.h"

namespace nf::infer {

// After a token: false stops generation (a stop string, a client gone).
using OnToken = std::function<bool(int64_t id)>;
// Before on_token: the token's log-probability and its top alternatives (infer/logprobs.h).
using OnLogprobs = std::function<void(const TokenLogprobs&)>;

struct StreamCallbacks {
  OnToken on_token = {};
  OnLogprobs on_logprobs = {};
  int64_t top_logprobs = 0;  // alternatives on_logprobs reports
  // Tools the model calls while it decodes (infer/tool_use.h): after each token the stream takes,
  // the tokens it hands back are taken next, one a step, instead of sampled (nanochat's calculator
  // answers); none while they wait is drafted, and an end-of-sequence id among them (the end of a
  // turn in a chat template's tool message) does not end the stream, and the grammar (a
  // constraint) skips them. Must outlive the stream.
  ToolUse* tools = nullptr;
};

class DecodeStream {
 public:
  // `history`: the tokens so far (the prompt), what the repetition penalty reads. With a
  // `constraint`, every token keeps the output within its grammar (the logprobs are then those of
  // the masked distribution), and the stream ends (end_of_sequence) once only the end can follow.
  // The sequence, the sampler and the constraint must outlive the stream; streams may share a
  // sampler (one random stream, each row taking the next draw in step order). `speculative`:
  // drafting by prompt lookup or a draft model (off by default). `draft_sequence`: with a draft
  // model, its sequence to keep (a Session's, a server slot's: what it holds is reused); null: the
  // stream makes its own of the target sequence's length and cache type.
  DecodeStream(CachedSequence& sequence, Sampler& sampler, StopCriteria stop, std::vector<int64_t> history,
               grammar::GrammarConstraint* constraint = nullptr, StreamCallbacks callbacks = {},
               SpeculativeConfig speculative = {}, CachedSequence* draft_sequence = nullptr);

  // Feeds ids (the prompt, or what of it the cache does not hold) and accepts the next token; a
  // draft model's sequence gets the whole prompt (what of it it does not hold).
  void prefill(const std::vector<int64_t>& ids);
  // The next token from `logits` (vocab floats) of the sequence's last fed position.
  void accept(std::span<const float> logits);
  // The tokens guessed to follow generated().back() (at most what the cache has room for and
  // what max_new_tokens still allows); empty when this step drafts nothing: speculation off,
  // paused by the backoff, no match, fewer than --draft-min, or a cache that cannot roll back.
  std::vector<int64_t> draft();
  // Every stream's draft (empty for those not drafting), the draft-model forwards of all of them
  // together: one forward per round (and per draft model and count of ids to feed).
  static std::vector<std::vector<int64_t>> draft(std::span<DecodeStream* const> streams);
  // After the sequence was fed [generated().back(), draft...]: `logits` holds its draft.size() + 1
  // rows (vocab floats each). Accepts row i as accept() does while the token taken equals
  // draft[i] (a draft model's draft: by the rejection rule, infer/draft_model.h), then rolls the
  // sequence back to the tokens taken.
  void verify(std::span<const int64_t> draft, std::span<const float> logits);

  bool running() const { return reason_ == StopReason::none && !error_; }
  // Running, but its tool's call (answered off this thread) is not answered yet: not stepped.
  bool waiting() const { return callbacks_.tools != nullptr && callbacks_.tools->answering(); }
  // When waiting: whether the answer is there; then its tokens are the next to take (on_turn told
  // first, on this thread) and the stream steps again. False too when taking it failed (error()).
  bool resume();
  // When waiting: blocks until the tool's answer is there.
  void wait_for_tool() { callbacks_.tools->wait_for_answer(); }
  StopReason reason() const { return reason_; }  // none while running, and when it failed or a callback threw
  std::exception_ptr error() const { return error_; }
  const std::vector<int64_t>& generated() const { return generated_; }  // the end-of-sequence id included
  // generated()[i] was handed back by a tool (forced, not sampled): what RL leaves out of the loss,
  // as nanochat's engine.py masks (0) and chat_rl.py ignores its forced tokens
  const std::vector<bool>& forced() const { return forced_flags_; }
  CachedSequence& sequence() { return *sequence_; }
  int64_t drafted() const { return drafted_; }    // draft tokens verified
  int64_t accepted() const { return accepted_; }  // of those, the ones taken

 private:
  CachedSequence* sequence_;
  Sampler* sampler_;
  StopCriteria stop_;
  std::vector<int64_t> history_;
  grammar::GrammarConstraint* constraint_;
  StreamCallbacks callbacks_;
  std::vector<int64_t> generated_;
  std::vector<bool> forced_flags_;  // of generated_
  std::deque<int64_t> forced_;  // the tools' tokens still to take
  std::vector<float> masked_;  // with a constraint: the row it masked
  StopReason reason_ = StopReason::none;
  std::exception_ptr error_;
  SpeculativeConfig speculative_;
  DraftBackoff backoff_;  // of speculative_'s --draft-max and --draft-min
  std::unique_ptr<ModelDraft> model_draft_;  // with a draft model
  int64_t drafted_ = 0, accepted_ = 0;

  // accept() but for making room: the token from `row` (false when the stream failed)
  bool take(std::span<const float> row);
  // The token from `row` by the rejection rule at drafted token x of draft distribution q.
  bool take_drafted(std::span<const float> row, int64_t x, std::span<const float> q);
  std::span<const float> masked(std::span<const float> row);  // the grammar's mask applied (a copy)
  // The token taken: history, stop, callbacks, grammar; a forced one (a tool's) never ends the
  // stream as an end-of-sequence id and is not walked by the grammar (which constrains the model's
  // own text: a tool's answer is outside it).
  void commit(int64_t id, std::span<const float> row, bool forced = false);
  void make_room();
  int64_t draft_room();  // the most tokens this step may draft (0: none)
  // With a draft model: the next draft token from the draft model's last logits; whether the draft goes on.
  bool propose(std::span<const float> logits);
};

// One step: every running stream's last token fed at once, then each accepts its next token;
// streams with drafts of k tokens are fed [last, draft] together, one forward per k, and verify
// them (DecodeStream::verify). A waiting stream whose tool has not answered yet is left out.
// Returns the streams stepped (0: none ran, or every running one waits on its tool).
size_t decode_step(std::span<DecodeStream* const> streams);
// Steps until no stream runs, sleeping while every running stream waits on its tool (until the
// first of them is answered); then rethrows the first exception a stream kept.
void decode(std::span<DecodeStream* const> streams);

}  // namespace nf::infer
