// Generated ids to printed text: whole UTF-8 characters only (CJK and emoji split over GPT-2's
// byte-level tokens), invalid bytes as U+FFFD at the end only, stop strings never printed, the
// end-of-sequence id not printed, and the stop reason.
#include <gtest/gtest.h>

#include "nanoformer/infer/text_streamer.h"
#include "nanoformer/tokenizer/char_tokenizer.h"
#include "nanoformer/tokenizer/tokenizer_json.h"
#include "support/testing.h"
#include "tokenizer/fixtures.h"

namespace nf::infer {
namespace {

using tokenizer::TokenId;

// Streams ids until the streamer stops; returns every piece (finish() last).
std::vector<std::string> stream(TextStreamer& streamer, const std::vector<TokenId>& ids) {
  std::vector<std::string> pieces;
  for (TokenId id : ids) {
    if (streamer.stopped()) break;
    pieces.push_back(streamer.push(id));
  }
  pieces.push_back(streamer.finish());
  return pieces;
}

bool valid_utf8(std::string_view s) { return tokenizer::replace_invalid_utf8(s) == s; }

TEST(TextStreamer, CjkAndEmojiSplitOverByteLevelTokensPrintWhole) {
  const auto tok = tokenizer::load_tokenizer_json(tokenizer::testing::fixture("hf_gpt2.json"));
  const std::string text = "机器学习 🦙 and 👨‍👩‍👧 fin";
  TextStreamer streamer(tok, {.max_new_tokens = 1000});
  const auto pieces = stream(streamer, tok.encode(text));
  std::string joined;
  for (const std::string& p : pieces) {
    EXPECT_TRUE(valid_utf8(p)) << p;
    joined += p;
  }
  EXPECT_EQ(joined, text);
  EXPECT_EQ(streamer.text(), text);
  EXPECT_EQ(streamer.stop_reason(), StopReason::none);
}

TEST(TextStreamer, StopStringInsideACharacterSplitOverTokensIsNeverPrinted) {
  const auto tok = tokenizer::load_tokenizer_json(tokenizer::testing::fixture("hf_gpt2.json"));
  const auto ids = tok.encode("机器学习 🦙 more text");
  TextStreamer streamer(tok, {.stop_strings = {"🦙"}, .max_new_tokens = 1000});
  const auto pieces = stream(streamer, ids);
  for (const std::string& p : pieces) EXPECT_EQ(p.find("\xF0"), std::string::npos) << "printed part of the stop";
  EXPECT_EQ(streamer.text(), "机器学习 ");
  EXPECT_EQ(streamer.stop_reason(), StopReason::stop_string);
  EXPECT_LT(streamer.new_tokens(), static_cast<int64_t>(ids.size()));
}

TEST(TextStreamer, EndOfSequenceIdIsNotPrinted) {
  const auto tok = tokenizer::CharTokenizer::train("abc.");
  const auto eos = static_cast<int64_t>(*tok.token_id("."));
  TextStreamer streamer(tok, {.eos_ids = {eos}, .max_new_tokens = 10});
  const auto pieces = stream(streamer, tok.encode("ab.c"));
  EXPECT_EQ(pieces, (std::vector<std::string>{"a", "b", "", ""}));
  EXPECT_EQ(streamer.stop_reason(), StopReason::end_of_sequence);
  EXPECT_EQ(streamer.new_tokens(), 3);
  EXPECT_THROW_WITH(streamer.push(0), "already stopped", "end of sequence");
}

TEST(TextStreamer, MaxNewTokensAndAStopStringOverSeveralTokens) {
  const auto tok = tokenizer::CharTokenizer::train("helo wrd\n:User");
  TextStreamer capped(tok, {.max_new_tokens = 3});
  EXPECT_EQ(stream(capped, tok.encode("hello")), (std::vector<std::string>{"h", "e", "l", ""}));
  EXPECT_EQ(capped.stop_reason(), StopReason::max_new_tokens);

  TextStreamer stopped(tok, {.stop_strings = {"\nUser:"}, .max_new_tokens = 100});
  const auto pieces = stream(stopped, tok.encode("hello\nUse\nUser: world"));
  EXPECT_EQ(stopped.text(), "hello\nUse");
  EXPECT_EQ(stopped.stop_reason(), StopReason::stop_string);
  EXPECT_EQ(pieces[5], "");  // "\n" held back until "\nUse\n" shows it is not the stop string

  EXPECT_THROW_WITH(TextStreamer(tok, {.max_new_tokens = 0}), "--max-new-tokens 0", ">= 1");
}

TEST(TextStreamer, InvalidBytesBecomeReplacementCharactersOnlyWhenTheStreamEnds) {
  const auto tok = tokenizer::testing::byte_tokenizer({});
  TextStreamer streamer(tok, {.max_new_tokens = 10});
  EXPECT_EQ(streamer.push('a'), "a");
  EXPECT_EQ(streamer.push(0xE4), "");
  EXPECT_EQ(streamer.push(0xB8), "");
  EXPECT_EQ(streamer.finish(), "\xEF\xBF\xBD");
  EXPECT_EQ(streamer.text(), "a\xEF\xBF\xBD");
}

TEST(TextStreamer, RejectsAnIdOutsideTheVocabulary) {
  const auto tok = tokenizer::CharTokenizer::train("ab");
  TextStreamer streamer(tok, {});
  EXPECT_THROW_WITH(streamer.push(5), "5");
  TextStreamer negative(tok, {});
  EXPECT_THROW_WITH(negative.push(-1), "token id -1");
}

}  // namespace
}  // namespace nf::infer
