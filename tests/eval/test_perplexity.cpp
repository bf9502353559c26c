// evaluate_perplexity: windows and budget, the loss against a computation by hand from the
// model's logits, independence from the batching, and its errors.
#include "nanoformer/eval/perplexity.h"

#include <cmath>

#include "support/lm_loss_by_hand.h"
#include "support/testing.h"

namespace nf::eval {
namespace {

using data::TokenCorpus;
using tokenizer::TokenId;

class PerplexityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    models::DecoderLMConfig c;
    c.vocab_size = 23;
    c.dim = 16;
    c.n_layers = 2;
    c.n_heads = 2;
    c.max_seq_len = 16;
    c.position = nn::PositionKind::rope;
    c.norm = nn::NormKind::rmsnorm;
    c.mlp = nn::MLPKind::swiglu;
    c.init_std = 0.3;  // logits far from uniform, so a wrong target or window shows
    Generator gen(7);
    model = std::make_shared<models::DecoderLM>(c, gen);
    for (int i = 0; i < 200; ++i) stream.push_back((i * 7 + (i / 5) * 3 + i * i % 11) % 23);
    corpus.add_ids("stream", std::vector<TokenId>(stream.begin(), stream.end()), 23);
  }
  std::shared_ptr<models::DecoderLM> model;
  std::vector<int64_t> stream;
  TokenCorpus corpus;
};

TEST_F(PerplexityTest, WindowCountFollowsStreamAndBudget) {
  EXPECT_EQ(perplexity_windows(200, 8, 0), 24);   // 199 targets / 8
  EXPECT_EQ(perplexity_windows(200, 8, 50), 6);   // 50 targets / 8
  EXPECT_EQ(perplexity_windows(200, 16, 50), 3);
  EXPECT_EQ(perplexity_windows(200, 8, 1000), 24);
  EXPECT_EQ(perplexity_windows(9, 8, 0), 1);
  EXPECT_EQ(perplexity_windows(8, 8, 0), 0);
  EXPECT_EQ(perplexity_windows(0, 8, 0), 0);
}

TEST_F(PerplexityTest, EqualsExpOfMeanTokenLossByHand) {
  const Perplexity p = evaluate_perplexity(*model, corpus, {.context = 8, .batch_tokens = 24});  // 3 windows per pass
  EXPECT_EQ(p.context, 8);
  EXPECT_EQ(p.windows, 24);
  EXPECT_EQ(p.tokens, 192);
  const double by_hand = testing::mean_token_loss_by_hand(*model, stream, 8, 24);
  EXPECT_NEAR(p.loss, by_hand, 1e-5 * by_hand);
  EXPECT_NEAR(p.perplexity, std::exp(by_hand), 1e-5 * std::exp(by_hand));
  EXPECT_GT(std::abs(p.loss - std::log(23.0)), 0.05);  // not a uniform model
}

TEST_F(PerplexityTest, BudgetScoresTheSameFirstTokensAtEveryContext) {
  const Perplexity short_windows = evaluate_perplexity(*model, corpus, {.context = 8, .max_tokens = 50});
  const Perplexity long_windows = evaluate_perplexity(*model, corpus, {.context = 16, .max_tokens = 50});
  EXPECT_EQ(short_windows.tokens, 48);
  EXPECT_EQ(long_windows.tokens, 48);
  EXPECT_NEAR(short_windows.loss, testing::mean_token_loss_by_hand(*model, stream, 8, 6), 1e-5);
  EXPECT_NEAR(long_windows.loss, testing::mean_token_loss_by_hand(*model, stream, 16, 3), 1e-5);
}

TEST_F(PerplexityTest, IndependentOfWindowsPerPass) {
  const Perplexity one = evaluate_perplexity(*model, corpus, {.context = 8, .batch_tokens = 1});
  const Perplexity all = evaluate_perplexity(*model, corpus, {.context = 8, .batch_tokens = 100000});
  EXPECT_NEAR(one.loss, all.loss, 1e-6);
}

TEST_F(PerplexityTest, ReportsProgressPerPass) {
  std::vector<int64_t> done;
  evaluate_perplexity(*model, corpus, {.context = 8, .batch_tokens = 80}, [&](int64_t d) { done.push_back(d); });
  EXPECT_EQ(done, (std::vector<int64_t>{10, 20, 24}));
}

TEST_F(PerplexityTest, TooShortAStreamIsAnError) {
  TokenCorpus tiny;
  tiny.add_ids("tiny.txt", {1, 2, 3, 4, 5}, 23);
  EXPECT_THROW_WITH(evaluate_perplexity(*model, tiny, {.context = 8}), "tiny.txt", "5 tokens", "context 8");
  EXPECT_THROW_WITH(evaluate_perplexity(*model, corpus, {.context = 8, .max_tokens = 7}), "budget 7", "context 8");
}

TEST_F(PerplexityTest, IdBeyondTheVocabularyIsAnError) {
  TokenCorpus wide;
  wide.add_ids("wide.bin", {1, 2, 3, 30, 4, 5, 6, 7, 8, 9}, 64);
  EXPECT_THROW_WITH(evaluate_perplexity(*model, wide, {.context = 8}), "wide.bin", "token 3", "id 30",
                    "vocabulary size 23");
}

}  // namespace
}  // namespace nf::eval
