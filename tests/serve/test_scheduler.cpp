// Continuous batching (serve/scheduler.h): sequences submitted together, more than the slots, with
// different prompts, lengths and samplers, each get exactly the tokens a Session gives them alone,
// while the steps really decode several rows at once; the queue bound; cancelling a queued or a
// running sequence; a refused prompt; a slot's prefix reused by the next turn; stop from on_token;
// an on_token that throws ends its own sequence only; slots with q8_0 caches give what a q8_0 Session
// gives alone; a long prompt is prefilled a chunk per step; choices of one prompt share its prefill; jobs run between steps on the scheduler's thread while sequences decode, which
// still get what they get alone; a sequence waiting on its tool's answer holds up no other, may be
// cancelled, and goes on with the answer as it would with the call answered inside the step.
// Every wait has a deadline: a scheduler that never answers fails the test instead of hanging it.
#include "nanoformer/serve/scheduler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <future>
#include <stdexcept>
#include <thread>

#include "infer/tiny_lm.h"
#include "nanoformer/infer/session.h"
#include "support/testing.h"

namespace nf::serve {
namespace {

std::shared_ptr<models::DecoderLM> tiny_model() { return testing::tiny_lm(48); }

constexpr std::chrono::seconds kDeadline{60};

// The value of `f` once ready; a failed test (an exception gtest reports) after kDeadline.
template <class T>
T get_within_deadline(std::future<T> f, const std::string& what) {
  if (f.wait_for(kDeadline) != std::future_status::ready)
    throw std::runtime_error(what + " did not happen within " + std::to_string(kDeadline.count()) + " s");
  return f.get();
}

// A submitted sequence's tokens and outcome, once it ends.
struct Tracked {
  std::vector<int64_t> tokens;
  std::promise<SequenceOutcome> done;
};

SequenceRequest tracked(Tracked& t, std::vector<int64_t> prompt, infer::SamplerConfig sampler, int64_t max_new_tokens,
                        std::vector<int64_t> eos = {}) {
  return {.prompt = std::move(prompt),
          .sampler = sampler,
          .stop = {.eos_ids = std::move(eos), .stop_strings = {}, .max_new_tokens = max_new_tokens},
          .on_token = [&t](int64_t id) { t.tokens.push_back(id); return true; },
          .on_done = [&t](const SequenceOutcome& o) { t.done.set_value(o); }};
}

SequenceOutcome outcome(Tracked& t) { return get_within_deadline(t.done.get_future(), "the end of a sequence"); }

TEST(Scheduler, BatchedSequencesGetWhatEachGetsAlone) {
  const auto model = tiny_model();
  const std::vector<std::vector<int64_t>> prompts{{5, 9, 13}, {1}, {7, 7, 7, 7, 7, 7, 7, 2}, {3, 4}, {60, 1, 2, 3, 4},
                                                  {11, 12, 13, 14}, {20}};
  const std::vector<int64_t> lengths{12, 5, 20, 9, 16, 3, 30};
  std::vector<infer::SamplerConfig> samplers;
  for (size_t i = 0; i < prompts.size(); ++i)
    samplers.push_back(i % 2 ? infer::SamplerConfig{.temperature = 0}
                             : infer::SamplerConfig{.temperature = 0.9, .top_k = 20, .top_p = 0.95, .seed = 100 + i});
  std::vector<std::vector<int64_t>> alone;
  for (size_t i = 0; i < prompts.size(); ++i) {
    infer::Session session(*model);
    infer::Sampler sampler(samplers[i]);
    alone.push_back(session.generate(prompts[i], sampler, {.max_new_tokens = lengths[i]}).tokens);
  }
  std::vector<Tracked> runs(prompts.size());
  SchedulerStats stats;
  {
    Scheduler scheduler(*model, {.parallel = 3, .max_queue = 8, .context = 0});
    for (size_t i = 0; i < prompts.size(); ++i)
      ASSERT_TRUE(scheduler.submit(tracked(runs[i], prompts[i], samplers[i], lengths[i])));
    for (size_t i = 0; i < prompts.size(); ++i) {
      const SequenceOutcome o = outcome(runs[i]);
      EXPECT_EQ(o.reason, infer::StopReason::max_new_tokens);
      EXPECT_EQ(o.completion_tokens, lengths[i]);
      EXPECT_EQ(o.prompt_tokens, static_cast<int64_t>(prompts[i].size()));
    }
    stats = scheduler.stats();
  }
  for (size_t i = 0; i < prompts.size(); ++i) EXPECT_EQ(runs[i].tokens, alone[i]) << "sequence " << i;
  EXPECT_EQ(stats.completed, 7);
  // 7 sequences over 3 slots: later ones joined while others ran, and steps decoded several rows
  EXPECT_GT(stats.decoded_rows, 2 * stats.decode_steps) << stats.decoded_rows << " rows in " << stats.decode_steps << " steps";
}

// Sequences with prompt lookup (SequenceRequest::speculative), batched with plain ones, get what
// each gets alone without it; the stats count every token generated and the drafts.
TEST(Scheduler, SequencesWithPromptLookupGetTheirPlainTokens) {
  const auto model = testing::tiny_lm(160);
  const std::vector<int64_t> cycle{3, 8, 1, 9, 4, 8, 2, 7};
  std::vector<std::vector<int64_t>> prompts;
  for (int i = 0; i < 4; ++i) {
    std::vector<int64_t> p;
    for (int r = 0; r < 3 + i; ++r) p.insert(p.end(), cycle.begin(), cycle.end());
    prompts.push_back(p);
  }
  const infer::SpeculativeConfig lookup{.lookup_ngram = 2, .draft_max = 4};
  std::vector<infer::SamplerConfig> samplers;
  for (size_t i = 0; i < prompts.size(); ++i)
    samplers.push_back(i % 2 ? infer::SamplerConfig{.temperature = 0} : infer::SamplerConfig{.temperature = 0.5, .seed = 7 + i});
  std::vector<std::vector<int64_t>> alone;
  for (size_t i = 0; i < prompts.size(); ++i) {
    infer::Session session(*model);
    infer::Sampler sampler(samplers[i]);
    alone.push_back(session.generate(prompts[i], sampler, {.max_new_tokens = 40}).tokens);
  }
  std::vector<Tracked> runs(prompts.size());
  SchedulerStats stats;
  {
    Scheduler scheduler(*model, {.parallel = 4, .max_queue = 8, .context = 0});
    for (size_t i = 0; i < prompts.size(); ++i) {
      SequenceRequest r = tracked(runs[i], prompts[i], samplers[i], 40);
      if (i != 3) r.speculative = lookup;  // one plain sequence among them
      ASSERT_TRUE(scheduler.submit(std::move(r)));
    }
    for (Tracked& t : runs) EXPECT_EQ(outcome(t).completion_tokens, 40);
    stats = scheduler.stats();
  }
  for (size_t i = 0; i < prompts.size(); ++i) EXPECT_EQ(runs[i].tokens, alone[i]) << "sequence " << i;
  EXPECT_EQ(stats.generated_tokens, 4 * 40);
  EXPECT_GT(stats.draft_tokens, 0);
  EXPECT_GT(stats.accepted_tokens, 0) << stats.draft_tokens << " drafted";
  EXPECT_LT(stats.decoded_rows, 4 * 39);  // verified drafts gave several tokens a row
}

// With a draft model (SchedulerOptions::draft, each slot keeping its cache), greedy sequences
// batched with one asking for prompt lookup get what each gets alone without drafts; a slot's
// second sequence reuses what its draft cache holds.
TEST(Scheduler, SequencesWithADraftModelGetTheirPlainTokens) {
  const auto model = testing::tiny_lm(160);
  models::DecoderLMConfig c = model->config();
  c.n_layers = 1;  // the draft: the model's first layer alone, its embeddings and head
  Generator gen(4);
  models::DecoderLM draft(c, gen);
  const auto weights = model->state_dict();
  for (const auto& [name, p] : draft.named_parameters())
    std::copy_n(weights.at(name).data<float>(), p.numel(), p.data<float>());
  draft.eval();
  const std::vector<int64_t> cycle{3, 8, 1, 9, 4, 8, 2, 7};
  std::vector<std::vector<int64_t>> prompts;
  for (int i = 0; i < 5; ++i) {
    std::vector<int64_t> p;
    for (int r = 0; r < 2 + i % 3; ++r) p.insert(p.end(), cycle.begin(), cycle.end());
    p.push_back(i);
    prompts.push_back(p);
  }
  std::vector<std::vector<int64_t>> alone;
  for (const auto& prompt : prompts) {
    infer::Session session(*model);
    infer::Sampler sampler({.temperature = 0});
    alone.push_back(session.generate(prompt, sampler, {.max_new_tokens = 40}).tokens);
  }
  std::vector<Tracked> runs(prompts.size());
  SchedulerStats stats;
  {
    // prompts of 17 to 33 tokens in chunks of 8: the draft model's cache follows the chunks
    Scheduler scheduler(*model, {.parallel = 3, .max_queue = 8, .context = 0, .prefill_chunk = 8, .draft = &draft});
    for (size_t i = 0; i < prompts.size(); ++i) {
      SequenceRequest r = tracked(runs[i], prompts[i], {.temperature = 0}, 40);
      if (i == 2) r.speculative = {.lookup_ngram = 2};  // prompt lookup instead of the draft model
      else r.speculative.draft_cost = 0;                // drafting whenever it may: tokens, not the backoff, tested
      ASSERT_TRUE(scheduler.submit(std::move(r)));
    }
    for (Tracked& t : runs) EXPECT_EQ(outcome(t).completion_tokens, 40);
    stats = scheduler.stats();
  }
  for (size_t i = 0; i < prompts.size(); ++i) EXPECT_EQ(runs[i].tokens, alone[i]) << "sequence " << i;
  EXPECT_EQ(stats.generated_tokens, 5 * 40);
  EXPECT_GT(stats.accepted_tokens, 0) << stats.draft_tokens << " drafted";
  EXPECT_LT(stats.accepted_tokens, stats.draft_tokens);
}

TEST(Scheduler, JobsRunBetweenStepsOnItsThreadWhileSequencesDecode) {
  const auto model = tiny_model();
  const std::vector<int64_t> prompt{5, 9, 13};
  infer::Session session(*model);
  infer::Sampler greedy({.temperature = 0});
  const std::vector<int64_t> alone = session.generate(prompt, greedy, {.max_new_tokens = 40}).tokens;
  const Tensor expected = model->forward(Tensor::from_vector(prompt, {1, 3})).logits;

  Tracked run;
  Scheduler scheduler(*model, {.parallel = 2, .max_queue = 4, .context = 0});
  ASSERT_TRUE(scheduler.submit(tracked(run, prompt, {.temperature = 0}, 40)));
  std::thread::id job_thread;
  int jobs = 0;
  for (int i = 0; i < 5; ++i)  // a full forward on the model between decode steps, as embeddings do
    scheduler.run_between_steps([&] {
      job_thread = std::this_thread::get_id();
      EXPECT_TENSOR_CLOSE(model->forward(Tensor::from_vector(prompt, {1, 3})).logits, expected, 0, 0);
      ++jobs;
    });
  EXPECT_EQ(jobs, 5);
  EXPECT_NE(job_thread, std::this_thread::get_id());
  EXPECT_THROW_WITH(scheduler.run_between_steps([] { throw Error("the job's own error"); }), "the job's own error");
  outcome(run);
  EXPECT_EQ(run.tokens, alone);
}

// A long prompt arriving while a sequence decodes is prefilled a chunk per step: the running
// sequence gets a token between every two chunks instead of waiting for the whole prefill, and the
// new sequence gets what it gets alone (a whole prefill).
TEST(Scheduler, ALongPromptIsPrefilledAChunkBetweenDecodeSteps) {
  const auto model = testing::tiny_lm(512);
  std::vector<int64_t> long_prompt;
  for (int64_t i = 0; i < 200; ++i) long_prompt.push_back((i * 7 + 3) % 64);
  infer::Session session(*model);
  infer::Sampler greedy({.temperature = 0});
  const std::vector<int64_t> alone = session.generate(long_prompt, greedy, {.max_new_tokens = 8}).tokens;
  for (const int64_t chunk : {int64_t{16}, int64_t{0}}) {
    std::atomic<int64_t> running_tokens{0};
    int64_t tokens_before_first = -1;
    Tracked a, b;
    Scheduler scheduler(*model, {.parallel = 2, .max_queue = 4, .context = 0, .prefill_chunk = chunk});
    SequenceRequest first = tracked(a, {5, 9, 13}, {.temperature = 0}, 300);
    first.on_token = [&](int64_t id) { a.tokens.push_back(id); ++running_tokens; return true; };
    ASSERT_TRUE(scheduler.submit(std::move(first)));
    while (running_tokens < 5) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    const int64_t at_submit = running_tokens;
    SequenceRequest second = tracked(b, long_prompt, {.temperature = 0}, 8);
    second.on_token = [&](int64_t id) {
      if (b.tokens.empty()) tokens_before_first = running_tokens - at_submit;
      b.tokens.push_back(id);
      return true;
    };
    ASSERT_TRUE(scheduler.submit(std::move(second)));
    outcome(b);
    const SchedulerStats stats = scheduler.stats();
    EXPECT_EQ(b.tokens, alone) << "chunk " << chunk;
    EXPECT_GT(stats.longest_prefill_step_seconds, 0);
    if (chunk == 16) EXPECT_LT(stats.longest_prefill_step_seconds, stats.prefill_seconds) << "one of 13 chunks";
    else EXPECT_LE(stats.longest_prefill_step_seconds, stats.prefill_seconds);
    if (chunk == 16) EXPECT_GE(tokens_before_first, 200 / 16 - 1) << "the running sequence waited for the whole prefill";
    else EXPECT_LE(tokens_before_first, 2) << "a whole prefill holds the running sequence";
  }
}

// n choices of one prompt, submitted together: the first prefills it, the others copy its cache and
// feed only the prompt's last token; each still gets what it gets alone with its seed.
TEST(Scheduler, ChoicesOfOnePromptShareItsPrefill) {
  const auto model = tiny_model();
  const std::vector<int64_t> prompt{5, 9, 13, 21, 8, 30, 2};
  std::vector<std::vector<int64_t>> alone;
  for (uint64_t seed = 0; seed < 3; ++seed) {
    infer::Session session(*model);
    infer::Sampler sampler({.temperature = 0.8, .seed = 40 + seed});
    alone.push_back(session.generate(prompt, sampler, {.max_new_tokens = 15}).tokens);
  }
  std::vector<Tracked> runs(3);
  std::vector<SequenceOutcome> outcomes;
  {
    Scheduler scheduler(*model, {.parallel = 3, .max_queue = 8, .context = 0});
    for (uint64_t i = 0; i < 3; ++i) ASSERT_TRUE(scheduler.submit(tracked(runs[i], prompt, {.temperature = 0.8, .seed = 40 + i}, 15)));
    for (Tracked& run : runs) outcomes.push_back(outcome(run));
  }
  EXPECT_EQ(outcomes[0].cached_tokens + outcomes[1].cached_tokens + outcomes[2].cached_tokens, 2 * 6)
      << "the second and third choices found all but the prompt's last token cached";
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(runs[i].tokens, alone[i]) << "choice " << i;
  EXPECT_NE(alone[0], alone[1]);
}

TEST(Scheduler, Q8_0CachesGiveWhatAQ8_0SessionGivesAlone) {
  const auto model = testing::tiny_lm(48, /*head_dim=*/32);
  const std::vector<std::vector<int64_t>> prompts{{5, 9, 13}, {1}, {7, 7, 7, 7, 2}, {3, 4}};
  const std::vector<int64_t> lengths{12, 20, 9, 16};
  std::vector<std::vector<int64_t>> alone;
  for (size_t i = 0; i < prompts.size(); ++i) {
    infer::Session session(*model, 0, {}, QuantType::q8_0);
    infer::Sampler sampler({.temperature = 0});
    alone.push_back(session.generate(prompts[i], sampler, {.max_new_tokens = lengths[i]}).tokens);
  }
  std::vector<Tracked> runs(prompts.size());
  {
    Scheduler scheduler(*model, {.parallel = 2, .max_queue = 8, .context = 0, .cache_type = QuantType::q8_0});
    for (size_t i = 0; i < prompts.size(); ++i)
      ASSERT_TRUE(scheduler.submit(tracked(runs[i], prompts[i], {.temperature = 0}, lengths[i])));
    for (size_t i = 0; i < prompts.size(); ++i) EXPECT_EQ(outcome(runs[i]).completion_tokens, lengths[i]);
  }
  for (size_t i = 0; i < prompts.size(); ++i) EXPECT_EQ(runs[i].tokens, alone[i]) << "sequence " << i;
}

TEST(Scheduler, TheQueueIsBoundedAndCancellingFreesTheSequence) {
  const auto model = tiny_model();
  Scheduler scheduler(*model, {.parallel = 1, .max_queue = 1, .context = 0});
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  Tracked first, queued, refused, pair_a, pair_b;
  EXPECT_EQ(scheduler.capacity(), 2);
  SequenceRequest blocking = tracked(first, {1, 2, 3}, {.temperature = 0}, 40);
  std::promise<void> started;
  blocking.on_token = [&](int64_t id) {
    if (first.tokens.empty()) started.set_value();
    first.tokens.push_back(id);
    if (released.wait_for(kDeadline) != std::future_status::ready)  // holds the scheduler until the test lets go
      ADD_FAILURE() << "the test never released the scheduler";
    return first.tokens.size() < 4;  // then "a stop string" after 4 tokens
  };
  ASSERT_TRUE(scheduler.submit(std::move(blocking)));
  get_within_deadline(started.get_future(), "the start of the first sequence");  // it runs (in the one slot)
  SequenceRequest waiting = tracked(queued, {4, 5}, {.temperature = 0}, 5);
  const auto cancel_waiting = waiting.cancelled;
  std::vector<SequenceRequest> pair;  // two choices of one request, one queue place: neither is queued
  pair.push_back(tracked(pair_a, {4}, {.temperature = 0}, 5));
  pair.push_back(tracked(pair_b, {4}, {.temperature = 0}, 5));
  EXPECT_FALSE(scheduler.submit(std::move(pair)));
  EXPECT_EQ(scheduler.stats().queued, 0);
  EXPECT_TRUE(scheduler.submit(std::move(waiting)));                                  // the one queue place
  EXPECT_FALSE(scheduler.submit(tracked(refused, {6}, {.temperature = 0}, 5)));       // the queue is full
  EXPECT_EQ(scheduler.stats().queued, 1);
  cancel_waiting->store(true);
  release.set_value();
  const SequenceOutcome a = outcome(first), b = outcome(queued);
  EXPECT_EQ(a.reason, infer::StopReason::stop_string);
  EXPECT_EQ(a.completion_tokens, 4);
  EXPECT_TRUE(b.cancelled);
  EXPECT_EQ(b.completion_tokens, 0);
  EXPECT_TRUE(queued.tokens.empty());

  // a running sequence cancelled after 3 tokens ends at once, far from its 40
  Tracked running;
  SequenceRequest long_one = tracked(running, {9, 9}, {.temperature = 0}, 40);
  long_one.on_token = [&running, cancelled = long_one.cancelled](int64_t id) {
    running.tokens.push_back(id);
    if (running.tokens.size() == 3) cancelled->store(true);
    return true;
  };
  ASSERT_TRUE(scheduler.submit(std::move(long_one)));
  const SequenceOutcome c = outcome(running);
  EXPECT_TRUE(c.cancelled);
  EXPECT_EQ(c.completion_tokens, 3);
  EXPECT_EQ(scheduler.stats().cancelled, 2);
  EXPECT_EQ(scheduler.stats().running, 0);
}

TEST(Scheduler, RefusedPromptsEndWithAnErrorAndServingGoesOn) {
  const auto model = tiny_model();
  Scheduler scheduler(*model, {.parallel = 2, .max_queue = 4, .context = 16});
  Tracked too_long, bad_id, empty, fine;
  ASSERT_TRUE(scheduler.submit(tracked(too_long, std::vector<int64_t>(16, 1), {.temperature = 0}, 3)));
  ASSERT_TRUE(scheduler.submit(tracked(bad_id, {1, 64}, {.temperature = 0}, 3)));
  ASSERT_TRUE(scheduler.submit(tracked(empty, {}, {.temperature = 0}, 3)));
  ASSERT_TRUE(scheduler.submit(tracked(fine, {1, 2}, {.temperature = 0}, 3)));
  EXPECT_NE(outcome(too_long).error.find("the prompt is 16 tokens, but the context holds 16"), std::string::npos);
  EXPECT_NE(outcome(bad_id).error.find("64"), std::string::npos);
  EXPECT_NE(outcome(empty).error.find("empty"), std::string::npos);
  const SequenceOutcome ok = outcome(fine);
  EXPECT_TRUE(ok.error.empty());
  EXPECT_EQ(ok.completion_tokens, 3);
  // past a slot's context the context shifts and the sequence goes on
  Tracked filling;
  ASSERT_TRUE(scheduler.submit(tracked(filling, std::vector<int64_t>(10, 2), {.temperature = 0}, 100)));
  const SequenceOutcome past = outcome(filling);
  EXPECT_EQ(past.reason, infer::StopReason::max_new_tokens);
  EXPECT_EQ(past.completion_tokens, 100);
  // a --keep that holds the whole context could never shift it: refused, naming both flags
  EXPECT_THROW_WITH(Scheduler(*model, {.parallel = 1, .max_queue = 1, .context = 16, .keep = 16}),
                    "--keep 16 must be less than --context 16");
  EXPECT_THROW(Scheduler(*model, {.parallel = 0}), Error);
  EXPECT_THROW(Scheduler(*model, {.parallel = 1, .max_queue = 1, .context = 49}), Error);
}

// A sequence whose on_token throws (its text cannot be decoded, say) ends alone with the error, on
// its first token as later; the others finish and the scheduler keeps serving.
TEST(Scheduler, AFailingTokenCallbackEndsItsSequenceAlone) {
  const auto model = tiny_model();
  Scheduler scheduler(*model, {.parallel = 3, .max_queue = 4, .context = 16});
  Tracked first, later, fine, after;
  SequenceRequest failing_first = tracked(first, {1, 2}, {.temperature = 0}, 5);
  failing_first.on_token = [](int64_t) -> bool { throw Error("cannot decode this token"); };
  SequenceRequest failing_later = tracked(later, {3, 4}, {.temperature = 0}, 5);
  failing_later.on_token = [&later](int64_t id) {
    later.tokens.push_back(id);
    if (later.tokens.size() == 2) throw Error("cannot decode the second token");
    return true;
  };
  ASSERT_TRUE(scheduler.submit(std::move(failing_first)));
  ASSERT_TRUE(scheduler.submit(std::move(failing_later)));
  ASSERT_TRUE(scheduler.submit(tracked(fine, {5, 6}, {.temperature = 0}, 5)));
  EXPECT_NE(outcome(first).error.find("cannot decode this token"), std::string::npos);
  EXPECT_NE(outcome(later).error.find("cannot decode the second token"), std::string::npos);
  const SequenceOutcome ok = outcome(fine);
  EXPECT_TRUE(ok.error.empty()) << ok.error;
  EXPECT_EQ(ok.completion_tokens, 5);
  ASSERT_TRUE(scheduler.submit(tracked(after, {1, 2}, {.temperature = 0}, 4)));
  EXPECT_EQ(outcome(after).completion_tokens, 4);
}

TEST(Scheduler, TheNextTurnReusesItsSlotsPrefix) {
  const auto model = tiny_model();
  Scheduler scheduler(*model, {.parallel = 2, .max_queue = 2, .context = 0});
  Tracked turn1, turn2;
  const std::vector<int64_t> prompt{3, 1, 4, 1, 5};
  ASSERT_TRUE(scheduler.submit(tracked(turn1, prompt, {.temperature = 0}, 6)));
  EXPECT_EQ(outcome(turn1).cached_tokens, 0);
  std::vector<int64_t> next = prompt;
  next.insert(next.end(), turn1.tokens.begin(), turn1.tokens.end());
  next.insert(next.end(), {9, 2, 6});
  ASSERT_TRUE(scheduler.submit(tracked(turn2, next, {.temperature = 0}, 4)));
  const SequenceOutcome o = outcome(turn2);
  EXPECT_EQ(o.cached_tokens, 5 + 5);  // the prompt and the answer but its last token (never fed)
  infer::Session session(*model);
  infer::Sampler greedy({.temperature = 0});
  EXPECT_EQ(turn2.tokens, session.generate(next, greedy, {.max_new_tokens = 4}).tokens);
}

// A tool whose answer the test gives, as a tool's thread would: after the sequence's first token
// its call runs (answering) until the test sets the answer and rings the scheduler's bell. Answered
// inside the step (the default: no bell), the answer is forced at once.
struct HeldAnswer : infer::ToolUse {
  explicit HeldAnswer(std::shared_future<std::vector<int64_t>> a) : answer(std::move(a)) {}
  std::vector<int64_t> after(int64_t) override {
    if (!first) return {};
    first = false;
    if (!bell) return answer.get();
    running = true;
    called.set_value(bell);
    return {};
  }
  std::unique_ptr<infer::ToolUse> clone() const override { return nullptr; }
  void answer_off_thread(std::shared_ptr<infer::ToolAnswerBell> b) override { bell = std::move(b); }
  bool answering() const override { return running; }
  std::optional<std::vector<int64_t>> take_answer() override {
    if (answer.wait_for(std::chrono::seconds(0)) != std::future_status::ready) return std::nullopt;
    running = false;
    return answer.get();
  }
  std::shared_future<std::vector<int64_t>> answer;
  std::promise<std::shared_ptr<infer::ToolAnswerBell>> called;  // the call started: the bell to ring
  std::shared_ptr<infer::ToolAnswerBell> bell;
  bool first = true, running = false;
};

TEST(Scheduler, ASequenceWaitingOnItsToolHoldsUpNoOtherAndMayBeCancelled) {
  const auto model = tiny_model();
  const infer::SamplerConfig greedy{.temperature = 0};
  const std::vector<int64_t> caller_prompt{5, 9, 13}, other_prompt{7, 7, 2}, answer_ids{30, 31, 32};
  const auto alone = [&](const std::vector<int64_t>& prompt, int64_t n, infer::ToolUse* tools) {
    infer::Session session(*model);
    infer::Sampler sampler(greedy);
    return session.generate(prompt, sampler, {.max_new_tokens = n}, {}, nullptr, {}, tools).tokens;
  };
  std::promise<std::vector<int64_t>> given, answer, never;
  given.set_value(answer_ids);
  HeldAnswer inside(given.get_future().share());
  const std::vector<int64_t> expected = alone(caller_prompt, 10, &inside);
  ASSERT_EQ(std::vector<int64_t>(expected.begin() + 1, expected.begin() + 4), answer_ids);

  Tracked caller, leaving, other;
  auto caller_tools = std::make_shared<HeldAnswer>(answer.get_future().share());
  auto leaving_tools = std::make_shared<HeldAnswer>(never.get_future().share());
  std::future<std::shared_ptr<infer::ToolAnswerBell>> caller_called = caller_tools->called.get_future();
  std::future<std::shared_ptr<infer::ToolAnswerBell>> leaving_called = leaving_tools->called.get_future();
  Scheduler scheduler(*model, {.parallel = 3, .max_queue = 4, .context = 0});
  SequenceRequest caller_request = tracked(caller, caller_prompt, greedy, 10);
  caller_request.tools = caller_tools;
  SequenceRequest leaving_request = tracked(leaving, {1, 2, 3}, greedy, 10);
  leaving_request.tools = leaving_tools;
  const auto leave = leaving_request.cancelled;
  ASSERT_TRUE(scheduler.submit(std::move(caller_request)));
  ASSERT_TRUE(scheduler.submit(std::move(leaving_request)));
  const auto bell = get_within_deadline(std::move(caller_called), "the caller's tool call");
  get_within_deadline(std::move(leaving_called), "the leaving sequence's tool call");
  // both wait on their tools: a sequence submitted now decodes to its end meanwhile
  ASSERT_TRUE(scheduler.submit(tracked(other, other_prompt, greedy, 12)));
  EXPECT_EQ(outcome(other).completion_tokens, 12);
  EXPECT_EQ(other.tokens, alone(other_prompt, 12, nullptr));
  // one whose client leaves while its tool runs ends as cancelled, its answer never given
  leave->store(true);
  EXPECT_TRUE(outcome(leaving).cancelled);
  // the answer: the caller goes on, with the tokens it gets with the call answered inside the step
  EXPECT_EQ(caller.tokens.size(), 1u);
  answer.set_value(answer_ids);
  bell->ring();
  EXPECT_EQ(outcome(caller).completion_tokens, 10);
  EXPECT_EQ(caller.tokens, expected);
}

}  // namespace
}  // namespace nf::serve
