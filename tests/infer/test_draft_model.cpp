// Speculative decoding with a draft model (infer/draft_model.h): the rejection rule gives the
// target's distribution (against p itself, and over whole seeded generations against the exact
// distribution enumerated from the target's logits); greedy decoding with a draft gives plain
// greedy decoding's 256 tokens (RoPE and learned positions, across context shifts, a q8_0 cache,
// a grammar, streams decoded together); the errors name the models.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <deque>
#include <map>
#include <string>

#include "nanoformer/autograd/grad_mode.h"
#include "nanoformer/grammar/constraint.h"
#include "nanoformer/grammar/grammar.h"
#include "nanoformer/grammar/token_trie.h"
#include "nanoformer/infer/decode_step.h"
#include "nanoformer/infer/draft_model.h"
#include "nanoformer/infer/session.h"
#include "nanoformer/ops/factory.h"
#include "speculative_models.h"

namespace nf::infer {
namespace {

using testing::kVocab;
using testing::repeating_prompt;

// The draft: the target's first layer alone (its embeddings, first block, final norm and head
// copied), and its weights moved by `noise` times their own spread, so that it agrees with the
// target often but not always.
std::shared_ptr<models::DecoderLM> draft_of(const models::DecoderLM& target, float noise = 0.0f, uint64_t seed = 1) {
  models::DecoderLMConfig c = target.config();
  c.n_layers = 1;
  Generator gen(seed);
  auto draft = std::make_shared<models::DecoderLM>(c, gen);
  std::map<std::string, Tensor> weights;
  for (const auto& [name, p] : target.named_parameters()) weights[name] = p;
  for (const auto& [name, p] : draft->named_parameters()) {
    const Tensor& w = weights.at(name);
    const Tensor r = randn(p.shape(), gen);  // the draft's own noise
    for (int64_t i = 0; i < p.numel(); ++i)
      p.data<float>()[i] = w.data<float>()[i] * (1.0f + noise * r.data<float>()[i]);
  }
  draft->eval();
  return draft;
}

struct Outcome {
  GenerationResult result;
  std::vector<int64_t> cached;
};

Outcome generate(models::DecoderLM& model, const std::vector<int64_t>& prompt, const SamplerConfig& sampler_config,
                 const StopCriteria& stop, const SpeculativeConfig& speculative, int64_t max_len = 0,
                 QuantType cache_type = QuantType::f32, grammar::GrammarConstraint* constraint = nullptr) {
  model.eval();
  Session session(model, max_len, {.keep = 4}, cache_type);
  Sampler sampler(sampler_config);
  Outcome run;
  run.result = session.generate(prompt, sampler, stop, {}, constraint, speculative);
  run.cached = session.cached_tokens();
  return run;
}

// Greedy with the draft gives plain greedy's 256 tokens and cache; drafts both taken and refused.
void expect_same_tokens(models::DecoderLM& target, models::DecoderLM& draft, int64_t max_len = 0,
                        QuantType cache_type = QuantType::f32) {
  const StopCriteria stop{.max_new_tokens = 256};
  const SpeculativeConfig speculative{.draft_max = 4, .draft_model = &draft, .draft_cost = 0};
  const std::vector<int64_t> prompt = repeating_prompt(target);
  const Outcome plain = generate(target, prompt, {.temperature = 0}, stop, {}, max_len, cache_type);
  const Outcome drafted = generate(target, prompt, {.temperature = 0}, stop, speculative, max_len, cache_type);
  ASSERT_EQ(plain.result.tokens.size(), 256u);
  EXPECT_EQ(drafted.result.tokens, plain.result.tokens);
  EXPECT_EQ(drafted.result.reason, plain.result.reason);
  EXPECT_EQ(drafted.cached, plain.cached);
  EXPECT_GT(drafted.result.accepted_tokens, 0);
  EXPECT_LT(drafted.result.accepted_tokens, drafted.result.draft_tokens);
  std::printf("[ draft    ] %lld of %lld drafted tokens taken\n", static_cast<long long>(drafted.result.accepted_tokens),
              static_cast<long long>(drafted.result.draft_tokens));
}

// The chi-square statistic's critical value at significance alpha = 1e-6 for `dof` degrees of
// freedom: Wilson and Hilferty's cube approximation, dof (1 - 2 / (9 dof) + z sqrt(2 / (9 dof)))^3
// with z = 4.753 the standard normal's upper 1e-6 quantile.
double chi_square_critical(double dof) {
  const double a = 2.0 / (9.0 * dof);
  return dof * std::pow(1.0 - a + 4.753 * std::sqrt(a), 3.0);
}

// Pearson's chi-square of observed counts against exact probabilities over n draws, cells with an
// expected count under 5 pooled into one (Cochran's rule); returns {statistic, degrees of freedom}.
std::pair<double, double> chi_square(const std::map<std::vector<int64_t>, double>& exact,
                                     std::map<std::vector<int64_t>, double> counts, double n) {
  double statistic = 0, pooled_expected = 0, pooled_observed = 0, cells = 0;
  for (const auto& [outcome, p] : exact) {
    const double expected = p * n, observed = counts[outcome];
    counts.erase(outcome);
    if (expected < 5) {
      pooled_expected += expected, pooled_observed += observed;
      continue;
    }
    statistic += (observed - expected) * (observed - expected) / expected;
    ++cells;
  }
  for (const auto& [outcome, observed] : counts) pooled_observed += observed;  // outcomes p says are impossible
  if (pooled_expected > 0) {
    statistic += (pooled_observed - pooled_expected) * (pooled_observed - pooled_expected) / pooled_expected;
    ++cells;
  } else if (pooled_observed > 0) {
    statistic = std::numeric_limits<double>::infinity();
  }
  return {statistic, cells - 1};
}

constexpr double kSureEnough = 0.5;

class DraftModelTest : public ::testing::Test {
 protected:
  NoGradGuard no_grad;
};

// The rule alone: x ~ q, then speculative_choice, over 400,000 seeded draws, against p (q far from
// p: mass where p has none and none where p has some). Taking x with probability min(1, q / p),
// or drawing the refused token again from p instead of the residual, fails this by far.
TEST_F(DraftModelTest, TheRejectionRuleGivesTheTargetsDistribution) {
  const std::vector<float> p = {0.30f, 0.25f, 0.20f, 0.10f, 0.10f, 0.05f, 0.0f, 0.0f};
  const std::vector<float> q = {0.05f, 0.10f, 0.40f, 0.0f, 0.15f, 0.05f, 0.25f, 0.0f};
  Sampler sampler({.temperature = 1.0, .seed = 7});
  constexpr int kDraws = 400000;
  std::map<std::vector<int64_t>, double> counts, exact;
  for (int64_t i = 0; i < 8; ++i)
    if (p[i] > 0) exact[{i}] = p[i];
  int64_t taken = 0;
  for (int n = 0; n < kDraws; ++n) {
    const int64_t x = sample_from_probabilities(q, sampler.uniform());
    const int64_t y = speculative_choice(p, q, x, sampler);
    taken += y == x;
    counts[{y}] += 1;
  }
  const auto [statistic, dof] = chi_square(exact, counts, kDraws);
  std::printf("[ draft    ] chi-square %.1f with %.0f degrees of freedom (critical %.1f); %.3f of drafts taken\n",
              statistic, dof, chi_square_critical(dof), static_cast<double>(taken) / kDraws);
  EXPECT_LT(statistic, chi_square_critical(dof));
  // sum_x min(p, q): the acceptance rate the rule must show
  EXPECT_NEAR(static_cast<double>(taken) / kDraws, 0.05 + 0.10 + 0.20 + 0.0 + 0.10 + 0.05, 0.005);
}

// Tokens 1-3 of seeded generations of 4 tokens (token 1 from the prefill, 2 and 3 from verified
// drafts of up to 2 tokens, or the residual and the next draft) against the exact distribution
// p(x1) p(x2 | x1) p(x3 | x1 x2) of the target's processed rows, enumerated: a chi-square test at
// significance 1e-6. Temperature 1.5 and top-k 4 (64 outcomes), a repetition penalty (q must see
// the draft's own tokens), a draft that disagrees often.
TEST_F(DraftModelTest, SampledTokensFollowTheTargetsDistribution) {
  const auto target = testing::tiny_llama(64);
  target->eval();
  const auto draft = draft_of(*target, 0.3f);
  const SamplerConfig config{.temperature = 1.5, .top_k = 4, .repetition_penalty = 1.3};
  const std::vector<int64_t> prompt = {5, 9, 5, 17, 33, 2, 9};
  const auto probabilities = [&](const std::vector<int64_t>& sequence, size_t generated) {
    CachedSequence s(*target);
    const Tensor logits = s.feed(sequence).to(DType::f32).contiguous();
    Sampler sampler(config);
    return sampler.distribution({logits.data<float>(), static_cast<size_t>(kVocab)}, sequence, generated);
  };
  const std::map<std::vector<int64_t>, double> exact = testing::three_token_distribution(prompt, probabilities);
  constexpr int kRuns = 2500;
  std::map<std::vector<int64_t>, double> counts;
  int64_t drafted = 0, accepted = 0;
  Session session(*target);  // each run rolls both caches back to the prompt
  const SpeculativeConfig speculative{.draft_max = 2, .draft_model = draft.get(), .draft_cost = 0};
  for (int r = 0; r < kRuns; ++r) {
    SamplerConfig seeded = config;
    seeded.seed = 1000 + static_cast<uint64_t>(r);
    Sampler sampler(seeded);
    const GenerationResult run = session.generate(prompt, sampler, {.max_new_tokens = 4}, {}, nullptr, speculative);
    ASSERT_EQ(run.tokens.size(), 4u);
    counts[{run.tokens.begin(), run.tokens.begin() + 3}] += 1;
    drafted += run.draft_tokens, accepted += run.accepted_tokens;
  }
  const auto [statistic, dof] = chi_square(exact, counts, kRuns);
  std::printf("[ draft    ] %lld of %lld drafted tokens taken; chi-square %.1f with %.0f degrees of freedom "
              "(critical %.1f)\n",
              static_cast<long long>(accepted), static_cast<long long>(drafted), statistic, dof,
              chi_square_critical(dof));
  EXPECT_LT(statistic, chi_square_critical(dof)) << exact.size() << " outcomes, " << kRuns << " runs";
  EXPECT_GT(accepted, kRuns / 4);  // drafts taken in many runs and refused in many
  EXPECT_LT(accepted, drafted - kRuns / 4);
}

TEST_F(DraftModelTest, GreedyEqualsPlainGreedyWithRoPE) {
  const auto target = testing::tiny_llama(512);
  expect_same_tokens(*target, *draft_of(*target, 0.2f));
}

TEST_F(DraftModelTest, GreedyEqualsPlainGreedyWithLearnedPositions) {
  const auto target = testing::tiny_gpt2(512);
  expect_same_tokens(*target, *draft_of(*target, 0.2f));
}

// 88 prompt tokens and 256 new ones in 128 positions: the target's context shifts several times
// (RoPE keys moved; learned positions re-encoded) and the draft's cache follows it.
TEST_F(DraftModelTest, GreedyEqualsPlainGreedyAcrossContextShifts) {
  const auto llama = testing::tiny_llama(512);
  expect_same_tokens(*llama, *draft_of(*llama, 0.2f), 128);
  const auto gpt2 = testing::tiny_gpt2(512);
  expect_same_tokens(*gpt2, *draft_of(*gpt2, 0.2f), 128);
}

TEST_F(DraftModelTest, GreedyEqualsPlainGreedyWithAQ8Cache) {
  const auto target = testing::tiny_llama(512, /*head_dim=*/32);
  expect_same_tokens(*target, *draft_of(*target, 0.2f), 0, QuantType::q8_0);
}

// --draft-p-min's confidence is llama.cpp's: the top token's share of the softmax over the 10
// largest logits (its draft sampler's top-k 10), masked tokens (-inf) counting for nothing.
TEST_F(DraftModelTest, TheConfidenceIsTheTopTokensShareOfTheTenLargestLogits) {
  std::vector<float> logits(40, -std::numeric_limits<float>::infinity());
  for (int i = 0; i < 20; ++i) logits[static_cast<size_t>((7 * i) % 40)] = static_cast<float>(i) - 5.0f;  // -5 .. 14
  double sum = 0;
  for (int j = 0; j < 10; ++j) sum += std::exp(-j);  // 14, 13, .. 5 against 14
  EXPECT_NEAR(draft_confidence(logits), 1.0 / sum, 1e-6);
  const std::vector<float> three{-std::numeric_limits<float>::infinity(), 2.0f, 0.0f, 1.0f};
  EXPECT_NEAR(draft_confidence(three), 1.0 / (1.0 + std::exp(-1.0) + std::exp(-2.0)), 1e-6);
  EXPECT_EQ(draft_confidence(std::vector<float>{3.0f}), 1.0f);
}

// With --draft-p-min a draft ends before a token the draft is less sure of: greedy still gives
// plain greedy's tokens, fewer tokens are drafted, and more of those drafted are taken (the point
// of it); at 1 nothing is sure enough and nothing is drafted.
TEST_F(DraftModelTest, APMinDraftsOnlyWhatTheDraftIsSureOf) {
  const auto target = testing::tiny_llama(512);
  const auto draft = draft_of(*target, 0.2f);
  const StopCriteria stop{.max_new_tokens = 256};
  const std::vector<int64_t> prompt = repeating_prompt(*target);
  const auto run = [&](double p_min) {
    const SpeculativeConfig speculative{.draft_max = 4, .draft_model = draft.get(), .draft_cost = 0, .draft_p_min = p_min};
    return generate(*target, prompt, {.temperature = 0}, stop, speculative).result;
  };
  const GenerationResult plain = generate(*target, prompt, {.temperature = 0}, stop, {}).result;
  const GenerationResult all = run(0), sure = run(kSureEnough), none = run(1);
  EXPECT_EQ(sure.tokens, plain.tokens);
  EXPECT_EQ(none.tokens, plain.tokens);
  EXPECT_EQ(none.draft_tokens, 0);
  EXPECT_GT(sure.accepted_tokens, 0);
  EXPECT_LT(sure.draft_tokens, all.draft_tokens);
  EXPECT_GT(sure.acceptance_rate(), all.acceptance_rate());
  std::printf("[ p_min    ] %lld of %lld drafted tokens taken; without: %lld of %lld\n",
              static_cast<long long>(sure.accepted_tokens), static_cast<long long>(sure.draft_tokens),
              static_cast<long long>(all.accepted_tokens), static_cast<long long>(all.draft_tokens));
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

// Under a grammar the draft proposes only allowed tokens (the constraint advanced along it and
// restored): every drafted token is allowed where it would go (checked on a copy of the
// constraint), and greedy with drafts equals plain greedy.
TEST_F(DraftModelTest, AGrammarConstrainedRunEqualsThePlainOne) {
  const auto target = testing::tiny_llama(512);
  target->eval();
  const auto draft = draft_of(*target, 0.2f);
  const auto trie = std::make_shared<const grammar::TokenTrie>(letters());
  const auto grammar =
      std::make_shared<const grammar::Grammar>(grammar::compile_gbnf("root ::= ([a-f] [A-D] | \"x\" [0-3] [a-c])+"));
  const std::vector<int64_t> prompt = repeating_prompt(*target);
  const StopCriteria stop{.max_new_tokens = 200};
  grammar::GrammarConstraint plain_constraint(grammar, trie, {kVocab - 1});
  const Outcome plain = generate(*target, prompt, {.temperature = 0}, stop, {}, 0, QuantType::f32, &plain_constraint);
  ASSERT_EQ(plain.result.tokens.size(), 200u);

  grammar::GrammarConstraint constraint(grammar, trie, {kVocab - 1});
  CachedSequence sequence(*target);
  Sampler sampler({.temperature = 0});
  DecodeStream stream(sequence, sampler, stop, prompt, &constraint, {}, {.draft_max = 4, .draft_model = draft.get(), .draft_cost = 0});
  stream.prefill(prompt);
  int64_t checked = 0;
  while (stream.running()) {  // decode_step's work, with each draft checked before it is verified
    const std::vector<int64_t> d = stream.draft();
    grammar::GrammarConstraint probe = constraint;  // where the output is now
    for (const int64_t id : d) {
      ASSERT_TRUE(probe.allowed(id)) << "drafted token " << id << " after " << checked << " checked";
      probe.accept(id);
      ++checked;
    }
    std::vector<int64_t> ids{stream.generated().back()};
    ids.insert(ids.end(), d.begin(), d.end());
    const Tensor logits = sequence.feed(ids, !d.empty()).to(DType::f32).contiguous();
    if (d.empty()) stream.accept({logits.data<float>(), static_cast<size_t>(kVocab)});
    else stream.verify(d, {logits.data<float>(), static_cast<size_t>(logits.numel())});
  }
  EXPECT_EQ(stream.generated(), plain.result.tokens);
  EXPECT_EQ(sequence.tokens(), plain.cached);
  EXPECT_GT(checked, 20);
  EXPECT_GT(stream.accepted(), 0);
  EXPECT_LT(stream.accepted(), stream.drafted());
}

// Streams drafting together (their draft-model forwards batched, their drafts of several lengths)
// each get the tokens they get alone with plain greedy decoding; one ends early at an end id.
TEST_F(DraftModelTest, StreamsTogetherGetTheirPlainTokens) {
  const auto target = testing::tiny_llama(512);
  target->eval();
  const auto draft = draft_of(*target, 0.2f);
  std::vector<std::vector<int64_t>> prompts;
  for (int i = 0; i < 5; ++i) {
    std::vector<int64_t> p = repeating_prompt(*target);
    p.resize(p.size() - static_cast<size_t>(3 * i));
    prompts.push_back(p);
  }
  std::vector<StopCriteria> stops(prompts.size(), StopCriteria{.max_new_tokens = 96});
  std::vector<std::vector<int64_t>> want;
  for (size_t i = 0; i < prompts.size(); ++i) {
    if (i == 1) stops[i].eos_ids = {generate(*target, prompts[i], {.temperature = 0}, stops[i], {}).result.tokens.at(40)};
    want.push_back(generate(*target, prompts[i], {.temperature = 0}, stops[i], {}).result.tokens);
  }
  std::deque<CachedSequence> sequences;
  std::deque<Sampler> samplers;
  std::deque<DecodeStream> streams;
  std::vector<DecodeStream*> all;
  for (size_t i = 0; i < prompts.size(); ++i) {
    sequences.emplace_back(*target);
    samplers.emplace_back(SamplerConfig{.temperature = 0});
    streams.emplace_back(sequences.back(), samplers.back(), stops[i], prompts[i], nullptr, StreamCallbacks{},
                         SpeculativeConfig{.draft_max = 3, .draft_model = draft.get(), .draft_cost = 0});
    streams.back().prefill(prompts[i]);
    all.push_back(&streams.back());
  }
  decode(all);
  int64_t accepted = 0, drafted = 0;
  for (size_t i = 0; i < prompts.size(); ++i) {
    EXPECT_EQ(streams[i].generated(), want[i]) << "stream " << i;
    accepted += streams[i].accepted(), drafted += streams[i].drafted();
  }
  EXPECT_LT(want[1].size(), 96u);
  EXPECT_GT(accepted, 0);
  EXPECT_LT(accepted, drafted);
}

TEST_F(DraftModelTest, TheErrorsNameTheModels) {
  const auto target = testing::tiny_llama(64);
  models::DecoderLMConfig c = target->config();
  c.vocab_size = 80;
  Generator gen(2);
  const models::DecoderLM wide(c, gen);
  const auto message = [](auto&& f) {
    try {
      f();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(message([&] { check_draft_model(*target, "big.gguf", wide, "small.gguf", 64); })
                .find("--draft small.gguf has a vocabulary of 80 tokens but the model big.gguf has 64"),
            std::string::npos);
  c.vocab_size = 64, c.max_seq_len = 32;
  const models::DecoderLM short_context(c, gen);
  EXPECT_NE(message([&] { check_draft_model(*target, "big.gguf", short_context, "small.gguf", 64); })
                .find("--draft small.gguf: its max_seq_len 32 is shorter than the context 64 of big.gguf"),
            std::string::npos);
  EXPECT_NE(message([&] { SpeculativeConfig{.lookup_ngram = 2, .draft_model = target.get()}.validate(); })
                .find("--draft and --lookup-ngram 2 are two ways to draft: give one"),
            std::string::npos);
}

// The first draft after a prefill feeds the draft model one token: the prefill fed it the prompt.
TEST_F(DraftModelTest, ThePrefillFeedsTheDraftModelThePrompt) {
  const auto target = testing::tiny_llama(256);
  const auto draft = draft_of(*target);
  const std::vector<int64_t> prompt = repeating_prompt(*target);
  CachedSequence target_sequence(*target), draft_sequence(*draft, target_sequence.max_len());
  Sampler sampler({.temperature = 0});
  DecodeStream stream(target_sequence, sampler, {.max_new_tokens = 8}, prompt, nullptr, {},
                      {.draft_max = 3, .draft_model = draft.get(), .draft_cost = 0}, &draft_sequence);
  stream.prefill(prompt);
  EXPECT_EQ(draft_sequence.tokens(), prompt);
  const std::vector<int64_t> guess = stream.draft();
  ASSERT_FALSE(guess.empty());
  std::vector<int64_t> fed = prompt;  // the token after the prompt, then the draft but its last token
  fed.push_back(stream.generated().back());
  fed.insert(fed.end(), guess.begin(), guess.end() - 1);
  EXPECT_EQ(draft_sequence.tokens(), fed);
}

// A probe (a window given) that finds the draft model further behind than the window feeds it the
// window's tokens afresh, and later drafts follow the context from there; a catch-up within the
// window, or without one, is fed as it is.
TEST_F(DraftModelTest, AProbeCatchesTheDraftModelUpOnTheLastWindowOfTokens) {
  const auto target = testing::tiny_llama(256);
  const auto draft = draft_of(*target);
  CachedSequence target_sequence(*target);
  ModelDraft d(*draft, nullptr, target_sequence);
  std::vector<int64_t> context;
  for (int64_t i = 0; i < 100; ++i) context.push_back((i * 5 + 1) % kVocab);
  d.prefill({context.begin(), context.begin() + 40});
  EXPECT_EQ(d.sequence().tokens(), std::vector<int64_t>(context.begin(), context.begin() + 40));
  EXPECT_EQ(d.begin({context.begin(), context.begin() + 60}, 1, 32),
            std::vector<int64_t>(context.begin() + 40, context.begin() + 60));  // 20 behind: fed as it is
  std::vector<int64_t> feed = d.begin(context, 1, 32);  // 60 behind
  EXPECT_EQ(feed, std::vector<int64_t>(context.end() - 32, context.end()));
  EXPECT_TRUE(d.sequence().tokens().empty());
  d.sequence().feed(feed);
  for (int64_t i = 0; i < 50; ++i) context.push_back(i % kVocab);
  EXPECT_EQ(d.begin(context, 1), std::vector<int64_t>(context.end() - 50, context.end()));  // no window: all 50
  feed = d.begin(context, 1, 32);  // 50 behind the window's start again
  EXPECT_EQ(feed, std::vector<int64_t>(context.end() - 32, context.end()));
}

}  // namespace
}  // namespace nf::infer
