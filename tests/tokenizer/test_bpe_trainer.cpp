// BPE training: the same merges as Hugging Face's trainer on the committed corpus, determinism,
// special tokens, and argument errors.
#include <gtest/gtest.h>

#include "fixtures.h"
#include "nanoformer/core/error.h"
#include "nanoformer/tokenizer/bpe_trainer.h"
#include "nanoformer/tokenizer/tokenizer_json.h"

namespace nf::tokenizer {
namespace {

using testing::fixture;

BpeTrainerOptions options(size_t vocab_size, SplitPattern pattern = SplitPattern::kGpt2) {
  BpeTrainerOptions o;
  o.vocab_size = vocab_size;
  o.special_tokens = {"<|endoftext|>", "<|im_start|>", "<|im_end|>"};
  o.pattern = pattern;
  return o;
}

class HfTrainerParity : public ::testing::TestWithParam<std::pair<const char*, SplitPattern>> {};

TEST_P(HfTrainerParity, SameVocabularyAndMergesAsHuggingFace) {
  const auto [name, pattern] = GetParam();
  const BpeTokenizer hf = load_tokenizer_json(fixture(name));
  const BpeTokenizer ours = train_bpe_from_files({fixture("corpus.txt")}, options(600, pattern));
  ASSERT_EQ(ours.model().size(), 600u);
  for (TokenId id = 0; id < 600; ++id) EXPECT_EQ(ours.model().spelling(id), hf.model().spelling(id)) << "id " << id;
  EXPECT_EQ(ours.model().merges(), hf.model().merges());
  EXPECT_EQ(ours.pre_tokenizer().pattern, pattern);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, HfTrainerParity,
                         ::testing::Values(std::make_pair("hf_gpt2.json", SplitPattern::kGpt2),
                                           std::make_pair("hf_gpt4.json", SplitPattern::kGpt4)));

TEST(BpeTrainer, IsDeterministicAcrossThreadCounts) {
  std::string text;  // over 2 MB, so that word counting is split across threads
  while (text.size() < (5 << 19)) text += read_file(fixture("corpus.txt"));
  BpeTrainerOptions one = options(500), two = options(500);
  one.threads = 1;
  two.threads = 2;
  EXPECT_EQ(tokenizer_to_json(train_bpe_from_text(text, one)), tokenizer_to_json(train_bpe_from_text(text, two)));
}

TEST(BpeTrainer, SpecialTokensAreReservedAndNotLearnedFrom) {
  std::string text;
  for (int i = 0; i < 50; ++i) text += "hello world<|endoftext|>";
  const BpeTokenizer tok = train_bpe_from_text(text, options(300));
  EXPECT_EQ(tok.token_id("<|endoftext|>"), TokenId{0});
  EXPECT_EQ(tok.token_id("<|im_end|>"), TokenId{2});
  for (TokenId id = 3; id < tok.model().size(); ++id)
    EXPECT_EQ(tok.model().bytes(id).find("<|"), std::string::npos) << "token " << id << " learned from a special token";
  const auto ids = tok.encode("hello world<|endoftext|>");
  EXPECT_EQ(ids.back(), 0u);
  EXPECT_EQ(tok.decode(ids), "hello world<|endoftext|>");
}

TEST(BpeTrainer, StopsAtTheVocabularySizeOrWhenPairsRunOut) {
  const std::string text = read_file(fixture("corpus.txt"));
  EXPECT_EQ(train_bpe_from_text(text, options(259)).model().merges().size(), 0u);  // 3 special + 256 bytes
  const BpeTokenizer tiny = train_bpe_from_text("abababab", options(10000));
  EXPECT_LT(tiny.model().size(), 300u);  // only a handful of pairs exist
  BpeTrainerOptions frequent = options(10000);
  frequent.min_frequency = 20;
  const size_t merges = train_bpe_from_text(text, frequent).model().merges().size();
  EXPECT_GT(merges, 0u);
  EXPECT_LT(merges, train_bpe_from_text(text, options(10000)).model().merges().size());
}

TEST(BpeTrainer, TrainedTokenizerRoundTripsAnyBytes) {
  const BpeTokenizer tok = train_bpe_from_text(read_file(fixture("corpus.txt")), options(400));
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    const std::string bytes = testing::random_bytes(seed, 300);
    EXPECT_EQ(tok.decode(tok.encode(bytes)), bytes);
  }
}

TEST(BpeTrainer, BadArgumentsAreRefused) {
  EXPECT_THROW((void)train_bpe_from_text("abc", options(100)), Error);  // below 3 + 256
  BpeTrainerOptions empty_special = options(300);
  empty_special.special_tokens.push_back("");
  EXPECT_THROW((void)train_bpe_from_text("abc", empty_special), Error);
  try {
    (void)train_bpe_from_files({"/nonexistent/corpus.txt"}, options(300));
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/corpus.txt"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace nf::tokenizer
