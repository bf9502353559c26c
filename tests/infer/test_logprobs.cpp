// The log-probabilities reported with a token (infer/logprobs.h): log softmax in f64 of the raw
// logits, over the ids below vocab_limit; the top ids most likely first, ties to the lower id.
#include "nanoformer/infer/logprobs.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "support/testing.h"

namespace nf::infer {
namespace {

TEST(TokenLogprobs, EqualLogSoftmaxAndListTheMostLikelyFirst) {
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 4.0f);
  std::vector<float> logits(300);
  for (float& x : logits) x = normal(rng) + 50.0f;  // large offsets: the max is subtracted first
  logits[17] = logits[42] = 80.0f;                  // a tie at the top
  double sum = 0;
  for (const float x : logits) sum += std::exp(static_cast<double>(x) - 80.0);
  const auto expected = [&](int64_t i) { return static_cast<double>(logits[static_cast<size_t>(i)]) - 80.0 - std::log(sum); };
  const TokenLogprobs t = token_logprobs(logits, 0, 7, 5);
  EXPECT_EQ(t.id, 7);
  EXPECT_NEAR(t.logprob, expected(7), 1e-5 * std::abs(expected(7)) + 1e-6);
  ASSERT_EQ(t.top.size(), 5u);
  EXPECT_EQ(t.top[0].first, 17);
  EXPECT_EQ(t.top[1].first, 42);
  for (size_t i = 0; i < t.top.size(); ++i) {
    EXPECT_NEAR(t.top[i].second, expected(t.top[i].first), 1e-5);
    if (i > 0) {
      EXPECT_GE(t.top[i - 1].second, t.top[i].second);
    }
  }
  double total = 0;  // the probabilities add up to one
  for (int64_t i = 0; i < 300; ++i) total += std::exp(static_cast<double>(token_logprobs(logits, 0, i, 0).logprob));
  EXPECT_NEAR(total, 1.0, 1e-5);
}

TEST(TokenLogprobs, IdsPastTheVocabLimitAreNotInTheDistribution) {
  const std::vector<float> logits{1.0f, 2.0f, 3.0f, 100.0f};  // a padded row: the last id is not the tokenizer's
  const TokenLogprobs t = token_logprobs(logits, 3, 2, 10);
  const double log_sum = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0));
  EXPECT_NEAR(t.logprob, 3.0 - log_sum, 1e-6);
  ASSERT_EQ(t.top.size(), 3u);
  EXPECT_EQ(t.top[0].first, 2);
  EXPECT_EQ(t.top[2].first, 0);
  EXPECT_THROW(token_logprobs(logits, 3, 3, 0), Error);
  EXPECT_THROW(token_logprobs(logits, 0, 0, -1), Error);
}

}  // namespace
}  // namespace nf::infer
