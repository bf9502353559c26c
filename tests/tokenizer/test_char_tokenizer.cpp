// The character-level tokenizer.
#include <gtest/gtest.h>

#include <cstdio>

#include "fixtures.h"
#include "nanoformer/core/error.h"
#include "nanoformer/tokenizer/char_tokenizer.h"

namespace nf::tokenizer {
namespace {

TEST(CharTokenizer, OneIdPerCharacterInCodePointOrder) {
  const CharTokenizer tok = CharTokenizer::train("hello 世界\n");
  EXPECT_EQ(tok.vocab_size(), 8u);  // \n, ' ', e, h, l, o, 世, 界
  const auto ids = tok.encode("hello");
  EXPECT_EQ(ids, (std::vector<TokenId>{3, 2, 4, 4, 5}));
  EXPECT_EQ(tok.encode("世界"), (std::vector<TokenId>{6, 7}));
  EXPECT_EQ(tok.decode(tok.encode("hello 世界\n")), "hello 世界\n");
  EXPECT_EQ(tok.token_id("世"), TokenId{6});
  EXPECT_FALSE(tok.token_id("世界").has_value());
}

TEST(CharTokenizer, InvalidBytesAreCharactersToo) {
  const std::string text = "ab\xFF\xE4\xB8 c";
  const CharTokenizer tok = CharTokenizer::train(text);
  EXPECT_EQ(tok.decode(tok.encode(text)), text);
}

TEST(CharTokenizer, UnknownCharacterIsNamed) {
  const CharTokenizer tok = CharTokenizer::train("abc");
  try {
    (void)tok.encode("ab€");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("U+20AC"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("byte 2"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)tok.token_bytes(3), Error);
}

TEST(CharTokenizer, SavesAndLoadsThroughTheGenericLoader) {
  const CharTokenizer tok = CharTokenizer::train(read_file(testing::fixture("corpus.txt")));
  const std::string path = testing::temp_path("char_vocab.json");
  tok.save(path);
  const auto loaded = load_tokenizer(path);
  EXPECT_EQ(loaded->kind(), "char");
  EXPECT_EQ(loaded->vocab_size(), tok.vocab_size());
  const std::string text = "The quick brown fox 机器学习 🦙";
  EXPECT_EQ(loaded->encode(text), tok.encode(text));
  std::remove(path.c_str());
}

TEST(CharTokenizer, MalformedVocabularyIsRefused) {
  EXPECT_THROW((void)CharTokenizer::from_json(R"({"type": "nanoformer-char", "version": 1, "code_points": [97, 97]})"),
               Error);
  EXPECT_THROW((void)CharTokenizer::from_json(R"({"type": "nanoformer-char", "version": 1, "code_points": [55296]})"),
               Error);
  EXPECT_THROW((void)CharTokenizer::from_json(R"({"type": "nanoformer-char", "version": 2, "code_points": []})"),
               Error);
  EXPECT_THROW((void)CharTokenizer::from_json(R"({"type": "nanoformer-char", "version": 1, "code_po)"), Error);
}

}  // namespace
}  // namespace nf::tokenizer
