// Byte-level BPE encoding and decoding: identical ids to Hugging Face tokenizers on the committed
// fixtures, exact round trips for any bytes, decoding errors (streaming: test_stream_decoder.cpp).
#include <gtest/gtest.h>

#include <thread>

#include "fixtures.h"
#include "nanoformer/core/error.h"
#include "nanoformer/tokenizer/tokenizer_json.h"

namespace nf::tokenizer {
namespace {

using testing::expected_ids;
using testing::fixture;
using testing::parity_texts;

class HfParity : public ::testing::TestWithParam<const char*> {};

TEST_P(HfParity, IdsMatchHuggingFace) {
  const std::string name = GetParam();
  const BpeTokenizer tok = load_tokenizer_json(fixture(name + ".json"));
  const auto texts = parity_texts();
  const auto expected = expected_ids(name + ".ids");
  ASSERT_EQ(texts.size(), expected.size());
  for (size_t i = 0; i < texts.size(); ++i)
    EXPECT_EQ(tok.encode(texts[i]), expected[i]) << "text " << i << ": " << texts[i];
}

INSTANTIATE_TEST_SUITE_P(Fixtures, HfParity, ::testing::Values("hf_gpt2", "hf_gpt4", "hf_prefix"));

TEST(BpeTokenizer, DecodeInvertsEncodeOnTextAndArbitraryBytes) {
  for (const char* name : {"hf_gpt2.json", "hf_gpt4.json"}) {
    const BpeTokenizer tok = load_tokenizer_json(fixture(name));
    for (const std::string& text : parity_texts()) {
      if (text.find("<tool>") == std::string::npos) {  // <tool> strips the spaces around it
        EXPECT_EQ(tok.decode(tok.encode(text)), text);
      }
    }
    for (uint64_t seed = 1; seed <= 30; ++seed) {
      const std::string bytes = testing::random_bytes(seed, 50 + 37 * seed);
      EXPECT_EQ(tok.decode(tok.encode(bytes)), bytes) << name << " seed " << seed;
    }
  }
}

TEST(BpeTokenizer, CachedAndUncachedEncodingsAgree) {
  const BpeTokenizer a = load_tokenizer_json(fixture("hf_gpt2.json"));
  const BpeTokenizer b = load_tokenizer_json(fixture("hf_gpt4.json"));
  const std::string text = read_file(fixture("corpus.txt"));
  const auto first_a = a.encode(text), first_b = b.encode(text);
  // Alternating between tokenizers in one thread must not mix their cached words.
  EXPECT_EQ(a.encode(text), first_a);
  EXPECT_EQ(b.encode(text), first_b);
  EXPECT_NE(first_a, first_b);
  // Word by word (no cache hits across calls) gives the same ids.
  std::vector<TokenId> piecewise;
  for_each_piece(text, SplitPattern::kGpt2, [&](std::string_view w) { a.model().encode_word(w, piecewise); });
  EXPECT_EQ(piecewise, first_a);
}

// The word cache's table doubles from 1,024 slots while half full and is emptied at 2^17 slots
// (65,536 words). 60,000 distinct words grow it through every size, then come again (hits in the
// largest table); 150,000 more empty it twice, and their last 1,000 come again (hits after an
// emptying). Every id equals encoding word by word.
TEST(BpeTokenizer, CachedEncodingsAgreeAsTheCacheGrowsAndEmpties) {
  const BpeTokenizer tok = load_tokenizer_json(fixture("hf_gpt2.json"));
  const auto words = [](int from, int to) {
    std::string text;
    for (int i = from; i < to; ++i) {
      text += ' ';
      for (int v = i; v > 0 || text.back() == ' '; v /= 22) text += static_cast<char>('d' + v % 22);  // no "cat": an added token
    }
    return text;
  };
  const std::string text = words(0, 60000) + words(0, 60000) + words(60000, 210000) + words(209000, 210000);
  std::vector<TokenId> piecewise;
  for_each_piece(text, SplitPattern::kGpt2, [&](std::string_view w) { tok.model().encode_word(w, piecewise); });
  EXPECT_EQ(tok.encode(text), piecewise);
}

TEST(BpeTokenizer, ThreadsShareOneTokenizer) {
  const BpeTokenizer tok = load_tokenizer_json(fixture("hf_gpt2.json"));
  const std::string text = read_file(fixture("corpus.txt"));
  const auto expected = tok.encode(text);
  std::vector<std::vector<TokenId>> got(4);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < got.size(); ++t) threads.emplace_back([&, t] { got[t] = tok.encode(text); });
  for (auto& th : threads) th.join();
  for (const auto& g : got) EXPECT_EQ(g, expected);
}

TEST(BpeTokenizer, SpecialTokensAreMatchedFirstAndNeverSplit) {
  const BpeTokenizer tok = load_tokenizer_json(fixture("hf_gpt2.json"));
  const TokenId eot = *tok.token_id("<|endoftext|>");
  EXPECT_EQ(eot, 0u);
  EXPECT_TRUE(tok.is_special(eot));
  const auto ids = tok.encode("a<|endoftext|>b");
  ASSERT_EQ(ids.size(), 3u);
  EXPECT_EQ(ids[1], eot);
  std::vector<TokenId> ordinary;
  tok.encode_ordinary("<|endoftext|>", ordinary);
  EXPECT_GT(ordinary.size(), 1u);
  EXPECT_EQ(tok.decode(ordinary), "<|endoftext|>");
  std::string skipped;
  tok.decode(ids, skipped, /*skip_special=*/true);
  EXPECT_EQ(skipped, "ab");
}

TEST(BpeTokenizer, LongWordsUseTheHeapPathWithTheSameResult) {
  const BpeTokenizer tok = load_tokenizer_json(fixture("hf_gpt2.json"));
  // Words over 64 bytes are merged with a heap instead of the quadratic scan; HF's ids for the
  // fixture texts with such words must still match.
  const auto texts = parity_texts();
  const auto expected = expected_ids("hf_gpt2.ids");
  for (size_t i = 0; i < texts.size(); ++i) {
    if (texts[i].size() > 64) {
      EXPECT_EQ(tok.encode(texts[i]), expected[i]) << texts[i];
    }
  }
}

TEST(BpeTokenizer, DecodeRejectsBadIds) {
  const BpeTokenizer tok = load_tokenizer_json(fixture("hf_gpt2.json"));
  const std::vector<TokenId> ids{5, 99999};
  try {
    (void)tok.decode(ids);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("token id 99999 is out of range"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)tok.token_bytes(static_cast<TokenId>(tok.vocab_size())), Error);
}

}  // namespace
}  // namespace nf::tokenizer
