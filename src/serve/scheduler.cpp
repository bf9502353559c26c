// Continuous batching over per-slot KV caches (serve/scheduler.h).
#include "nanoformer/serve/scheduler.h"

#include <algorithm>
#include <span>
#include <unordered_set>

#include "nanoformer/autograd/grad_mode.h"
#include "nanoformer/core/error.h"
#include "nanoformer/infer/decode_step.h"
#include "nanoformer/infer/draft_model.h"
#include "nanoformer/infer/prompt_ids.h"
#include "nanoformer/ops/view.h"

namespace nf::serve {

struct Scheduler::Slot {
  infer::CachedSequence sequence;
  bool busy = false;
  std::unique_ptr<infer::CachedSequence> draft = nullptr;  // the draft model's (SchedulerOptions::draft)
};

// A sequence whose prompt is being prefilled, a chunk per step; its slot is taken at its first chunk.
struct Scheduler::Prefill {
  Queued queued;
  size_t slot;          // slots_.size() until taken
  int64_t fed;          // prompt tokens in the slot's cache
  SequenceOutcome outcome;
  double seconds;       // in its chunks
  int64_t from_prefix_cache = 0;  // prompt tokens whose blocks the prefix cache gave
  int64_t draft_fed = -1;         // prompt tokens in the slot's draft model cache (-1: not looked at yet)
  std::vector<infer::TokenLogprobs> prompt_logprobs = {};  // with on_prompt_logprobs: those of the chunks so far
};

// A sequence past its prefill: its stream decodes a token per step (infer/decode_step.h).
struct Scheduler::Running {
  Running(SequenceRequest&& r, size_t slot_index, infer::CachedSequence& sequence, const SequenceOutcome& o,
          infer::CachedSequence* draft_sequence)
      : request(std::move(r)),
        slot(slot_index),
        sampler(request.sampler),
        outcome(o),
        stream(sequence, sampler, request.stop, request.prompt, request.constraint.get(),
               {.on_token = request.on_token, .on_logprobs = request.on_logprobs, .top_logprobs = request.top_logprobs,
                .tools = request.tools.get()},
               request.speculative, draft_sequence) {}
  SequenceRequest request;
  size_t slot;
  infer::Sampler sampler;
  SequenceOutcome outcome;
  infer::DecodeStream stream;  // refers to the slot's sequence, the sampler and the request's constraint
};

Scheduler::Scheduler(models::DecoderLM& model, const SchedulerOptions& options)
    : model_(model), options_(options), context_(options.context == 0 ? model.config().max_seq_len : options.context) {
  NF_CHECK(options.parallel >= 1, "--parallel ", options.parallel, ": at least one sequence must run");
  NF_CHECK(options.max_queue >= 0, "--queue ", options.max_queue, ": the queue length must be >= 0");
  NF_CHECK(context_ >= 2 && context_ <= model.config().max_seq_len, "--context ", context_,
           ": must be in [2, the model's max_seq_len ", model.config().max_seq_len, "]");
  NF_CHECK(options.cache_budget >= 0, "--cache-budget ", options.cache_budget, ": must be >= 0 (0: no prefix cache)");
  NF_CHECK(options.block_len > 0, "SchedulerOptions: block_len ", options.block_len, " must be positive");
  model_.eval();
  if (options.draft != nullptr) {
    infer::check_draft_model(model_, "the model", *options.draft, "the draft model", context_);
    options.draft->eval();
  }
  // a prefix cache where the model's caches can share blocks (no ring-buffered windowed layers)
  if (options.cache_budget > 0 && model_.make_cache(1, context_, options.cache_type, options.block_len).shares_prefixes())
    prefix_ = std::make_unique<PrefixCache>(options.block_len, options.cache_budget);
  for (int64_t i = 0; i < options.parallel; ++i) {
    slots_.push_back({infer::CachedSequence(model_, context_, {.keep = options.keep}, options.cache_type,
                                            prefix_ ? options.block_len : 0),
                      false});
    if (options.draft != nullptr)
      slots_.back().draft = std::make_unique<infer::CachedSequence>(*options.draft, context_, infer::ContextShift{},
                                                                    options.cache_type);
  }
  stats_.parallel = options.parallel;
  stats_.cache_budget = prefix_ ? options.cache_budget : 0;
  stats_.max_queue = options.max_queue;
  thread_ = std::thread([this] { run(); });
}

Scheduler::~Scheduler() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  answers_->ring();
  thread_.join();
  answers_->wait_for_calls();  // those of sequences ended while their tools ran: within their limits
}

bool Scheduler::submit(std::vector<SequenceRequest> requests) {
  {
    std::lock_guard lock(mutex_);
    // waiting for a slot: those queued beyond the free slots
    if (static_cast<int64_t>(queue_.size() + requests.size()) + active_ > capacity()) return false;
    const auto now = Clock::now();
    for (SequenceRequest& request : requests) queue_.push_back({std::move(request), now});
    stats_.queued = static_cast<int64_t>(queue_.size());
  }
  wake_.notify_one();
  answers_->ring();
  return true;
}

void Scheduler::run_between_steps(std::function<void()> job) {
  std::packaged_task<void()> task(std::move(job));
  std::future<void> done = task.get_future();
  {
    std::lock_guard lock(mutex_);
    NF_CHECK(!stopping_, "the server is stopping");
    jobs_.push_back(std::move(task));
  }
  wake_.notify_one();
  answers_->ring();
  try {
    done.get();  // rethrows the job's exception
  } catch (const std::future_error&) {  // broken_promise: the scheduler stopped before the job ran
    throw Error("the server is stopping");
  }
}

SchedulerStats Scheduler::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

void Scheduler::run() {
  NoGradGuard no_grad;  // grad mode is per thread
  for (;;) {
    // before anything is looked at: an answer, a request or a job that comes later rings past it
    const uint64_t seen = answers_->rings();
    std::vector<Queued> joining;
    std::deque<std::packaged_task<void()>> jobs;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] {
        return stopping_ || !queue_.empty() || !running_.empty() || !prefilling_.empty() || !jobs_.empty();
      });
      if (stopping_) break;
      jobs.swap(jobs_);
      while (!queue_.empty() &&
             static_cast<int64_t>(running_.size() + prefilling_.size() + joining.size()) < options_.parallel) {
        joining.push_back(std::move(queue_.front()));
        queue_.pop_front();
        stats_.running = ++active_;
      }
      stats_.queued = static_cast<int64_t>(queue_.size());
    }
    for (auto& job : jobs) job();  // its exception goes to its caller through the future
    for (Queued& queued : joining) admit(std::move(queued));
    const bool prefilled = !prefilling_.empty();
    prefill();  // a chunk's worth of the oldest prompts, then a decode step
    bool stepped = false;
    try {
      stepped = step();
    } catch (const std::exception& e) {  // never expected: end every running sequence, keep serving
      for (Running& r : running_) {
        r.outcome.error = e.what();
        reset_slot(slots_[r.slot]);
        finish(r, r.outcome);
      }
      running_.clear();
    }
    update_memory();
    // every running sequence waits on a tool, and nothing else came: sleep until something rings
    if (!running_.empty() && !stepped && !prefilled && jobs.empty() && joining.empty()) answers_->wait(seen, kToolWaitPoll);
  }
  std::deque<Queued> left;
  {
    std::lock_guard lock(mutex_);
    left.swap(queue_);
    jobs_.clear();  // their callers' futures throw broken_promise
  }
  for (Running& r : running_) r.request.cancelled->store(true);
  step();  // ends the running ones as cancelled
  for (Prefill& p : prefilling_) end_unstarted(p, "");
  prefilling_.clear();
  for (Queued& queued : left) {
    SequenceOutcome outcome;
    outcome.cancelled = true;
    outcome.prompt_tokens = static_cast<int64_t>(queued.request.prompt.size());
    if (queued.request.on_done) queued.request.on_done(outcome);
  }
}

void Scheduler::end_unstarted(Prefill& p, std::string error) {
  if (p.slot < slots_.size()) reset_slot(slots_[p.slot]);
  SequenceOutcome outcome = p.outcome;
  outcome.error = std::move(error);
  outcome.cancelled = outcome.error.empty();
  {
    std::lock_guard lock(mutex_);  // the stats first: a caller woken by on_done sees them
    stats_.running = --active_;
    if (outcome.cancelled) ++stats_.cancelled;
  }
  if (p.queued.request.on_done) p.queued.request.on_done(outcome);
}

void Scheduler::admit(Queued queued) {
  Prefill p{.queued = std::move(queued), .slot = slots_.size(), .fed = 0, .outcome = {}, .seconds = 0,
            .from_prefix_cache = 0, .prompt_logprobs = {}};
  SequenceRequest& request = p.queued.request;
  const auto length = static_cast<int64_t>(request.prompt.size());
  p.outcome.prompt_tokens = length;
  if (request.cancelled->load()) return end_unstarted(p, "");
  try {
    NF_CHECK(length > 0, "the prompt is empty");
    NF_CHECK(length < context_, "the prompt is ", length, " tokens, but the context holds ", context_,
             ", leaving no room for a new token");
    infer::check_token_ids(request.prompt, model_.config().vocab_size, "the prompt");
    if (request.stop.max_new_tokens != 0) request.stop.validate();  // 0: the prompt only
    request.sampler.validate();
  } catch (const Error& e) {
    return end_unstarted(p, e.what());
  }
  prefilling_.push_back(std::move(p));
}

infer::CachedSequence* Scheduler::draft_sequence(const Prefill& p) {  // the draft model's, unless lookup was asked for
  const SequenceRequest& r = p.queued.request;  // (or nothing is generated: a prompt's logprobs alone)
  return r.speculative.lookup_ngram == 0 && r.stop.max_new_tokens > 0 ? slots_[p.slot].draft.get() : nullptr;
}

void Scheduler::take_slot(Prefill& p) {
  const std::vector<int64_t>& prompt = p.queued.request.prompt;
  const auto common_prefix = [&](const Slot& s) {
    const auto& cached = s.sequence.tokens();
    return static_cast<int64_t>(std::mismatch(cached.begin(), cached.end(), prompt.begin(), prompt.end()).first - cached.begin());
  };
  // the free slot that shares the longest prefix with the prompt
  size_t best = slots_.size();
  int64_t best_common = -1;
  for (size_t i = 0; i < slots_.size(); ++i)
    if (const int64_t common = slots_[i].busy ? -1 : common_prefix(slots_[i]); common > best_common)
      best = i, best_common = common;
  // a busy slot that shares a longer prefix (the first of n choices of this prompt, the same
  // system prompt): its cache is copied rather than that prefix prefilled again
  const Slot* donor = nullptr;
  for (const Slot& s : slots_) {
    if (!s.busy) continue;
    if (const int64_t common = common_prefix(s); common > best_common + 1) donor = &s, best_common = common;
  }
  p.slot = best;
  Slot& slot = slots_[best];
  slot.busy = true;
  if (p.queued.request.on_prompt_logprobs) {  // every position's logits: from the start
    slot.sequence.reset();
    return;
  }
  // the prefix cache's blocks of the prompt (all but its last token, fed for its logits), when they
  // reach further than what a slot holds
  const auto length = static_cast<int64_t>(prompt.size());
  if (prefix_) {
    const std::vector<nn::KVBlockRef> cached = prefix_->find(prompt, length - 1);
    const int64_t reach = static_cast<int64_t>(cached.size()) * prefix_->block_len();
    if (reach > 0 && reach >= std::min(best_common, length - 1)) {
      slot.sequence.adopt({prompt.begin(), prompt.begin() + reach}, cached);
      p.fed = p.outcome.cached_tokens = p.from_prefix_cache = reach;
      return;
    }
  }
  if (donor) slot.sequence.copy_from(donor->sequence);
  p.fed = p.outcome.cached_tokens = slot.sequence.keep_common_prefix(prompt);
}

void Scheduler::publish(const Slot& slot) {
  if (!prefix_) return;
  const std::vector<nn::KVBlockRef> blocks = slot.sequence.shareable_blocks();
  if (!blocks.empty()) prefix_->insert(slot.sequence.tokens(), blocks);
}

void Scheduler::release(Slot& slot) {
  publish(slot);
  slot.busy = false;  // it keeps what it holds for a next turn, as without a prefix cache
  update_memory();    // before on_done: a caller woken by it sees the memory as it is now
}

void Scheduler::update_memory() {
  std::unordered_set<const nn::KVBlock*> blocks;
  int64_t bytes = 0;
  const auto count = [&](const nn::KVBlockRef& block) {
    if (blocks.insert(block.get()).second) bytes += block->bytes();
  };
  for (const Slot& slot : slots_) {
    const nn::KVCache& cache = slot.sequence.cache();
    bytes += cache.contiguous_bytes();
    if (cache.shape().block_len > 0)
      for (const nn::KVBlockRef& block : cache.blocks(0)) count(block);
  }
  const int64_t in_slots = bytes;
  if (prefix_) prefix_->each_block(count);
  std::lock_guard lock(mutex_);
  stats_.kv_bytes = bytes;
  stats_.slot_kv_bytes = in_slots;
  if (prefix_) {
    stats_.prefix_cache_blocks = prefix_->blocks();
    stats_.prefix_cache_bytes = prefix_->bytes();
    stats_.prefix_cache_evicted = prefix_->evicted();
  }
}

void Scheduler::prefill() {
  const int64_t chunk = options_.prefill_chunk;  // 0: every prompt whole
  for (int64_t budget = chunk; !prefilling_.empty() && (chunk == 0 || budget > 0);) budget -= prefill_step(budget);
}

int64_t Scheduler::prefill_step(int64_t limit) {
  Prefill& p = prefilling_.front();
  SequenceRequest& request = p.queued.request;
  const auto length = static_cast<int64_t>(request.prompt.size());
  Tensor logits;
  int64_t n = 0;  // prompt tokens fed in this chunk
  const Clock::time_point chunk_start = Clock::now();
  try {
    if (request.cancelled->load()) {
      end_unstarted(p, "");
      prefilling_.pop_front();
      return 0;
    }
    if (p.slot == slots_.size()) take_slot(p);
    n = limit > 0 ? std::min(limit, length - p.fed) : length - p.fed;
    const bool scored = request.on_prompt_logprobs != nullptr;
    logits = slots_[p.slot].sequence.feed({request.prompt.begin() + p.fed, request.prompt.begin() + p.fed + n}, scored);
    const int64_t vocab = model_.config().vocab_size;
    for (int64_t r = 0; scored && r < n && p.fed + r + 1 < length; ++r)  // row r predicts the token after it
      p.prompt_logprobs.push_back(infer::token_logprobs({logits.data<float>() + r * vocab, static_cast<size_t>(vocab)},
                                                        request.sampler.vocab_limit,
                                                        request.prompt[static_cast<size_t>(p.fed + r + 1)],
                                                        request.top_logprobs));
    if (scored) logits = narrow(logits, 1, n - 1, 1).contiguous();  // the last position's, to sample from
    p.fed += n;
    // the draft model's cache follows the chunks, so that drafting starts with one token to feed
    // rather than the prompt in one forward that holds every running sequence
    if (infer::CachedSequence* draft = draft_sequence(p)) {
      if (p.draft_fed < 0) p.draft_fed = draft->keep_common_prefix(request.prompt);
      if (p.fed > p.draft_fed) draft->feed({request.prompt.begin() + p.draft_fed, request.prompt.begin() + p.fed});
      p.draft_fed = std::max(p.draft_fed, p.fed);
    }
    publish(slots_[p.slot]);  // the prompt's blocks so far, for the prompts behind it
  } catch (const std::exception& e) {
    end_unstarted(p, e.what());
    prefilling_.pop_front();
    return n;
  }
  const Clock::time_point now = Clock::now();
  const double step = std::chrono::duration<double>(now - chunk_start).count();
  p.seconds += step;
  {
    std::lock_guard lock(mutex_);
    stats_.longest_prefill_step_seconds = std::max(stats_.longest_prefill_step_seconds, step);
  }
  if (p.fed < length) return n;
  const bool generates = request.stop.max_new_tokens > 0;
  {
    const double ttft = std::chrono::duration<double>(now - p.queued.submitted).count();
    std::lock_guard lock(mutex_);
    stats_.prompt_tokens += length;
    stats_.cached_tokens += p.outcome.cached_tokens;
    stats_.prefix_cached_tokens += p.from_prefix_cache;
    stats_.prefill_seconds += p.seconds;
    if (generates) {
      ++stats_.generated_tokens;  // the first token, sampled from these logits below
      for (size_t i = 0; i < kTimeToFirstTokenBuckets.size(); ++i) stats_.ttft_buckets[i] += ttft <= kTimeToFirstTokenBuckets[i];
      ++stats_.ttft_count;
      stats_.ttft_sum += ttft;
    }
  }
  if (request.on_prompt_logprobs) {
    try {
      request.on_prompt_logprobs(p.prompt_logprobs);
    } catch (const std::exception& e) {
      end_unstarted(p, e.what());
      prefilling_.pop_front();
      return n;
    }
  }
  infer::CachedSequence* draft = draft_sequence(p);
  if (draft != nullptr) request.speculative.draft_model = &draft->model();
  if (request.tools) request.tools->answer_off_thread(answers_);  // a slow tool delays its own sequence only
  running_.emplace_back(std::move(request), p.slot, slots_[p.slot].sequence, p.outcome, draft);
  prefilling_.pop_front();
  if (!generates) {  // the prompt only: it ends here
    running_.back().outcome.reason = infer::StopReason::max_new_tokens;
    finish(running_.back(), running_.back().outcome);
    running_.pop_back();
    return n;
  }
  Running& r = running_.back();
  r.stream.accept({logits.data<float>(), static_cast<size_t>(model_.config().vocab_size)});
  if (!settle(r)) running_.pop_back();
  return n;
}

void Scheduler::reset_slot(Slot& slot) {
  slot.sequence.reset();
  slot.busy = false;
}

bool Scheduler::settle(Running& r) {
  SequenceOutcome& o = r.outcome;
  o.completion_tokens = static_cast<int64_t>(r.stream.generated().size());
  o.reason = r.stream.reason();
  if (r.stream.running()) return true;
  if (r.stream.error()) {  // its sampler or its callbacks threw: it ends alone
    try {
      std::rethrow_exception(r.stream.error());
    } catch (const std::exception& e) {
      o.error = e.what();
    } catch (...) {
      o.error = "unknown error";
    }
    reset_slot(slots_[r.slot]);
  }
  finish(r, o);
  return false;
}

void Scheduler::finish(Running& r, SequenceOutcome outcome) {
  release(slots_[r.slot]);
  {
    std::lock_guard lock(mutex_);  // the stats first: a caller woken by on_done sees them
    stats_.running = --active_;
    ++(outcome.cancelled ? stats_.cancelled : stats_.completed);
  }
  if (r.request.on_done) r.request.on_done(outcome);
}

bool Scheduler::step() {
  // drop the sequences whose clients have gone (one whose tool runs: the call finishes on its
  // thread within its limits, its answer unread)
  for (Running& r : running_)
    if (r.request.cancelled->load()) {
      r.outcome.cancelled = true;
      r.outcome.reason = infer::StopReason::none;
      finish(r, r.outcome);
    }
  std::erase_if(running_, [](const Running& r) { return r.outcome.cancelled; });
  if (running_.empty()) return false;
  std::vector<infer::DecodeStream*> streams;
  for (Running& r : running_) streams.push_back(&r.stream);
  // the tokens, drafted and taken tokens so far: a step adds one token per row, or more with drafts
  const auto totals = [&] {
    std::array<int64_t, 3> t{};
    for (const Running& r : running_)
      t[0] += static_cast<int64_t>(r.stream.generated().size()), t[1] += r.stream.drafted(), t[2] += r.stream.accepted();
    return t;
  };
  const std::array<int64_t, 3> before = totals();
  const Clock::time_point decode_start = Clock::now();
  const auto rows = static_cast<int64_t>(infer::decode_step(streams));  // those waiting on a tool left out
  const std::array<int64_t, 3> after = totals();
  {
    std::lock_guard lock(mutex_);  // before settle: a caller woken by on_done sees its tokens counted
    stats_.generated_tokens += after[0] - before[0];
    stats_.draft_tokens += after[1] - before[1];
    stats_.accepted_tokens += after[2] - before[2];
  }
  std::erase_if(running_, [&](Running& r) { return !settle(r); });
  if (rows == 0) return false;
  const double seconds = std::chrono::duration<double>(Clock::now() - decode_start).count();
  std::lock_guard lock(mutex_);
  ++stats_.decode_steps;
  stats_.decoded_rows += rows;
  stats_.decode_seconds += seconds;
  return true;
}

}  // namespace nf::serve
