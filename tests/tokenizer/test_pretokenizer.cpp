// UTF-8 decoding, Unicode classes, the byte-level alphabet and the GPT-2 / GPT-4 split patterns.
#include <gtest/gtest.h>

#include <set>

#include "fixtures.h"
#include "nanoformer/tokenizer/byte_level.h"
#include "nanoformer/tokenizer/pretokenizer.h"
#include "nanoformer/tokenizer/unicode.h"

namespace nf::tokenizer {
namespace {

std::vector<std::string> split(std::string_view text, SplitPattern p) {
  std::vector<std::string> out;
  for_each_piece(text, p, [&](std::string_view w) { out.emplace_back(w); });
  return out;
}

unicode::CodePoint decode(std::string_view s) {
  return unicode::decode_utf8(reinterpret_cast<const unsigned char*>(s.data()), s.size());
}

TEST(Unicode, DecodesValidSequences) {
  EXPECT_EQ(decode("a").value, 'a');
  EXPECT_EQ(decode("é").value, 0xE9u);
  EXPECT_EQ(decode("中").value, 0x4E2Du);
  EXPECT_EQ(decode("中").length, 3u);
  EXPECT_EQ(decode("🦙").value, 0x1F999u);
  EXPECT_EQ(decode("🦙").length, 4u);
}

TEST(Unicode, RejectsInvalidSequencesOneByteAtATime) {
  for (std::string bad : {"\xC0\x80", "\xED\xA0\x80", "\xF4\x90\x80\x80", "\xE4\xB8", "\x80", "\xFF", "\xF0\x9F\x98"}) {
    const unicode::CodePoint cp = decode(bad);
    EXPECT_EQ(cp.value, unicode::kInvalid) << bad;
    EXPECT_EQ(cp.length, 1u);
  }
}

TEST(Unicode, ClassifiesLettersNumbersSpaces) {
  using namespace unicode;
  EXPECT_EQ(classify('a') & kLetter, kLetter);
  EXPECT_EQ(classify(0x4E2D) & kLetter, kLetter);  // 中
  EXPECT_EQ(classify(0x0663) & kNumber, kNumber);  // Arabic-Indic 3
  EXPECT_EQ(classify(0x00BD) & kNumber, kNumber);  // ½ (No)
  EXPECT_EQ(classify(0x216B) & kNumber, kNumber);  // Ⅻ (Nl)
  const auto regex_classes = [](uint32_t cp) { return classify(cp) & (kLetter | kNumber | kSpace | kWord); };
  EXPECT_EQ(regex_classes(0x3000), kSpace);
  EXPECT_EQ(regex_classes(0x0085), kSpace);
  EXPECT_EQ(regex_classes(0x001C), 0);      // not White_Space, although Python's isspace() says so
  EXPECT_EQ(regex_classes(0x0301), kWord);  // combining acute: \w but not \p{L}
  EXPECT_EQ(regex_classes('_'), kWord);
  EXPECT_EQ(regex_classes(0x1F999), 0);  // emoji: "other"
  EXPECT_EQ(classify(unicode::kInvalid), 0);
}

TEST(Unicode, ClassifiesBertCategories) {
  using namespace unicode;
  for (uint32_t cp : {uint32_t{'!'}, uint32_t{'_'}, uint32_t{'@'}, 0x00BFu, 0x3002u, 0x2014u, 0xFF01u})
    EXPECT_TRUE(classify(cp) & kPunctuation) << cp;
  for (uint32_t cp : {uint32_t{'$'}, uint32_t{'+'}, uint32_t{'^'}, uint32_t{'a'}, 0x00A2u})  // symbols, letters
    EXPECT_FALSE(classify(cp) & kPunctuation) << cp;
  for (uint32_t cp : {0x00u, 0x07u, 0x09u, 0x7Fu, 0x00ADu, 0x200Bu, 0xFEFFu, 0xE000u})  // Cc Cf Co
    EXPECT_TRUE(classify(cp) & kOther) << cp;
  EXPECT_FALSE(classify(' ') & kOther);
  EXPECT_FALSE(classify(0x0378) & kOther);  // unassigned (Cn): HF's BERT normalizer keeps it
  EXPECT_EQ(classify(0x0301) & kNonspacingMark, kNonspacingMark);
  EXPECT_EQ(classify(0x0903) & kNonspacingMark, 0);  // Devanagari visarga is Mc
}

TEST(Unicode, DecomposesAndLowercasesLikePython) {
  using namespace unicode;
  std::u32string s;
  append_nfd(0x00E9, s);  // é
  EXPECT_EQ(s, U"e\u0301");
  s.clear();
  append_nfd(0x1E69, s);  // ṩ: s + dot below + dot above, recursively
  EXPECT_EQ(s, U"s\u0323\u0307");
  s.clear();
  append_nfd(0xD55C, s);  // 한 (Hangul LVT)
  EXPECT_EQ(s, U"\u1112\u1161\u11AB");
  s = U"a\u0307\u0323";  // dot above (230) after dot below (220)
  canonical_order(s);
  EXPECT_EQ(s, U"a\u0323\u0307");
  s.clear();
  append_lowercase(0x0130, s);  // İ -> i + combining dot above
  append_lowercase(0x03A3, s);  // Σ -> σ (one code point at a time: no final-sigma rule)
  append_lowercase('Q', s);
  append_lowercase(0x4E2D, s);
  EXPECT_EQ(s, U"i\u0307\u03C3q\u4E2D");
}

TEST(ByteLevel, AlphabetIsABijectionOfPrintableCharacters) {
  std::set<char32_t> seen;
  for (int b = 0; b < 256; ++b) {
    const char32_t c = byte_level::byte_to_char(static_cast<uint8_t>(b));
    EXPECT_TRUE(seen.insert(c).second);
    EXPECT_EQ(byte_level::char_to_byte(c), b);
  }
  EXPECT_EQ(byte_level::byte_to_char(' '), U'\u0120');   // Ġ
  EXPECT_EQ(byte_level::byte_to_char('\n'), U'\u010A');  // Ċ
  EXPECT_EQ(byte_level::byte_to_char('A'), U'A');
  EXPECT_EQ(byte_level::encode(" hi"), "\xC4\xA0hi");
}

TEST(ByteLevel, EncodeDecodeRoundTripsAnyBytes) {
  const std::string bytes = testing::random_bytes(7, 4096);
  EXPECT_EQ(byte_level::decode(byte_level::encode(bytes)), bytes);
  EXPECT_FALSE(byte_level::decode("has space").has_value());     // ' ' is not in the alphabet
  EXPECT_FALSE(byte_level::decode("\xE4\xB8\xAD").has_value());  // 中 is not either
}

TEST(Gpt2Pattern, SplitsWordsWithTheirLeadingSpace) {
  const auto p = SplitPattern::kGpt2;
  EXPECT_EQ(split("Hello world", p), (std::vector<std::string>{"Hello", " world"}));
  EXPECT_EQ(split("Hello, world!", p), (std::vector<std::string>{"Hello", ",", " world", "!"}));
  EXPECT_EQ(split("I'm it's we'LL", p), (std::vector<std::string>{"I", "'m", " it", "'s", " we", "'", "LL"}));
  EXPECT_EQ(split("abc123 456", p), (std::vector<std::string>{"abc", "123", " 456"}));
  EXPECT_EQ(split("a ½ b", p), (std::vector<std::string>{"a", " ½", " b"}));
}

TEST(Gpt2Pattern, WhitespaceRunsGiveBackTheirLastSpace) {
  const auto p = SplitPattern::kGpt2;
  EXPECT_EQ(split("a   b", p), (std::vector<std::string>{"a", "  ", " b"}));
  EXPECT_EQ(split("a   ", p), (std::vector<std::string>{"a", "   "}));
  EXPECT_EQ(split("\n\nx", p), (std::vector<std::string>{"\n", "\n", "x"}));
  EXPECT_EQ(split("x\xC2\xA0\xC2\xA0y", p), (std::vector<std::string>{"x", "\xC2\xA0", "\xC2\xA0", "y"}));
  EXPECT_EQ(split(" \t!", p), (std::vector<std::string>{" ", "\t", "!"}));
}

TEST(Gpt2Pattern, InvalidBytesArePunctuation) {
  EXPECT_EQ(split("\xFF\xFE abc\x80", SplitPattern::kGpt2), (std::vector<std::string>{"\xFF\xFE", " abc", "\x80"}));
}

TEST(Gpt4Pattern, SplitsNumbersInThreesAndKeepsNewlines) {
  const auto p = SplitPattern::kGpt4;
  EXPECT_EQ(split("Hello 1234567 world", p), (std::vector<std::string>{"Hello", " ", "123", "456", "7", " world"}));
  EXPECT_EQ(split("\n\n  x", p), (std::vector<std::string>{"\n\n", " ", " x"}));
  EXPECT_EQ(split("(hello)", p), (std::vector<std::string>{"(hello", ")"}));
  EXPECT_EQ(split("a...\n\nb", p), (std::vector<std::string>{"a", "...\n\n", "b"}));
  EXPECT_EQ(split(" \t\n x", p), (std::vector<std::string>{" \t\n", " x"}));
}

TEST(Gpt4Pattern, ContractionsIgnoreCase) {
  const auto p = SplitPattern::kGpt4;
  EXPECT_EQ(split("HE'S we'Ll", p), (std::vector<std::string>{"HE", "'S", " we", "'Ll"}));
  EXPECT_EQ(split("x'\xC5\xBF", p), (std::vector<std::string>{"x", "'\xC5\xBF"}));  // 'ſ folds to 's
}

// Qwen2's tokenizer.json regex, as Python's `regex` module splits (findall) these texts.
TEST(Qwen2Pattern, SplitsNumbersOneDigitAPiece) {
  const auto p = SplitPattern::kQwen2;
  EXPECT_EQ(split("Hello 1234567 world", p), (std::vector<std::string>{"Hello", " ", "1", "2", "3", "4", "5", "6", "7", " world"}));
  EXPECT_EQ(split("x=3.14\n\n  y", p), (std::vector<std::string>{"x", "=", "3", ".", "1", "4", "\n\n", " ", " y"}));
  EXPECT_EQ(split("HE'S \xC2\xBD 42", p), (std::vector<std::string>{"HE", "'S", " ", "\xC2\xBD", " ", "4", "2"}));  // ½ is \p{N}
}

TEST(Patterns, PiecesCoverAnyByteString) {
  for (SplitPattern p : {SplitPattern::kGpt2, SplitPattern::kGpt4, SplitPattern::kQwen2, SplitPattern::kNone}) {
    for (uint64_t seed = 1; seed <= 20; ++seed) {
      const std::string text = testing::random_bytes(seed, 997);
      std::string joined;
      for_each_piece(text, p, [&](std::string_view w) {
        EXPECT_FALSE(w.empty());
        joined += w;
      });
      EXPECT_EQ(joined, text);
    }
  }
}

TEST(Patterns, NamesAndRegexesRoundTrip) {
  for (SplitPattern p : {SplitPattern::kGpt2, SplitPattern::kGpt4, SplitPattern::kQwen2, SplitPattern::kNone})
    EXPECT_EQ(pattern_from_name(pattern_name(p)), p);
  EXPECT_EQ(pattern_from_regex(pattern_regex(SplitPattern::kQwen2)), SplitPattern::kQwen2);
  EXPECT_EQ(pattern_from_regex(pattern_regex(SplitPattern::kGpt2)), SplitPattern::kGpt2);
  EXPECT_EQ(pattern_from_regex(pattern_regex(SplitPattern::kGpt4)), SplitPattern::kGpt4);
  EXPECT_FALSE(pattern_from_regex("\\w+").has_value());
  EXPECT_FALSE(pattern_from_name("bert").has_value());
}

}  // namespace
}  // namespace nf::tokenizer
