#pragma once
// Continuous batching: one model serves many sequences at once. Sequences wait in a bounded queue;
// up to `parallel` run, each in its own slot (a one-row KV cache that lives as long as the
// scheduler, so nothing is allocated per request). Between two decode steps the scheduler prefills
// up to prefill_chunk prompt tokens, the oldest prompts first (several short ones, or a chunk of a
// long one, so a long prompt delays the running sequences by a chunk per step), then every step decodes
// all running sequences together (infer::decode_step over their streams: the linear layers once
// over the stacked rows, attention per slot at its own length), so a sequence that
// joins does not wait for the others to finish, and each gets the tokens it would get alone.
// A slot keeps its tokens after its sequence ends; a new sequence takes the free slot sharing the
// longest prefix with its prompt and prefills only the rest (a chat's next turn), or copies the
// cache of a running sequence that shares a longer one (n choices of one prompt: one prefill).
//
// With a prefix cache (cache_budget > 0, the default): the slots' caches are paged (nn/kv_cache.h),
// and the full blocks of every prompt and answer go into a PrefixCache (serve/prefix_cache.h) as
// they are computed, so a sequence whose prompt starts with cached blocks (a system prompt shared
// by many clients, a conversation's earlier turns, in any slot, busy or not) maps them instead of
// prefilling them, and holds them once with every other sequence that does. A slot keeps its blocks
// after its sequence ends (a next turn continues from its last, partial block); the prefix cache
// keeps the blocks no slot holds up to the budget, least recently used dropped first, so the KV
// memory is at most the slots' (parallel x context) and the budget. A model with ring-buffered sliding-window layers (nn/kv_cache.h) has no prefix
// cache: its slots stay contiguous, as with cache_budget 0.
//
// Everything runs on the scheduler's own thread; callers talk to it through submit() and the
// callbacks of their sequence, which run on that thread. But tools' calls (SequenceRequest::tools):
// each runs on a thread of its own, its sequence left out of the steps while it runs
// (infer/decode_step.h), so a slow tool delays its own sequence only. While every running sequence
// waits on a tool and nothing else is to do, the scheduler sleeps until an answer or a request
// arrives (a ToolAnswerBell that both ring), looking at cancelled sequences every kToolWaitPoll.
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <list>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "nanoformer/grammar/constraint.h"
#include "nanoformer/infer/logprobs.h"
#include "nanoformer/infer/prompt_lookup.h"
#include "nanoformer/infer/sampler.h"
#include "nanoformer/infer/stop_criteria.h"
#include "nanoformer/infer/tool_use.h"
#include "nanoformer/models/decoder_lm.h"
#include "nanoformer/nn/kv_cache.h"
#include "nanoformer/serve/prefix_cache.h"

namespace nf::infer {
class CachedSequence;
}

namespace nf::serve {

struct SchedulerOptions {
  int64_t parallel = 4;     // sequences decoded together at most (slots)
  int64_t max_queue = 64;   // sequences waiting for a slot at most; submit() refuses beyond
  int64_t context = 0;      // tokens per slot (0: the model's max_seq_len)
  int64_t keep = 0;         // --keep: tokens at a slot's start that its context shift never drops
  QuantType cache_type = QuantType::f32;  // --cache-type: how the slots' caches store keys and values
  // --prefill-chunk: prompt tokens prefilled per step at most (0: a whole prompt at once); a long
  // prompt then delays the running sequences' next token by one chunk's time, not its whole prefill
  int64_t prefill_chunk = 512;
  // --draft: a draft model with the model's vocabulary (infer/draft_model.h) that drafts for every
  // sequence not asking for prompt lookup, each slot keeping its own cache of it (llama-server's
  // -md); a sequence's speculative.draft_max / draft_min bound its drafts. Null: none.
  models::DecoderLM* draft = nullptr;
  // --cache-budget: bytes of KV blocks the prefix cache keeps when no sequence uses them (0: no prefix
  // cache, each slot a contiguous cache, as before it); block_len: positions per block
  int64_t cache_budget = int64_t{1} << 30;
  int64_t block_len = 32;
};

struct SequenceOutcome {
  infer::StopReason reason = infer::StopReason::none;  // none when cancelled or failed
  bool cancelled = false;
  std::string error;             // non-empty when the sequence failed (its prompt was refused, or
                                 // on_token or its sampler threw: it then ends alone)
  int64_t prompt_tokens = 0;     // the prompt's length
  int64_t cached_tokens = 0;     // of those, found in a slot's cache or the prefix cache (not prefilled again)
  int64_t completion_tokens = 0; // new tokens, the end-of-sequence id included
};

struct SequenceRequest {
  std::vector<int64_t> prompt;
  infer::SamplerConfig sampler;
  infer::StopCriteria stop;  // eos ids and max new tokens (stop strings are on_token's business); max new
                             // tokens 0: the prompt is prefilled (and scored) and the sequence ends
  // After each new token, on the scheduler's thread: false ends the sequence (a stop string); an
  // exception ends it with that error, the other sequences going on.
  std::function<bool(int64_t id)> on_token;
  // Once, on the scheduler's thread, however the sequence ends (stats() already count it).
  std::function<void(const SequenceOutcome&)> on_done;
  // Set by the caller to drop the sequence (a client gone): it is freed before the next step.
  std::shared_ptr<std::atomic<bool>> cancelled = std::make_shared<std::atomic<bool>>(false);
  // When set: before each on_token, on the scheduler's thread, the token's log-probability and
  // those of the top_logprobs most likely ids (infer/logprobs.h).
  std::function<void(const infer::TokenLogprobs&)> on_logprobs = nullptr;
  int64_t top_logprobs = 0;
  // When set: once, after the prefill, the logprobs of the prompt's tokens after its first (each
  // from the logits of the position before it, with top_logprobs most likely ids). The prompt is
  // then prefilled from its start, no cached prefix used.
  std::function<void(const std::vector<infer::TokenLogprobs>&)> on_prompt_logprobs = nullptr;
  // When set (structured output): each step's logits are masked to the ids the grammar allows
  // before sampling and before the logprobs (which are then those of the constrained
  // distribution); the sequence ends (end_of_sequence) once the grammar can only end.
  std::shared_ptr<grammar::GrammarConstraint> constraint = nullptr;
  // Speculative decoding by prompt lookup (infer/prompt_lookup.h): the same tokens, several per
  // step where the answer copies the prompt; off by default. With the scheduler's draft model,
  // draft_max and draft_min bound its drafts, unless lookup_ngram asks for prompt lookup instead.
  infer::SpeculativeConfig speculative = {};
  // When set (serve --tools): tools the model calls while it decodes (infer/tool_use.h). The
  // scheduler has them answer off its thread (ToolUse::answer_off_thread): a call runs on a thread
  // of its own (the command tool's --tool-timeout bounds it) while this sequence waits and the
  // others decode; on_turn is still told on the scheduler's thread, before the answer's tokens.
  std::shared_ptr<infer::ToolUse> tools = nullptr;
};

// The upper bounds (seconds) of the time-to-first-token histogram's buckets (/metrics), +Inf after them.
inline constexpr std::array<double, 10> kTimeToFirstTokenBuckets = {0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};

struct SchedulerStats {
  int64_t running = 0;  // taken from the queue and not yet ended
  int64_t queued = 0, parallel = 0, max_queue = 0;
  int64_t decode_steps = 0, decoded_rows = 0;  // batched steps, and the rows they decoded
  int64_t completed = 0, cancelled = 0;
  int64_t prompt_tokens = 0;     // of the sequences started
  int64_t cached_tokens = 0;     // of those, found in a slot's cache or the prefix cache (not prefilled)
  int64_t prefix_cached_tokens = 0;  // of those, the prefix cache's
  // memory: the KV bytes the slots and the prefix cache hold (each block once), and the prefix cache's
  // blocks, their bytes, its budget and the blocks it dropped
  int64_t kv_bytes = 0, slot_kv_bytes = 0;  // (the second: what the slots hold, the prefix cache's unused blocks left out)
  int64_t prefix_cache_blocks = 0, prefix_cache_bytes = 0, cache_budget = 0, prefix_cache_evicted = 0;
  int64_t generated_tokens = 0;  // the first token of each started sequence + those of the decode steps
  int64_t draft_tokens = 0, accepted_tokens = 0;  // speculative decoding: tokens drafted and verified, and those taken
  double prefill_seconds = 0, decode_seconds = 0;  // in prefills, in the batched decode steps
  // the longest prefill step (one --prefill-chunk, or a whole prompt): what a running stream waits at most
  double longest_prefill_step_seconds = 0;
  // time to first token, from submit() to the first token sampled (queue wait and prefill):
  // sequences whose time was <= kTimeToFirstTokenBuckets[i] (cumulative), their count and sum
  std::array<int64_t, kTimeToFirstTokenBuckets.size()> ttft_buckets{};
  int64_t ttft_count = 0;
  double ttft_sum = 0;
};

// While every running sequence waits on a tool: how often the scheduler looks for cancelled ones.
inline constexpr std::chrono::milliseconds kToolWaitPoll{100};

class Scheduler {
 public:
  // Allocates the slots' caches and starts the thread; the model must outlive the scheduler.
  Scheduler(models::DecoderLM& model, const SchedulerOptions& options);
  // Stops the thread; sequences still queued or running end as cancelled. Returns once the tools'
  // calls still running (theirs, or those of sequences cancelled while they ran) have ended.
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Queues the sequences whole or not at all: false (and no callback) when they would leave more
  // than max_queue sequences waiting for a slot.
  bool submit(std::vector<SequenceRequest> requests);
  bool submit(SequenceRequest request) {
    std::vector<SequenceRequest> one;
    one.push_back(std::move(request));
    return submit(std::move(one));
  }
  // The most sequences it ever holds at once (running and waiting): parallel + max_queue.
  int64_t capacity() const { return options_.parallel + options_.max_queue; }
  // Runs `job` on the scheduler's thread between two decode steps (other work on the model, such
  // as embeddings, never runs beside a step) and waits for it; rethrows what it threw. Throws
  // nf::Error when the scheduler stops first.
  void run_between_steps(std::function<void()> job);
  SchedulerStats stats() const;
  int64_t context() const { return context_; }

 private:
  struct Slot;
  struct Running;
  struct Prefill;
  void run();
  using Clock = std::chrono::steady_clock;
  struct Queued {
    SequenceRequest request;
    Clock::time_point submitted;
  };
  void admit(Queued queued);  // validates a sequence taken from the queue and queues its prefill
  void take_slot(Prefill& p);  // the best slot for its prompt (a cached prefix, or a busy slot's copied)
  infer::CachedSequence* draft_sequence(const Prefill& p);  // its slot's draft model cache, if it drafts with it
  // prefill_chunk prompt tokens at most (every prompt whole when 0), oldest prompts first.
  void prefill();
  // Up to `limit` (0: all) more tokens of the oldest prompt; at its end, samples its first token and
  // runs it. Returns the tokens fed.
  int64_t prefill_step(int64_t limit);
  void end_unstarted(Prefill& p, std::string error);  // cancelled before its first token, or refused
  // One decode step over every running sequence not waiting on a tool; whether any stepped.
  bool step();
  // After r's stream accepted a token: its outcome updated; false (and r finished) when it ended.
  bool settle(Running& r);
  void finish(Running& r, SequenceOutcome outcome);
  static void reset_slot(Slot& slot);  // forgets what it holds and frees it
  void publish(const Slot& slot);      // its full blocks into the prefix cache
  void release(Slot& slot);            // its sequence ended: its blocks published, the slot freed
  void update_memory();                // the memory stats

  models::DecoderLM& model_;
  SchedulerOptions options_;
  int64_t context_;
  std::vector<Slot> slots_;
  std::list<Running> running_;  // in place: each stream refers to its own sampler  // only the scheduler's thread touches slots_, running_ and prefilling_
  std::deque<Prefill> prefilling_;  // prefilled one at a time, oldest first
  std::unique_ptr<PrefixCache> prefix_;  // null without (cache_budget 0, or ring-buffered layers)

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  // rung by tools' threads as their answers are ready, and by submit(), run_between_steps() and
  // the destructor: what the scheduler sleeps on while every running sequence waits on a tool
  std::shared_ptr<infer::ToolAnswerBell> answers_ = std::make_shared<infer::ToolAnswerBell>();
  std::deque<Queued> queue_;
  std::deque<std::packaged_task<void()>> jobs_;  // run_between_steps' jobs, waiting
  int64_t active_ = 0;  // taken from the queue and not yet ended
  bool stopping_ = false;
  SchedulerStats stats_;
  std::thread thread_;
};

}  // namespace nf::serve
