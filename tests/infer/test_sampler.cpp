// The sampler: exact candidate sets of top-k / top-p / min-p on hand-made distributions, Hugging
// Face's logits processors on random logits (tests/golden/sampling.safetensors, written by
// tools/golden/fixtures_sampling.py), draw frequencies against the kept distribution, seeds.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "nanoformer/core/parallel.h"
#include "nanoformer/infer/sampler.h"
#include "support/golden.h"
#include "support/testing.h"

namespace nf::infer {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// The ids a transform leaves finite.
std::set<int64_t> kept(std::vector<float> logits, const std::function<void(std::span<float>)>& transform) {
  transform(logits);
  std::set<int64_t> out;
  for (size_t i = 0; i < logits.size(); ++i)
    if (logits[i] != -kInf) out.insert(static_cast<int64_t>(i));
  return out;
}

// Logits whose softmax is exactly proportional to `weights`.
std::vector<float> logits_of(const std::vector<double>& weights) {
  std::vector<float> out;
  for (double w : weights) out.push_back(static_cast<float>(std::log(w)));
  return out;
}

TEST(TopK, KeepsTheKLargestAndEveryTieOfTheKth) {
  const std::vector<float> x{1, 3, 2, 3, 0, -1};
  EXPECT_EQ(kept(x, [](auto l) { apply_top_k(l, 1); }), (std::set<int64_t>{1, 3}));  // both maxima
  EXPECT_EQ(kept(x, [](auto l) { apply_top_k(l, 2); }), (std::set<int64_t>{1, 3}));
  EXPECT_EQ(kept(x, [](auto l) { apply_top_k(l, 3); }), (std::set<int64_t>{1, 2, 3}));
  EXPECT_EQ(kept(x, [](auto l) { apply_top_k(l, 4); }), (std::set<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(kept(x, [](auto l) { apply_top_k(l, 6); }).size(), 6u);
  EXPECT_EQ(kept(x, [](auto l) { apply_top_k(l, 0); }).size(), 6u);  // off
}

TEST(TopP, KeepsTheSmallestSetWhoseProbabilityReachesP) {
  const auto x = logits_of({0.1, 0.4, 0.2, 0.3});
  EXPECT_EQ(kept(x, [](auto l) { apply_top_p(l, 0.3); }), (std::set<int64_t>{1}));
  EXPECT_EQ(kept(x, [](auto l) { apply_top_p(l, 0.65); }), (std::set<int64_t>{1, 3}));
  EXPECT_EQ(kept(x, [](auto l) { apply_top_p(l, 0.71); }), (std::set<int64_t>{1, 2, 3}));
  EXPECT_EQ(kept(x, [](auto l) { apply_top_p(l, 0.95); }), (std::set<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(kept(x, [](auto l) { apply_top_p(l, 1e-6); }), (std::set<int64_t>{1}));  // never empty
  EXPECT_EQ(kept(x, [](auto l) { apply_top_p(l, 1.0); }).size(), 4u);                // off
}

// Four equal logits: p = 0.25 exactly. HF sorts ascending (stable: the lower id first) and
// removes c_j <= 1 - p, so a set that reaches p exactly stops there and ties keep the higher ids.
TEST(TopP, BoundaryAndTiesAsHuggingFace) {
  const std::vector<float> uniform(4, 0.0f);
  EXPECT_EQ(kept(uniform, [](auto l) { apply_top_p(l, 0.5); }), (std::set<int64_t>{2, 3}));
  EXPECT_EQ(kept(uniform, [](auto l) { apply_top_p(l, 0.75); }), (std::set<int64_t>{1, 2, 3}));
  EXPECT_EQ(kept(uniform, [](auto l) { apply_top_p(l, 0.76); }), (std::set<int64_t>{0, 1, 2, 3}));
  // transformers: TopPLogitsWarper(0.3) on [0, 1, 1, 0, 1, 0, 0, 1] keeps ids 4 and 7.
  EXPECT_EQ(kept({0, 1, 1, 0, 1, 0, 0, 1}, [](auto l) { apply_top_p(l, 0.3); }), (std::set<int64_t>{4, 7}));
  // Tokens already removed (-inf) never come back.
  EXPECT_EQ(kept({0, -kInf, 0, 0}, [](auto l) { apply_top_p(l, 0.99); }), (std::set<int64_t>{0, 2, 3}));
}

TEST(TopP, LargeVocabularyWalksPastThePartialSort) {
  std::vector<float> x(5000);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(std::sin(0.37 * double(i)) * 0.01);  // nearly flat
  const auto keep = kept(x, [](auto l) { apply_top_p(l, 0.9); });
  EXPECT_GT(keep.size(), 4000u);
  EXPECT_LT(keep.size(), 4600u);
  float lowest_kept = kInf, highest_removed = -kInf;
  for (size_t i = 0; i < x.size(); ++i)
    (keep.count(static_cast<int64_t>(i)) ? lowest_kept : highest_removed) =
        keep.count(static_cast<int64_t>(i)) ? std::min(lowest_kept, x[i]) : std::max(highest_removed, x[i]);
  EXPECT_GE(lowest_kept, highest_removed);  // the kept set is a top set
}

TEST(MinP, KeepsTokensWithAtLeastMinPTimesTheLargestProbability) {
  const auto x = logits_of({1.0, 0.5, 0.29, 0.31, 0.05});
  EXPECT_EQ(kept(x, [](auto l) { apply_min_p(l, 0.3); }), (std::set<int64_t>{0, 1, 3}));
  EXPECT_EQ(kept(x, [](auto l) { apply_min_p(l, 0.04); }).size(), 5u);
  EXPECT_EQ(kept(x, [](auto l) { apply_min_p(l, 0.6); }), (std::set<int64_t>{0}));
  EXPECT_EQ(kept(x, [](auto l) { apply_min_p(l, 1.0); }), (std::set<int64_t>{0}));
  EXPECT_EQ(kept({2, 2, 1}, [](auto l) { apply_min_p(l, 1.0); }), (std::set<int64_t>{0, 1}));  // ties of the max
}

TEST(RepetitionPenalty, DividesPositiveAndMultipliesNegativeLogitsOncePerToken) {
  std::vector<float> x{2, -2, 1, 0.5f};
  const std::vector<int64_t> tokens{0, 1, 1, 0, 1};
  apply_repetition_penalty(x, tokens, 2.0);
  EXPECT_EQ(x, (std::vector<float>{1, -4, 1, 0.5f}));
  EXPECT_THROW_WITH(apply_repetition_penalty(x, std::vector<int64_t>{7}, 1.5), "token id 7", "vocabulary");
}

TEST(Temperature, DividesTheLogits) {
  std::vector<float> x{2, -1};
  apply_temperature(x, 0.5);
  EXPECT_EQ(x, (std::vector<float>{4, -2}));
}

TEST(Greedy, ArgmaxWithTheLowestIdOnTiesAfterThePenalty) {
  EXPECT_EQ(argmax(std::vector<float>{1, 3, 3, 0}), 1);
  Sampler greedy({.temperature = 0});
  EXPECT_EQ(greedy.next(std::vector<float>{1, 3, 3, 0}, {}), 1);
  Sampler penalised({.temperature = 0, .top_k = 1, .repetition_penalty = 1.1});
  EXPECT_EQ(penalised.next(std::vector<float>{3, 2.9f}, std::vector<int64_t>{0}), 1);  // 3 / 1.1 < 2.9
}

// OpenAI's penalties: x_t - c_t * frequency - (c_t > 0) * presence, c_t counted over the tokens
// generated only; the prompt's tokens are not penalised.
TEST(Sampler, FrequencyAndPresencePenaltiesCountTheGeneratedTokensOnly) {
  std::vector<float> x{1.0f, 2.0f, 3.0f, 4.0f};
  apply_frequency_presence_penalties(x, std::vector<int64_t>{2, 0, 2}, 0.25, 0.5);
  EXPECT_EQ(x, (std::vector<float>{1.0f - 0.25f - 0.5f, 2.0f, 3.0f - 0.5f - 0.5f, 4.0f}));
  std::vector<float> negative{1.0f, 2.0f};
  apply_frequency_presence_penalties(negative, std::vector<int64_t>{1}, -1.0, -0.5);  // negative: encouraged
  EXPECT_EQ(negative, (std::vector<float>{1.0f, 3.5f}));
  EXPECT_THROW_WITH(apply_frequency_presence_penalties(negative, std::vector<int64_t>{2}, 0.1, 0), "token id 2");

  // tokens {prompt 0, generated 1}: with one generated only id 1 is penalised
  const std::vector<int64_t> tokens{0, 1};
  const SamplerConfig config{.temperature = 0, .presence_penalty = 0.5};
  std::vector<float> row{3.0f, 2.9f, 2.8f};
  process_logits(row, tokens, config, 1);
  EXPECT_EQ(row, (std::vector<float>{3.0f, 2.4f, 2.8f}));
  Sampler greedy({.temperature = 0, .presence_penalty = 0.5});
  EXPECT_EQ(greedy.next(std::vector<float>{3.0f, 2.9f, 2.8f}, tokens, 0), 0);  // prompt only: nothing penalised
  EXPECT_EQ(greedy.next(std::vector<float>{3.0f, 2.9f, 2.8f}, tokens, 1), 0);  // 2.4 < 3
  EXPECT_EQ(greedy.next(std::vector<float>{3.0f, 2.9f, 2.8f}, tokens, 2), 2);  // 2.5, 2.4 < 2.8
  EXPECT_THROW_WITH(greedy.next(std::vector<float>{3.0f, 2.9f, 2.8f}, tokens, 3), "3 tokens generated of a sequence of 2");
}

// Every case of the fixture, row by row, against what transformers computed.
TEST(SamplerGolden, MatchesHuggingFaceLogitsProcessors) {
  const testing::Golden golden("sampling");
  int checked = 0;
  for (const auto& [name, params] : golden.cases().items()) {
    const Tensor logits = golden.get(name, "logits"), ids = golden.get(name, "input_ids");
    const Tensor out = golden.get(name, "out");
    const int64_t rows = logits.size(0), vocab = logits.size(1), history = ids.size(1);
    const auto x = logits.to_vector<float>(), expected = out.to_vector<float>();
    const auto tokens = ids.to_vector<int64_t>();
    const std::string kind = params["kind"];
    SamplerConfig config{.temperature = params.value("temperature", 1.0), .top_k = params.value("top_k", int64_t{0}),
                         .top_p = params.value("top_p", 1.0), .min_p = params.value("min_p", 0.0),
                         .repetition_penalty = params.value(kind == "chain" ? "repetition_penalty" : "penalty", 1.0)};
    for (int64_t r = 0; r < rows; ++r) {
      std::vector<float> row(x.begin() + r * vocab, x.begin() + (r + 1) * vocab);
      const std::span<const int64_t> seen(tokens.data() + r * history, static_cast<size_t>(history));
      if (kind == "chain") process_logits(row, seen, config);
      else if (kind == "repetition_penalty") apply_repetition_penalty(row, seen, config.repetition_penalty);
      else if (kind == "temperature") apply_temperature(row, config.temperature);
      else if (kind == "top_k") apply_top_k(row, config.top_k);
      else if (kind == "top_p") apply_top_p(row, config.top_p);
      else if (kind == "min_p") apply_min_p(row, config.min_p);
      else FAIL() << "unknown kind " << kind;
      for (int64_t i = 0; i < vocab; ++i) {
        const float want = expected[static_cast<size_t>(r * vocab + i)], got = row[static_cast<size_t>(i)];
        if (std::isinf(want)) EXPECT_EQ(got, want) << name << " row " << r << " token " << i << " should be removed";
        else EXPECT_NEAR(got, want, 1e-6) << name << " row " << r << " token " << i;
      }
    }
    ++checked;
  }
  EXPECT_EQ(checked, 18);
}

// Pearson's chi-square of `draws` samples against the kept distribution; a sampler that draws a
// removed token, or from the wrong distribution, fails.
TEST(Sampler, FrequenciesMatchTheKeptDistribution) {
  const std::vector<float> logits{2.0f, 1.5f, 1.4f, 0.3f, -0.2f, 0.9f, -3.0f, 1.0f, 0.0f, -1.0f};
  const SamplerConfig config{.temperature = 0.9, .top_k = 7, .top_p = 0.95, .min_p = 0.05, .seed = 42};
  std::vector<float> processed = logits;
  process_logits(processed, {}, config);
  double total = 0;
  std::vector<double> p(logits.size());
  for (size_t i = 0; i < p.size(); ++i) total += p[i] = std::isinf(processed[i]) ? 0.0 : std::exp(double(processed[i]));
  int kept_count = 0;
  for (double& v : p) kept_count += (v /= total) > 0;
  ASSERT_EQ(kept_count, 6);  // top-7 drops 6 and 9 and 4; top-p 0.95 then drops 8

  Sampler sampler(config);
  const int draws = 20000;
  std::vector<int> counts(logits.size(), 0);
  for (int n = 0; n < draws; ++n) ++counts[static_cast<size_t>(sampler.next(logits, {}))];
  double chi2 = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] == 0) {
      EXPECT_EQ(counts[i], 0) << "token " << i << " was removed";
      continue;
    }
    const double expected = draws * p[i];
    chi2 += (counts[i] - expected) * (counts[i] - expected) / expected;
  }
  EXPECT_LT(chi2, 25.7) << "5 degrees of freedom: P(chi2 > 25.7) = 1e-4";
}

TEST(Sampler, SameSeedSameTokensWhateverTheThreadCount) {
  const std::vector<float> logits{0.5f, 0.1f, 0.4f, 0.2f, 0.3f, 0.0f};
  const auto run = [&](uint64_t seed, int threads) {
    set_num_threads(threads);
    Sampler sampler({.temperature = 1.3, .top_p = 0.9, .seed = seed});
    std::vector<int64_t> out;
    for (int n = 0; n < 64; ++n) out.push_back(sampler.next(logits, out));
    return out;
  };
  const int threads = num_threads();
  const auto a = run(7, 1), b = run(7, 2), c = run(8, 1);
  set_num_threads(threads);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
}

// A batch takes one counter per row in row order: the same tokens as the rows one by one.
TEST(Sampler, BatchOfRowsEqualsRowsOneByOne) {
  const std::vector<double> values{0.3, 0.1, 0.2, 0.9, 0.0, -0.5, 1.2, 0.4, 0.7, 0.1, -0.2, 0.3};
  const Tensor logits = Tensor::of(values, {3, 4});
  const std::vector<std::vector<int64_t>> tokens{{0, 3}, {1, 2}, {2, 3}};
  const SamplerConfig config{.temperature = 2.0, .repetition_penalty = 1.3, .presence_penalty = 0.7, .seed = 5};
  Sampler batched(config), single(config);
  for (int step = 0; step < 20; ++step) {
    const auto rows = batched.next(logits, tokens, 1);
    const auto x = logits.to_vector<float>();
    for (size_t b = 0; b < 3; ++b)
      EXPECT_EQ(rows[b], single.next(std::span<const float>(x.data() + 4 * b, 4), tokens[b], 1)) << "step " << step;
  }
  EXPECT_THROW_WITH(batched.next(logits, std::span(tokens).first(2)), "3 rows of logits but 2 token sequences");
}

// A model's vocabulary padded beyond its tokenizer's: the padded ids are never drawn, greedy or
// sampled, even when they carry by far the largest logits.
TEST(Sampler, NeverDrawsIdsAtOrAboveTheVocabLimit) {
  const std::vector<float> logits{0.5f, 0.2f, 0.1f, 0.3f, 9.0f, 8.0f};  // ids 4, 5: padding
  EXPECT_EQ(kept(logits, [](auto l) { apply_vocab_limit(l, 4); }), (std::set<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(kept(logits, [](auto l) { apply_vocab_limit(l, 0); }).size(), 6u);  // off
  EXPECT_EQ(kept(logits, [](auto l) { apply_vocab_limit(l, 9); }).size(), 6u);  // covers the row
  Sampler greedy({.temperature = 0, .vocab_limit = 4});
  EXPECT_EQ(greedy.next(logits, {}), 0);
  for (const SamplerConfig& config : {SamplerConfig{.temperature = 1.0, .seed = 3, .vocab_limit = 4},
                                     SamplerConfig{.temperature = 2.0, .top_k = 3, .top_p = 0.99, .seed = 4, .vocab_limit = 4},
                                     SamplerConfig{.temperature = 1.5, .repetition_penalty = 1.2, .seed = 5, .vocab_limit = 4}}) {
    Sampler sampler(config);
    std::set<int64_t> drawn;
    for (int i = 0; i < 400; ++i) drawn.insert(sampler.next(logits, std::vector<int64_t>{0, 1}));
    EXPECT_EQ(*drawn.rbegin(), 3) << "temperature " << config.temperature;  // id 3 drawn, none above it
  }
  EXPECT_THROW_WITH(Sampler({.vocab_limit = -1}), "vocab_limit -1");
}

TEST(SamplerConfig, RejectsValuesOutOfRangeNamingTheFlag) {
  EXPECT_THROW_WITH(Sampler({.temperature = -0.5}), "--temperature -0.5", ">= 0");
  EXPECT_THROW_WITH(Sampler({.top_k = -1}), "--top-k -1", ">= 0");
  EXPECT_THROW_WITH(Sampler({.top_p = 0}), "--top-p 0", "(0, 1]");
  EXPECT_THROW_WITH(Sampler({.top_p = 1.5}), "--top-p 1.5", "(0, 1]");
  EXPECT_THROW_WITH(Sampler({.min_p = -0.1}), "--min-p -0.1", "[0, 1]");
  EXPECT_THROW_WITH(Sampler({.min_p = 2}), "--min-p 2", "[0, 1]");
  EXPECT_THROW_WITH(Sampler({.repetition_penalty = 0}), "--repetition-penalty 0", "> 0");
  EXPECT_THROW_WITH(Sampler({.frequency_penalty = 2.5}), "--frequency-penalty 2.5", "[-2, 2]");
  EXPECT_THROW_WITH(Sampler({.presence_penalty = -3}), "--presence-penalty -3", "[-2, 2]");
  EXPECT_THROW_WITH(Sampler({.temperature = std::nan("")}), "--temperature nan");
  Sampler ok({.temperature = 0.7, .top_k = 40, .top_p = 1, .min_p = 1, .repetition_penalty = 1.1});
  EXPECT_THROW_WITH(ok.next(std::vector<float>{-kInf, -kInf}, {}), "no token has a finite logit");
}

}  // namespace
}  // namespace nf::infer
