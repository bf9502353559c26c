// Streaming decode: a multi-byte character split over byte-level BPE tokens is held back until it
// is complete, invalid bytes are kept or become U+FFFD as Python's errors="replace" (Hugging
// Face's decode), and all outputs together equal decoding all ids at once.
#include <gtest/gtest.h>

#include "fixtures.h"
#include "nanoformer/core/error.h"
#include "nanoformer/tokenizer/char_tokenizer.h"
#include "nanoformer/tokenizer/stream_decoder.h"
#include "nanoformer/tokenizer/tokenizer_json.h"

namespace nf::tokenizer {
namespace {

using testing::byte_tokenizer;
using testing::bytes_of;
using testing::fixture;

const std::string kFFFD = "\xEF\xBF\xBD";

bool valid_utf8(std::string_view s) { return replace_invalid_utf8(s) == s; }

// Streams ids through `stream` and returns every piece it gave, flush() last.
std::vector<std::string> stream_all(StreamDecoder& stream, const std::vector<TokenId>& ids) {
  std::vector<std::string> pieces;
  for (TokenId id : ids) pieces.push_back(stream.push(id));
  pieces.push_back(stream.flush());
  return pieces;
}

std::string joined(const std::vector<std::string>& pieces) {
  std::string out;
  for (const std::string& p : pieces) out += p;
  return out;
}

TEST(StreamDecoder, NeverSplitsACharacterAndMatchesDecode) {
  const BpeTokenizer tok = load_tokenizer_json(fixture("hf_gpt2.json"));
  const std::string text = "机器学习 🦙 emoji 👨‍👩‍👧 and Привет\xFF done";
  const auto ids = tok.encode(text);
  StreamDecoder stream(tok);
  const auto pieces = stream_all(stream, ids);
  size_t held_back = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    EXPECT_EQ(complete_utf8_prefix(pieces[i]), pieces[i].size());
    held_back += pieces[i] != tok.token_bytes(ids[i]);
  }
  EXPECT_GT(held_back, 3u) << "the text should split characters over tokens";
  EXPECT_EQ(joined(pieces), text);
}

TEST(StreamDecoder, HoldsBackOnlyValidPrefixes) {
  EXPECT_EQ(complete_utf8_prefix("ab\xE4\xB8"), 2u);      // 中 missing its last byte
  EXPECT_EQ(complete_utf8_prefix("ab\xF0\x9F\xA6"), 2u);  // 🦙 missing its last byte
  EXPECT_EQ(complete_utf8_prefix("ab\xE4\xB8\xAD"), 5u);  // complete
  EXPECT_EQ(complete_utf8_prefix("ab\xFF"), 3u);          // never valid: emitted
  EXPECT_EQ(complete_utf8_prefix("ab\xE0\x80"), 4u);      // overlong prefix: never valid
  EXPECT_EQ(complete_utf8_prefix("\xC3"), 0u);
  EXPECT_EQ(complete_utf8_prefix(""), 0u);
}

// Expected values from Python: bytes.decode("utf-8", errors="replace").
TEST(ReplaceInvalidUtf8, OneReplacementPerMaximalSubpart) {
  EXPECT_EQ(replace_invalid_utf8("plain ascii"), "plain ascii");
  EXPECT_EQ(replace_invalid_utf8("\xC3\xA9\xE4\xB8\xAD\xF0\x9F\xA6\x99"), "\xC3\xA9\xE4\xB8\xAD\xF0\x9F\xA6\x99");
  EXPECT_EQ(replace_invalid_utf8("\xE0\x80" "A\xE4\xB8"), kFFFD + kFFFD + "A" + kFFFD);
  EXPECT_EQ(replace_invalid_utf8("\xED\xA0\x80"), kFFFD + kFFFD + kFFFD);  // a surrogate
  EXPECT_EQ(replace_invalid_utf8("\xF0\x9F\xA6" "A"), kFFFD + "A");        // 🦙 cut short
  EXPECT_EQ(replace_invalid_utf8("\xFF\xFE"), kFFFD + kFFFD);
  EXPECT_EQ(replace_invalid_utf8("\xF4\x90\x80\x80"), kFFFD + kFFFD + kFFFD + kFFFD);  // above U+10FFFF
  EXPECT_EQ(replace_invalid_utf8("\x80"), kFFFD);
  EXPECT_EQ(replace_invalid_utf8("\xE4\xB8\xAD\xE4"), "\xE4\xB8\xAD" + kFFFD);
}

TEST(StreamDecoder, ReplacesAnIncompleteCharacterOnlyAtTheEnd) {
  const BpeTokenizer tok = byte_tokenizer({});
  StreamDecoder stream(tok, InvalidUtf8::replace);
  EXPECT_EQ(stream.push(0xE4), "");
  EXPECT_EQ(stream.push(0xB8), "");  // 中 may still complete
  EXPECT_EQ(stream.push(0xAD), "\xE4\xB8\xAD");
  EXPECT_EQ(stream.push(0xFF), kFFFD);  // can never be valid: replaced at once
  EXPECT_EQ(stream.push('a'), "a");
  EXPECT_EQ(stream.push(0xF0), "");
  EXPECT_EQ(stream.push(0x9F), "");
  EXPECT_EQ(stream.flush(), kFFFD);  // the stream ended inside a character
  EXPECT_EQ(stream.flush(), "");
}

TEST(StreamDecoder, ReplaceModeEqualsReplacingTheWholeDecode) {
  const BpeTokenizer tok = byte_tokenizer({});
  for (uint64_t seed = 1; seed <= 50; ++seed) {
    const std::string bytes = testing::random_bytes(seed, 64) + "\xE4\xB8\xAD\xF0\x9F\xA6\x99" +
                              testing::random_bytes(seed + 100, 3);
    StreamDecoder stream(tok, InvalidUtf8::replace);
    const auto pieces = stream_all(stream, bytes_of(bytes));
    for (const std::string& p : pieces) EXPECT_TRUE(valid_utf8(p)) << "seed " << seed;
    EXPECT_EQ(joined(pieces), replace_invalid_utf8(bytes)) << "seed " << seed;
  }
}

TEST(StreamDecoder, ReplaceModeOnGpt2Tokens) {
  const BpeTokenizer tok = load_tokenizer_json(fixture("hf_gpt2.json"));
  const std::string text = "机器学习 🦙 emoji 👨‍👩‍👧 and Привет\xFF done \xF0\x9F";
  StreamDecoder stream(tok, InvalidUtf8::replace);
  const auto pieces = stream_all(stream, tok.encode(text));
  for (const std::string& p : pieces) EXPECT_TRUE(valid_utf8(p)) << p;
  EXPECT_EQ(pieces.back(), kFFFD);
  EXPECT_EQ(joined(pieces), "机器学习 🦙 emoji 👨‍👩‍👧 and Привет" + kFFFD + " done " + kFFFD);
}

TEST(StreamDecoder, CharTokenizerEmitsWholeCharacters) {
  const std::string text = "héllo 世界 🦙!";
  const CharTokenizer tok = CharTokenizer::train(text);
  StreamDecoder stream(tok, InvalidUtf8::replace);
  const auto ids = tok.encode(text);
  const auto pieces = stream_all(stream, ids);
  for (size_t i = 0; i < ids.size(); ++i) EXPECT_EQ(pieces[i], tok.token_bytes(ids[i]));
  EXPECT_EQ(joined(pieces), text);
}

TEST(StreamDecoder, RejectsAnUnknownId) {
  const BpeTokenizer tok = byte_tokenizer({});
  StreamDecoder stream(tok);
  EXPECT_THROW((void)stream.push(999), Error);
}

}  // namespace
}  // namespace nf::tokenizer
