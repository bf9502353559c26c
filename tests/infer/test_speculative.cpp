// Speculative decoding by prompt lookup (infer/prompt_lookup.h, DecodeStream::draft / verify):
// greedy decoding with drafts gives plain greedy decoding's tokens (256 of them, RoPE and learned
// positions, across context shifts, a q8_0 cache, a grammar, a stop), seeded sampling gives plain
// sampling's tokens, the tokens sampled with drafts follow the target's distribution (against the
// exact distribution, a bound from the run count), and a stream whose drafts always fail backs off.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <deque>
#include <map>

#include "nanoformer/autograd/grad_mode.h"
#include "nanoformer/core/generator.h"
#include "nanoformer/grammar/constraint.h"
#include "nanoformer/grammar/grammar.h"
#include "nanoformer/grammar/token_trie.h"
#include "nanoformer/infer/decode_step.h"
#include "nanoformer/infer/prompt_lookup.h"
#include "nanoformer/infer/session.h"
#include "nanoformer/models/quantize.h"
#include "speculative_models.h"

namespace nf::infer {
namespace {

using testing::kVocab;
using testing::repeating_prompt;
using testing::repetitive;
using testing::tiny_gpt2;
using testing::tiny_llama;

constexpr SpeculativeConfig kLookup{.lookup_ngram = 3, .draft_max = 8, .draft_min = 0};

struct Outcome {
  GenerationResult result;
  std::vector<int64_t> cached;
};

Outcome generate(models::DecoderLM& model, const std::vector<int64_t>& prompt, const SamplerConfig& sampler_config,
             const StopCriteria& stop, const SpeculativeConfig& speculative, int64_t max_len = 0,
             QuantType cache_type = QuantType::f32, const Session::OnToken& on_token = {},
             grammar::GrammarConstraint* constraint = nullptr) {
  model.eval();
  Session session(model, max_len, {.keep = 4}, cache_type);
  Sampler sampler(sampler_config);
  Outcome run;
  run.result = session.generate(prompt, sampler, stop, on_token, constraint, speculative);
  run.cached = session.cached_tokens();
  return run;
}

// Lookup's tokens equal plain decoding's; its drafts were both taken and refused (else the
// comparison says nothing).
void expect_same_tokens(models::DecoderLM& model, const SamplerConfig& sampler, int64_t max_len = 0,
                        QuantType cache_type = QuantType::f32) {
  const StopCriteria stop{.max_new_tokens = 256};
  const Outcome plain = generate(model, repeating_prompt(model), sampler, stop, {}, max_len, cache_type);
  const Outcome lookup = generate(model, repeating_prompt(model), sampler, stop, kLookup, max_len, cache_type);
  ASSERT_EQ(plain.result.tokens.size(), 256u);
  EXPECT_EQ(lookup.result.tokens, plain.result.tokens);
  EXPECT_EQ(lookup.result.reason, plain.result.reason);
  EXPECT_EQ(lookup.cached, plain.cached);  // rolled back to what plain decoding holds
  EXPECT_EQ(plain.result.draft_tokens, 0);
  EXPECT_GT(lookup.result.accepted_tokens, 0);
  EXPECT_LT(lookup.result.accepted_tokens, lookup.result.draft_tokens);
  std::printf("[ lookup   ] %lld of %lld drafted tokens taken\n", static_cast<long long>(lookup.result.accepted_tokens),
              static_cast<long long>(lookup.result.draft_tokens));
}

class SpeculativeTest : public ::testing::Test {
 protected:
  NoGradGuard no_grad;
};

TEST_F(SpeculativeTest, LookupDraftsWhatFollowedTheLongestMostRecentMatch) {
  const std::vector<int64_t> h = {1, 2, 3, 9, 1, 2, 3, 4, 5, 7, 2, 3};
  // "2 3" last occurred at 5..6 (followed by 4 5 7 2 3); "7 2 3" never earlier
  EXPECT_EQ(lookup_draft(h, 3, 8), (std::vector<int64_t>{4, 5, 7, 2, 3}));
  EXPECT_EQ(lookup_draft(h, 3, 2), (std::vector<int64_t>{4, 5}));
  EXPECT_EQ(lookup_draft(h, 1, 3), (std::vector<int64_t>{4, 5, 7}));  // "3" at 6
  const std::vector<int64_t> none = {1, 2, 3};
  EXPECT_TRUE(lookup_draft(none, 3, 8).empty());
  EXPECT_TRUE(lookup_draft(std::vector<int64_t>{5}, 3, 8).empty());
  const std::vector<int64_t> longer = {8, 5, 6, 0, 5, 6, 1, 8, 5, 6};  // "8 5 6" beats the later "5 6"
  EXPECT_EQ(lookup_draft(longer, 3, 2), (std::vector<int64_t>{0, 5}));
  EXPECT_EQ(lookup_draft(longer, 2, 2), (std::vector<int64_t>{1, 8}));
}

// The flags' bounds: what one stream may ask is paid by every stream stepping with it, and a draft
// is verified by the decoding kernels.
TEST_F(SpeculativeTest, TheFlagsAreBounded) {
  const auto refusal = [](SpeculativeConfig c) {
    try {
      c.validate();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(refusal({.lookup_ngram = 16, .draft_max = 15}), "accepted");
  EXPECT_NE(refusal({.lookup_ngram = 17}).find("--lookup-ngram 17: must be in [0, 16]"), std::string::npos);
  EXPECT_NE(refusal({.lookup_ngram = 2, .draft_max = 16}).find("--draft-max 16: must be in [1, 15]"), std::string::npos);
  EXPECT_NE(refusal({.lookup_ngram = 2, .draft_max = 0}).find("--draft-max 0: must be in [1, 15]"), std::string::npos);
  EXPECT_NE(refusal({.draft_p_min = 1.5}).find("--draft-p-min 1.5: must be in [0, 1]"), std::string::npos);
}

// Why greedy drafting gives plain greedy's tokens: a verifying forward of k + 1 tokens gives each
// row the logits, to the bit, that feeding those tokens one at a time gives, for every draft
// length up to --draft-max's bound, with f32 and Q8_0 weights, an f32 and a q8_0 cache, 2 query
// heads a KV head. (Verifications of more than 16 rows of scores a KV head, 9 tokens here, once
// went through prefill's attention kernel, whose sums differ in their last bits: a trained
// model's near ties then made greedy decoding with --draft-max 4 differ from plain decoding.)
TEST_F(SpeculativeTest, AVerifyingForwardGivesTheLogitsOfOneTokenAtATime) {
  for (const bool quantised : {false, true})
    for (const QuantType cache : {QuantType::f32, QuantType::q8_0}) {
      const auto model = tiny_llama(512, /*head_dim=*/32);
      if (quantised) models::quantize_weights(*model, {.type = QuantType::q8_0});
      const std::vector<int64_t> prompt = repeating_prompt(*model);
      std::vector<int64_t> next;
      for (int64_t i = 0; i < SpeculativeConfig::kMaxDraft + 1; ++i) next.push_back((i * 5 + 1) % kVocab);
      CachedSequence one(*model, 0, {}, cache);
      one.feed(prompt);
      std::vector<float> alone;
      for (const int64_t id : next) {
        const Tensor row = one.feed({id}).to(DType::f32).contiguous();
        alone.insert(alone.end(), row.data<float>(), row.data<float>() + kVocab);
      }
      for (const size_t rows : {size_t{2}, size_t{5}, size_t{9}, next.size()}) {
        CachedSequence together(*model, 0, {}, cache);
        together.feed(prompt);
        const std::vector<int64_t> ids(next.begin(), next.begin() + static_cast<int64_t>(rows));
        const Tensor logits = together.feed(ids, /*all_positions=*/true).to(DType::f32).contiguous();
        ASSERT_EQ(logits.numel(), static_cast<int64_t>(rows) * kVocab);
        const std::vector<float> got(logits.data<float>(), logits.data<float>() + logits.numel());
        EXPECT_EQ(got, std::vector<float>(alone.begin(), alone.begin() + static_cast<int64_t>(rows) * kVocab))
            << rows << " rows, " << (quantised ? "Q8_0" : "f32") << " weights, cache " << quant_type_name(cache);
      }
    }
}

TEST_F(SpeculativeTest, GreedyEqualsPlainGreedyWithRoPE) {
  expect_same_tokens(*tiny_llama(512), {.temperature = 0});
}

TEST_F(SpeculativeTest, GreedyEqualsPlainGreedyWithLearnedPositions) {
  expect_same_tokens(*tiny_gpt2(512), {.temperature = 0});
}

// 88 prompt tokens and 256 new ones in 128 positions: the context shifts (keys moved and rotated
// for RoPE; re-encoded for learned positions) several times, drafts limited to the room left.
TEST_F(SpeculativeTest, GreedyEqualsPlainGreedyAcrossContextShifts) {
  expect_same_tokens(*tiny_llama(512), {.temperature = 0}, 128);
  expect_same_tokens(*tiny_gpt2(512), {.temperature = 0}, 128);
}

TEST_F(SpeculativeTest, GreedyEqualsPlainGreedyWithAQ8Cache) {
  expect_same_tokens(*tiny_llama(512, /*head_dim=*/32), {.temperature = 0}, 0, QuantType::q8_0);
}

// Sliding-window layers (window 12, a ring of 24 columns, unrolled every 13 tokens): a draft's
// forward may unroll the ring, and the rollback still finds the keys the next window reaches.
TEST_F(SpeculativeTest, GreedyEqualsPlainGreedyWithSlidingWindows) {
  models::DecoderLMConfig c = models::preset_config("llama2c-stories260k");
  c.vocab_size = kVocab, c.dim = 32, c.n_layers = 2, c.n_heads = 4, c.n_kv_heads = 2, c.max_seq_len = 512;
  c.init_std = 0.3, c.sliding_window = 12, c.window_pattern = "SL";
  Generator gen(3);
  expect_same_tokens(*repetitive(std::make_shared<models::DecoderLM>(c, gen)), {.temperature = 0});
}

// The same seed draws the same counters at the same tokens: sampling with drafts gives plain
// sampling's tokens, top-k and penalties included.
TEST_F(SpeculativeTest, SeededSamplingEqualsPlainSampling) {
  expect_same_tokens(*tiny_llama(512), {.temperature = 0.3, .top_k = 8, .repetition_penalty = 1.05, .seed = 11});
}

// A stop (on_token refusing the token, as a stop string does) ends both at the same token, the
// lookup run in the middle of a verified draft.
TEST_F(SpeculativeTest, AStopEndsAtTheSameToken) {
  const auto model = tiny_llama(512);
  const StopCriteria stop{.max_new_tokens = 256};
  std::vector<Outcome> runs;
  for (const SpeculativeConfig& speculative : {SpeculativeConfig{}, kLookup}) {
    std::vector<int64_t> seen;
    runs.push_back(generate(*model, repeating_prompt(*model), {.temperature = 0}, stop, speculative, 0, QuantType::f32,
                            [&](int64_t id) {
                              seen.push_back(id);
                              return seen.size() < 150;  // a stop string completed by the 150th token
                            }));
    EXPECT_EQ(seen, runs.back().result.tokens);  // on_token saw each token once, none after the stop
  }
  EXPECT_EQ(runs[1].result.tokens, runs[0].result.tokens);
  EXPECT_EQ(runs[1].result.tokens.size(), 150u);
  EXPECT_EQ(runs[1].result.reason, StopReason::stop_string);
  EXPECT_EQ(runs[1].cached, runs[0].cached);
  EXPECT_GT(runs[1].result.accepted_tokens, 0);
}

// Streams decoded together with drafts (of different lengths: those of a length verified in one
// forward) get the tokens each gets alone with plain decoding: greedy and seeded sampling, one
// stream ending early at an end id, the caches holding what plain decoding's hold.
TEST_F(SpeculativeTest, StreamsTogetherGetTheirPlainTokens) {
  const auto model = tiny_llama(512);
  model->eval();
  std::vector<std::vector<int64_t>> prompts;
  for (int i = 0; i < 5; ++i) {
    std::vector<int64_t> p = repeating_prompt(*model);
    p.resize(p.size() - static_cast<size_t>(3 * i));  // each stream at its own point of the prompt
    prompts.push_back(p);
  }
  for (const SamplerConfig& config : {SamplerConfig{.temperature = 0}, SamplerConfig{.temperature = 0.4, .top_k = 6}}) {
    std::vector<StopCriteria> stops(prompts.size(), StopCriteria{.max_new_tokens = 96});
    std::vector<std::vector<int64_t>> want;
    for (size_t i = 0; i < prompts.size(); ++i) {
      SamplerConfig seeded = config;
      seeded.seed = 50 + i;
      if (i == 1) stops[i].eos_ids = {generate(*model, prompts[i], seeded, stops[i], {}).result.tokens.at(40)};
      want.push_back(generate(*model, prompts[i], seeded, stops[i], {}).result.tokens);
    }
    std::deque<CachedSequence> sequences;
    std::deque<Sampler> samplers;
    std::deque<DecodeStream> streams;
    std::vector<DecodeStream*> all;
    for (size_t i = 0; i < prompts.size(); ++i) {
      SamplerConfig seeded = config;
      seeded.seed = 50 + i;
      sequences.emplace_back(*model);
      samplers.emplace_back(seeded);
      streams.emplace_back(sequences.back(), samplers.back(), stops[i], prompts[i], nullptr, StreamCallbacks{}, kLookup);
      streams.back().prefill(prompts[i]);
      all.push_back(&streams.back());
    }
    decode(all);
    int64_t accepted = 0;
    for (size_t i = 0; i < prompts.size(); ++i) {
      EXPECT_EQ(streams[i].generated(), want[i]) << "stream " << i << ", temperature " << config.temperature;
      std::vector<int64_t> held = prompts[i];
      held.insert(held.end(), want[i].begin(), want[i].end() - 1);
      EXPECT_EQ(sequences[i].tokens(), held) << "stream " << i;
      accepted += streams[i].accepted();
    }
    EXPECT_LT(want[1].size(), 96u);
    EXPECT_GT(accepted, 0);
  }
}

// Byte strings for the 64 ids: 'a' .. 'z', 'A' .. 'Z', '0' .. '9', then an end id.
std::vector<std::string> letters() {
  std::vector<std::string> v;
  for (char c = 'a'; c <= 'z'; ++c) v.emplace_back(1, c);
  for (char c = 'A'; c <= 'Z'; ++c) v.emplace_back(1, c);
  for (char c = '0'; v.size() < kVocab - 1; ++c) v.emplace_back(1, c);
  v.emplace_back("");
  return v;
}

TEST_F(SpeculativeTest, AGrammarConstrainedRunEqualsThePlainOne) {
  const auto model = tiny_llama(512);
  const auto trie = std::make_shared<const grammar::TokenTrie>(letters());
  const auto grammar =
      std::make_shared<const grammar::Grammar>(grammar::compile_gbnf("root ::= ([a-f] [A-D] | \"x\" [0-3] [a-c])+"));
  std::vector<Outcome> runs;
  for (const SpeculativeConfig& speculative : {SpeculativeConfig{}, kLookup}) {
    grammar::GrammarConstraint constraint(grammar, trie, {kVocab - 1});
    runs.push_back(generate(*model, repeating_prompt(*model), {.temperature = 0}, {.max_new_tokens = 200}, speculative, 0,
                            QuantType::f32, {}, &constraint));
  }
  ASSERT_EQ(runs[0].result.tokens.size(), 200u);
  EXPECT_EQ(runs[1].result.tokens, runs[0].result.tokens);
  EXPECT_EQ(runs[1].cached, runs[0].cached);
  EXPECT_GT(runs[1].result.accepted_tokens, 0);
  EXPECT_LT(runs[1].result.accepted_tokens, runs[1].result.draft_tokens);
}

// The distribution of the first three tokens sampled with drafts (the second and third from a
// verified draft: the prompt holds every id) against the exact one the target samples from, over
// N independently seeded runs (top-k 4: at most 64 outcomes). By Bretagnolle-Huber-Carol's
// inequality, P(||p_hat - p||_1 >= e) <= 2^k exp(-N e^2 / 2) for k outcomes, so with
// e = sqrt(2 (k ln 2 + ln(1 / delta)) / N) a correct sampler fails once in 1 / delta = 10^6 runs.
TEST_F(SpeculativeTest, SampledTokensFollowTheTargetsDistribution) {
  const auto model = tiny_llama(512);
  model->eval();
  const SamplerConfig config{.temperature = 1.0, .top_k = 4};
  const std::vector<int64_t> prompt = repeating_prompt(*model);
  // exact: p(x1) p(x2 | x1) p(x3 | x1 x2), each the sampler's processed row's softmax
  const auto probabilities = [&](const std::vector<int64_t>& sequence, size_t generated) {
    CachedSequence s(*model);
    const Tensor logits = s.feed(sequence).to(DType::f32).contiguous();
    std::vector<float> row(logits.data<float>(), logits.data<float>() + kVocab);
    process_logits(row, sequence, config, generated);
    const float top = *std::max_element(row.begin(), row.end());
    std::vector<double> p(kVocab);
    double sum = 0;
    for (int64_t i = 0; i < kVocab; ++i) sum += p[i] = std::isinf(row[i]) ? 0.0 : std::exp(double(row[i] - top));
    for (double& x : p) x /= sum;
    return p;
  };
  const std::map<std::vector<int64_t>, double> exact = testing::three_token_distribution(prompt, probabilities);
  constexpr int kRuns = 20000;
  std::map<std::vector<int64_t>, double> seen;
  int64_t drafted = 0, accepted = 0;
  Session session(*model);  // each run rolls back to the prompt (Session::generate keeps the common prefix)
  for (int r = 0; r < kRuns; ++r) {
    SamplerConfig seeded = config;
    seeded.seed = 1000 + static_cast<uint64_t>(r);
    Sampler sampler(seeded);
    const GenerationResult run = session.generate(prompt, sampler, {.max_new_tokens = 3}, {}, nullptr, kLookup);
    ASSERT_EQ(run.tokens.size(), 3u);
    seen[run.tokens] += 1.0 / kRuns;
    drafted += run.draft_tokens, accepted += run.accepted_tokens;
  }
  std::printf("[ lookup   ] %lld of %lld drafted tokens taken\n", static_cast<long long>(accepted),
              static_cast<long long>(drafted));
  ASSERT_GT(accepted, kRuns / 10);  // drafts taken in many runs and refused in many
  ASSERT_LT(accepted, drafted - kRuns / 10);
  double l1 = 0;
  for (const auto& [tokens, p] : exact) l1 += std::abs(p - (seen.contains(tokens) ? seen[tokens] : 0.0));
  for (const auto& [tokens, f] : seen) {
    EXPECT_TRUE(exact.contains(tokens)) << "a sequence the target cannot sample";
    if (!exact.contains(tokens)) l1 += f;
  }
  const auto k = static_cast<double>(exact.size());
  const double bound = std::sqrt(2 * (k * std::log(2.0) + std::log(1e6)) / kRuns);
  std::printf("[ lookup   ] L1 distance %.4f, bound %.4f\n", l1, bound);
  EXPECT_LT(l1, bound) << exact.size() << " outcomes, " << kRuns << " runs";
}

TEST_F(SpeculativeTest, BackoffPausesTwiceAsLongAfterEachMissUpTo64Steps) {
  DraftBackoff b(16);
  EXPECT_TRUE(b.may_draft());
  std::vector<int64_t> pauses;
  for (int miss = 0; miss < 8; ++miss) {
    b.record(0, 1);
    int64_t pause = 0;
    while (!b.may_draft()) ++pause;
    pauses.push_back(pause);
  }
  EXPECT_EQ(pauses, (std::vector<int64_t>{2, 4, 8, 16, 32, 64, 64, 64}));
  b.record(1, 1);  // a taken token: drafting resumes at once, the next miss pausing 2 again
  EXPECT_TRUE(b.may_draft());
  EXPECT_EQ(b.misses(), 0);
  b.record(0, 1);
  EXPECT_FALSE(b.may_draft());
  EXPECT_FALSE(b.may_draft());
  EXPECT_TRUE(b.may_draft());
}

TEST_F(SpeculativeTest, TheDraftWindowIsTwiceWhatTheLastDraftHadTaken) {
  DraftBackoff b(16, 0);
  std::vector<int64_t> windows{b.window()};
  for (const int64_t taken : {3, 0, 1, 2, 4, 8, 16, 5}) {
    b.record(taken, 16);
    windows.push_back(b.window());
  }
  EXPECT_EQ(windows, (std::vector<int64_t>{16, 6, 1, 2, 4, 8, 16, 16, 10}));
  DraftBackoff at_least(16, 3);  // never below --draft-min, which a shorter draft could not reach
  at_least.record(0, 3);
  EXPECT_EQ(at_least.window(), 3);
}

// With a draft model's cost the window is the length of the largest expected gain, worked here by
// hand: a = (taken + 1) / (tried + 2) over counts decayed by 0.9, gain(k) = (1 + a + .. + a^k) /
// (1 + k (0.2 + 0.1)).
TEST_F(SpeculativeTest, ADraftModelsWindowIsTheLengthOfTheLargestExpectedGain) {
  DraftBackoff b(3, 0, 0.2);
  b.record(1, 3);  // a = 2 / 4: gain(1) = 1.5 / 1.3 = 1.154 > gain(2) = 1.75 / 1.6 = 1.094
  EXPECT_DOUBLE_EQ(b.acceptance(), 0.5);
  EXPECT_EQ(b.window(), 1);
  EXPECT_TRUE(b.may_draft());
  b.record(2, 2);  // taken 2.9, tried 3.8, a = 3.9 / 5.8 = 0.672: gain 1.286, 1.327, 1.278
  EXPECT_NEAR(b.gain(2), (1 + 3.9 / 5.8 + (3.9 / 5.8) * (3.9 / 5.8)) / 1.6, 1e-12);
  EXPECT_EQ(b.window(), 2);
  DraftBackoff lookup(3, 0);  // no cost: the window alone (twice what the last draft took)
  lookup.record(1, 3);
  EXPECT_EQ(lookup.window(), 2);
}

// Drafts of which one token in two is taken (a = 1/2) pay at a cost of 0.2 (gain(1) = 1.5 / 1.3)
// but not at 0.5 (1.5 / 1.6): there the step does not draft and counts as a miss, although no
// verified draft was a miss, and prompt lookup's window alone would draft on.
TEST_F(SpeculativeTest, ADraftModelWhoseDraftsDoNotPayStopsDrafting) {
  DraftBackoff cheap(3, 0, 0.2), dear(3, 0, 0.5), lookup(3, 0);
  for (int i = 0; i < 5; ++i)
    for (DraftBackoff* b : {&cheap, &dear, &lookup}) b->record(1, 3);
  EXPECT_NEAR(dear.acceptance(), 0.5, 1e-12);
  EXPECT_TRUE(cheap.may_draft());
  EXPECT_TRUE(lookup.may_draft());
  EXPECT_EQ(dear.misses(), 0);
  EXPECT_FALSE(dear.may_draft());
  EXPECT_EQ(dear.misses(), 1);
  for (int step = 0; step < DraftBackoff::kMinModelPause; ++step)
    EXPECT_FALSE(dear.may_draft()) << "step " << step << " of the pause of 32 steps after a first miss";
  EXPECT_TRUE(dear.may_draft()) << "a one-token probe after the pause";
  EXPECT_EQ(dear.window(), 1);
}

// A draft model whose drafts are never taken: each pause ends in a probe of one token, whose miss
// lowers the rate further and doubles the pause, from 32 steps up to 512.
TEST_F(SpeculativeTest, ADraftModelThatIsNeverTakenDraftsOnlyToProbe) {
  DraftBackoff b(3, 0, 0.3);
  EXPECT_TRUE(b.may_draft());
  EXPECT_EQ(b.window(), 1);  // a = 1 / 2 at first: gain(1) = 1.5 / 1.4 = 1.071 > gain(2) = 1.75 / 1.8
  b.record(0, 1);
  std::vector<int> drafted_at;
  for (int step = 0; step < 3000; ++step) {
    if (!b.may_draft()) continue;
    drafted_at.push_back(step);
    EXPECT_EQ(b.window(), 1) << "a probe drafts one token";
    b.record(0, 1);
  }
  // pauses 32, 64, 128, 256, then 512 (prompt lookup's go 2, 4, .. 64: a draft model's probe costs
  // about a step), each begun by the step after a probe, which finds the rate not paying
  EXPECT_EQ(drafted_at, (std::vector<int>{33, 99, 229, 487, 1001, 1515, 2029, 2543}));
}

// A refused draft of a draft model whose rate still pays is no miss: the next step drafts again, as
// long as the rule says (a = 24.7 / 26.7 = 0.925 at a cost of 0.1: gain(1) = 1.925 / 1.2 = 1.60,
// gain(2) = 2.78 / 1.4 = 1.99, gain(3) = 3.57 / 1.6 = 2.23, so 3); prompt lookup's window falls to 1
// and it pauses.
TEST_F(SpeculativeTest, ARefusedDraftOfADraftModelThatStillPaysIsNoMiss) {
  DraftBackoff model(3, 0, 0.1), lookup(3, 0);
  for (DraftBackoff* b : {&model, &lookup}) {
    for (int i = 0; i < 20; ++i) b->record(3, 3);
    b->record(0, 3);
  }
  EXPECT_NEAR(model.acceptance(), 0.925, 0.001);
  EXPECT_EQ(model.misses(), 0);
  EXPECT_TRUE(model.may_draft());
  EXPECT_EQ(model.window(), 3);
  EXPECT_EQ(lookup.misses(), 1);
  EXPECT_FALSE(lookup.may_draft());
  EXPECT_FALSE(lookup.may_draft());
  EXPECT_TRUE(lookup.may_draft());
  EXPECT_EQ(lookup.window(), 1);
}

// A stream whose every draft is wrong (its first token replaced by one greedy decoding does not
// take) still gives plain greedy's tokens, and drafts only as often as the backoff lets it: 7
// drafts in the first 128 + 7 steps, then one in 65.
TEST_F(SpeculativeTest, AStreamWhoseDraftsAlwaysFailStopsDrafting) {
  const auto model = tiny_llama(1024);
  model->eval();
  const std::vector<int64_t> prompt = repeating_prompt(*model);
  const StopCriteria stop{.max_new_tokens = 400};
  const std::vector<int64_t> plain = generate(*model, prompt, {.temperature = 0}, stop, {}).result.tokens;
  CachedSequence sequence(*model), probe(*model);
  Sampler sampler({.temperature = 0});
  DecodeStream stream(sequence, sampler, stop, prompt, nullptr, {}, kLookup);
  stream.prefill(prompt);
  int64_t steps = 0, verified = 0;
  while (stream.running()) {
    ++steps;
    std::vector<int64_t> draft = stream.draft();
    if (draft.empty()) {  // a plain step (decode_step would ask for a draft again)
      const Tensor logits = sequence.feed({stream.generated().back()}).to(DType::f32).contiguous();
      stream.accept({logits.data<float>(), static_cast<size_t>(kVocab)});
      continue;
    }
    probe.copy_from(sequence);  // the token greedy decoding takes next, which the draft must miss
    const Tensor next = probe.feed({stream.generated().back()}).to(DType::f32).contiguous();
    draft[0] = (argmax({next.data<float>(), static_cast<size_t>(kVocab)}) + 1) % kVocab;
    std::vector<int64_t> ids{stream.generated().back()};
    ids.insert(ids.end(), draft.begin(), draft.end());
    const Tensor logits = sequence.feed(ids, true).to(DType::f32).contiguous();
    stream.verify(draft, {logits.data<float>(), static_cast<size_t>(logits.numel())});
    ++verified;
  }
  EXPECT_EQ(stream.generated(), plain);
  EXPECT_EQ(stream.accepted(), 0);
  EXPECT_GT(stream.drafted(), 0);
  EXPECT_EQ(steps, 399);  // a refused draft still yields its correction: one token per step after the prefill's
  // misses at steps 1, 4, 9, 18, 35, 68, 133, then every 65th
  EXPECT_EQ(verified, 7 + (steps - 133) / 65);
}

}  // namespace
}  // namespace nf::infer
