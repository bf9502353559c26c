// The prefix cache (serve/prefix_cache.h) alone: the longest cached prefix, tokens compared, LRU
// eviction under the budget that never drops a block in use, --cache-budget's values. Through the
// scheduler: requests sharing a system prompt map its blocks instead of prefilling them, and their
// tokens and log-probabilities equal those of a cold server (contiguous caches, no prefix cache) bit
// for bit when the prefill chunks fall on the same positions (--prefill-chunk = the block length),
// for f32 and q8_0 caches, across a context shift and with a sliding-window model whose windows are
// paged; a ring-buffered model runs without a prefix cache; concurrent requests get the cold tokens
// (their logits within the batched-decoding tolerance); under a tiny budget unused blocks are
// dropped, a running sequence's never.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <future>
#include <stdexcept>
#include <thread>

#include "infer/tiny_lm.h"
#include "nanoformer/serve/prefix_cache.h"
#include "nanoformer/serve/scheduler.h"
#include "support/testing.h"

namespace nf::serve {
namespace {

constexpr std::chrono::seconds kDeadline{60};

nn::KVBlockRef block() { return std::make_shared<nn::KVBlock>(QuantType::f32, 1, 1, 4, 8); }  // 256 bytes

TEST(PrefixCache, FindsTheLongestCachedPrefixComparingTokens) {
  PrefixCache cache(4, 1 << 20);
  const std::vector<int64_t> a{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13};
  const std::vector<nn::KVBlockRef> blocks{block(), block(), block()};
  cache.insert(a, blocks);
  EXPECT_EQ(cache.blocks(), 3);
  EXPECT_EQ(cache.bytes(), 3 * blocks[0]->bytes());
  EXPECT_EQ(cache.find(a, 13), blocks);
  EXPECT_EQ(cache.find(a, 11), (std::vector<nn::KVBlockRef>{blocks[0], blocks[1]}));  // at most `limit` tokens
  std::vector<int64_t> b = a;
  b[5] = 99;  // the second block differs: only the first matches
  EXPECT_EQ(cache.find(b, 13), std::vector<nn::KVBlockRef>{blocks[0]});
  std::vector<int64_t> c = a;
  c[0] = 99;  // the same later blocks after another first one: no match (a block's hash covers all before it)
  EXPECT_TRUE(cache.find(c, 13).empty());
  // a block already cached for these tokens is kept, the new one not
  const nn::KVBlockRef other = block();
  cache.insert(a, {other});
  EXPECT_EQ(cache.find(a, 4), std::vector<nn::KVBlockRef>{blocks[0]});
  EXPECT_EQ(cache.blocks(), 3);
}

TEST(PrefixCache, DropsTheLeastRecentlyUsedUnusedBlocksAndNeverOneInUse) {
  const int64_t one = block()->bytes();
  PrefixCache cache(4, 2 * one);
  const std::vector<int64_t> a{1, 2, 3, 4, 5, 6, 7, 8}, b{9, 9, 9, 9}, c{7, 7, 7, 7};
  {
    const std::vector<nn::KVBlockRef> held{block(), block()};
    cache.insert(a, held);
    cache.insert(b, {block()});  // in use while it is inserted: three blocks over a budget of two
    EXPECT_EQ(cache.blocks(), 3);
    EXPECT_EQ(cache.evicted(), 0);
    cache.insert(a, held);  // a's blocks are in use: b's, unused now, goes
    EXPECT_EQ(cache.blocks(), 2);
    EXPECT_EQ(cache.evicted(), 1);
    EXPECT_EQ(cache.find(a, 8).size(), 2u);
    EXPECT_TRUE(cache.find(b, 4).empty());
  }  // a's blocks now held by the cache alone
  cache.find(a, 4);            // a's first block used now, its second not
  cache.insert(c, {block()});  // over the budget: a's second block (the least recently used) goes
  EXPECT_EQ(cache.blocks(), 2);
  EXPECT_EQ(cache.evicted(), 2);
  EXPECT_EQ(cache.find(a, 8).size(), 1u);
  EXPECT_EQ(cache.find(c, 4).size(), 1u);
  EXPECT_LE(cache.bytes(), 2 * one);
}

TEST(PrefixCache, ByteCountsAsTheFlagTakesThem) {
  EXPECT_EQ(parse_byte_count("0", "--cache-budget"), 0);
  EXPECT_EQ(parse_byte_count("4096", "--cache-budget"), 4096);
  EXPECT_EQ(parse_byte_count("512M", "--cache-budget"), int64_t{512} << 20);
  EXPECT_EQ(parse_byte_count("2G", "--cache-budget"), int64_t{2} << 30);
  EXPECT_EQ(parse_byte_count("1GiB", "--cache-budget"), int64_t{1} << 30);
  EXPECT_EQ(parse_byte_count("64k", "--cache-budget"), int64_t{64} << 10);
  for (const char* bad : {"", "-1", "12X", "M", "1.5G", "99999999999999999999"})
    EXPECT_THROW_WITH(parse_byte_count(bad, "--cache-budget"), "--cache-budget");
}

// What a request gets: its tokens and their log-probabilities.
struct Answer {
  std::vector<int64_t> tokens;
  std::vector<float> logprobs;
  SequenceOutcome outcome;
};

struct Pending {
  Answer answer;
  std::promise<void> done;
};

SequenceRequest request(Pending& p, std::vector<int64_t> prompt, int64_t max_new_tokens) {
  SequenceRequest r{.prompt = std::move(prompt),
                    .sampler = {.temperature = 0},
                    .stop = {.eos_ids = {}, .stop_strings = {}, .max_new_tokens = max_new_tokens},
                    .on_token = [&p](int64_t id) { p.answer.tokens.push_back(id); return true; },
                    .on_done = [&p](const SequenceOutcome& o) { p.answer.outcome = o; p.done.set_value(); }};
  r.on_logprobs = [&p](const infer::TokenLogprobs& l) { p.answer.logprobs.push_back(l.logprob); };
  return r;
}

void wait(Pending& p) {
  if (p.done.get_future().wait_for(kDeadline) != std::future_status::ready)
    throw std::runtime_error("a sequence did not end within the deadline");
}

// Runs the prompts on `scheduler`, one after the other (together: all submitted at once).
std::vector<Answer> run(Scheduler& scheduler, const std::vector<std::vector<int64_t>>& prompts, int64_t max_new_tokens,
                        bool together = false) {
  std::vector<std::unique_ptr<Pending>> pending;
  for (const auto& prompt : prompts) {
    pending.push_back(std::make_unique<Pending>());
    if (!scheduler.submit(request(*pending.back(), prompt, max_new_tokens))) throw std::runtime_error("refused");
    if (!together) wait(*pending.back());
  }
  std::vector<Answer> answers;
  for (auto& p : pending) {
    if (together) wait(*p);
    answers.push_back(p->answer);
  }
  return answers;
}

// A system prompt of 40 tokens (5 blocks of 8) and four requests after it.
std::vector<std::vector<int64_t>> prompts_after_a_system_prompt() {
  std::vector<int64_t> system;
  for (int64_t i = 0; i < 40; ++i) system.push_back((i * 7 + 3) % 64);
  std::vector<std::vector<int64_t>> prompts;
  for (int64_t r = 0; r < 4; ++r) {
    std::vector<int64_t> p = system;
    for (int64_t i = 0; i <= r + 2; ++i) p.push_back((r * 11 + i * 5 + 1) % 64);
    prompts.push_back(p);
  }
  return prompts;
}

// Each prompt alone in a fresh server without a prefix cache (contiguous caches).
std::vector<Answer> cold(models::DecoderLM& model, SchedulerOptions options,
                         const std::vector<std::vector<int64_t>>& prompts, int64_t max_new_tokens) {
  options.cache_budget = 0;
  std::vector<Answer> answers;
  for (const auto& prompt : prompts) {
    Scheduler scheduler(model, options);
    answers.push_back(run(scheduler, {prompt}, max_new_tokens)[0]);
  }
  return answers;
}

std::shared_ptr<models::DecoderLM> windowed_lm(int64_t window) {
  models::DecoderLMConfig c = models::preset_config("llama2c-stories260k");
  c.vocab_size = 64, c.dim = 64, c.n_layers = 2, c.n_heads = 4, c.n_kv_heads = 2, c.max_seq_len = 64, c.head_dim = 32;
  c.sliding_window = window, c.window_pattern = "SL";
  c.init_std = 0.3;
  Generator gen(5);
  return std::make_shared<models::DecoderLM>(c, gen);
}

TEST(PrefixCacheScheduler, SharedPrefixOutputsEqualColdOnesBitForBit) {
  struct Case {
    std::string name;
    std::shared_ptr<models::DecoderLM> model;
    QuantType type;
    int64_t keep, new_tokens;
  };
  const std::vector<Case> cases{
      {"f32", testing::tiny_lm(64, 32), QuantType::f32, 0, 8},
      {"q8_0", testing::tiny_lm(64, 32), QuantType::q8_0, 0, 8},
      {"f32, past the context (a shift keeping the system prompt)", testing::tiny_lm(64, 32), QuantType::f32, 40, 30},
      {"q8_0, past the context", testing::tiny_lm(64, 32), QuantType::q8_0, 40, 30},
      {"a window of 40 (paged)", windowed_lm(40), QuantType::f32, 0, 8},
  };
  const auto prompts = prompts_after_a_system_prompt();
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const SchedulerOptions options{.parallel = 2, .max_queue = 8, .context = 64, .keep = c.keep, .cache_type = c.type,
                                   .prefill_chunk = 8, .cache_budget = 1 << 20, .block_len = 8};
    const std::vector<Answer> expected = cold(*c.model, options, prompts, c.new_tokens);
    Scheduler shared(*c.model, options);
    ASSERT_GT(shared.stats().cache_budget, 0);
    const std::vector<Answer> got = run(shared, prompts, c.new_tokens);
    for (size_t i = 0; i < prompts.size(); ++i) {
      EXPECT_EQ(got[i].tokens, expected[i].tokens) << "request " << i;
      EXPECT_EQ(got[i].logprobs, expected[i].logprobs) << "request " << i;  // bit for bit
      EXPECT_EQ(got[i].outcome.completion_tokens, c.new_tokens);
    }
    EXPECT_EQ(got[0].outcome.cached_tokens, 0);
    for (size_t i = 1; i < prompts.size(); ++i) EXPECT_EQ(got[i].outcome.cached_tokens, 40) << "request " << i;
    const SchedulerStats s = shared.stats();
    EXPECT_EQ(s.prefix_cached_tokens, 3 * 40);
    // the prompts' blocks and the answers' (past a shift only the kept system prompt's: CachedSequence::exact)
    EXPECT_GT(s.prefix_cache_blocks, c.keep > 0 ? 4 : 5);
  }
}

TEST(PrefixCacheScheduler, ConcurrentRequestsGetTheColdTokensAndHoldThePrefixOnce) {
  const auto model = testing::tiny_lm(64, 32);
  const auto prompts = prompts_after_a_system_prompt();
  const SchedulerOptions options{.parallel = 4, .max_queue = 8, .context = 64, .keep = 0, .cache_type = QuantType::f32,
                                 .prefill_chunk = 8, .cache_budget = 1 << 20, .block_len = 8};
  const std::vector<Answer> expected = cold(*model, options, prompts, 12);
  Scheduler shared(*model, options);
  const std::vector<Answer> got = run(shared, prompts, 12, /*together=*/true);
  int64_t reused = 0;
  for (size_t i = 0; i < prompts.size(); ++i) {
    EXPECT_EQ(got[i].tokens, expected[i].tokens) << "request " << i;
    ASSERT_EQ(got[i].logprobs.size(), expected[i].logprobs.size());
    for (size_t t = 0; t < got[i].logprobs.size(); ++t)  // batched rows: ContinuousBatching's tolerance
      EXPECT_NEAR(got[i].logprobs[t], expected[i].logprobs[t], 1e-5) << "request " << i << ", token " << t;
    reused += got[i].outcome.cached_tokens;
  }
  EXPECT_EQ(reused, 3 * 40);  // prefilled once, then mapped by the three behind it
  // the four slots hold the system prompt's 5 blocks once: 5 shared + each its own 2 or 3 after them
  const SchedulerStats s = shared.stats();
  const int64_t block_bytes = 2 * 2 * 2 * 8 * 32 * 4;  // keys and values of 2 layers, 2 KV heads, 8 positions, 32 values
  EXPECT_LE(s.kv_bytes, (5 + 4 * 3) * block_bytes);
  Scheduler unshared(*model, [&] {
    SchedulerOptions o = options;
    o.cache_budget = 0;
    return o;
  }());
  run(unshared, prompts, 12, true);
  EXPECT_GT(unshared.stats().kv_bytes, 2 * s.kv_bytes);
}

TEST(PrefixCacheScheduler, ARingBufferedModelRunsWithoutAPrefixCache) {
  const auto model = windowed_lm(8);  // 2 W < the context: layer 0 a ring
  const auto prompts = prompts_after_a_system_prompt();
  const SchedulerOptions options{.parallel = 2, .max_queue = 8, .context = 64, .keep = 0, .cache_type = QuantType::f32,
                                 .prefill_chunk = 8, .cache_budget = 1 << 20, .block_len = 8};
  Scheduler scheduler(*model, options);
  EXPECT_EQ(scheduler.stats().cache_budget, 0);
  const std::vector<Answer> got = run(scheduler, prompts, 6);
  const std::vector<Answer> expected = cold(*model, options, prompts, 6);
  for (size_t i = 0; i < prompts.size(); ++i) EXPECT_EQ(got[i].tokens, expected[i].tokens);
}

TEST(PrefixCacheScheduler, ATinyBudgetDropsUnusedBlocksNeverARunningSequences) {
  const auto model = testing::tiny_lm(512, 32);
  const int64_t block_bytes = 2 * 2 * 2 * 8 * 32 * 4;
  SchedulerOptions options{.parallel = 2, .max_queue = 8, .context = 512, .keep = 0, .cache_type = QuantType::f32,
                           .prefill_chunk = 8, .cache_budget = block_bytes, .block_len = 8};
  Scheduler scheduler(*model, options);
  auto prompts = prompts_after_a_system_prompt();
  // a long answer (5 ms a token, cancelled at the end) holds the system prompt's blocks in its slot
  // while other prompts pass through the other slot
  Pending running;
  SequenceRequest slow = request(running, prompts[0], 400);
  slow.on_token = [&running](int64_t id) {
    running.answer.tokens.push_back(id);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    return true;
  };
  const std::shared_ptr<std::atomic<bool>> cancel = slow.cancelled;
  ASSERT_TRUE(scheduler.submit(std::move(slow)));
  std::vector<std::vector<int64_t>> others;
  for (int64_t r = 0; r < 4; ++r) {
    std::vector<int64_t> p;
    for (int64_t i = 0; i < 24; ++i) p.push_back((r * 13 + i * 3 + 2) % 64);
    others.push_back(p);
  }
  const std::vector<Answer> churn = run(scheduler, others, 2);
  // a request with the system prompt still finds its 5 blocks in the prefix cache: in use, never dropped
  const int64_t before = scheduler.stats().prefix_cached_tokens;
  const std::vector<Answer> later = run(scheduler, {prompts[1]}, 4);
  EXPECT_EQ(later[0].outcome.cached_tokens, 40);
  EXPECT_EQ(scheduler.stats().prefix_cached_tokens - before, 40);
  cancel->store(true);
  wait(running);
  EXPECT_TRUE(running.answer.outcome.cancelled) << "the long answer ended before the others were done";
  const SchedulerStats s = scheduler.stats();
  EXPECT_GT(s.prefix_cache_evicted, 0);
  // and each answer is the cold one
  options.cache_budget = 0;
  EXPECT_EQ(later[0].tokens, cold(*model, options, {prompts[1]}, 4)[0].tokens);
  const std::vector<int64_t> whole = cold(*model, options, {prompts[0]}, 400)[0].tokens;
  ASSERT_LE(running.answer.tokens.size(), whole.size());
  EXPECT_TRUE(std::equal(running.answer.tokens.begin(), running.answer.tokens.end(), whole.begin()));
  for (size_t i = 0; i < others.size(); ++i) EXPECT_EQ(churn[i].tokens, cold(*model, options, {others[i]}, 2)[0].tokens);
}

}  // namespace
}  // namespace nf::serve
