// The character-level tokenizer.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "fixtures.h"
#include "nanoformer/core/error.h"
#include "nanoformer/tokenizer/char_tokenizer.h"
#include "support/testing.h"

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

// Found by fuzzing (issue 13): numbers that are not exact integers in range were converted with
// undefined behaviour (1e10 into uint32_t) or silently truncated (true as 1, 65.7 as 65, 1.9 as 1).
TEST(CharTokenizer, VocabularyNumbersMustBeExactIntegersInRange) {
  const auto load = [](const std::string& version, const std::string& code_points) {
    return CharTokenizer::from_json(
        R"({"type":"nanoformer-char","version":)" + version + R"(,"code_points":)" + code_points + "}", "v.json");
  };
  EXPECT_THROW_WITH(load("1", "[1e10]"), "v.json", "code_points[0]", "10000000000.0");
  EXPECT_THROW_WITH(load("1", "[true, 65.7]"), "v.json", "code_points[0]", "true");
  EXPECT_THROW_WITH(load("1", "[65.7]"), "v.json", "code_points[0]", "65.7");
  EXPECT_THROW_WITH(load("1", "[65, -1]"), "v.json", "code_points[1]", "-1");
  EXPECT_THROW_WITH(load("1", "[4294967296]"), "v.json", "code_points[0]", "4294967296");
  EXPECT_THROW_WITH(load("1", R"(["A"])"), "v.json", "code_points[0]", "\"A\"");
  EXPECT_THROW_WITH(load("1e10", "[65]"), "v.json", "version", "10000000000.0");
  EXPECT_THROW_WITH(load("1.9", "[65]"), "v.json", "version", "1.9");
  EXPECT_THROW_WITH(load("true", "[65]"), "v.json", "version", "true");
  EXPECT_EQ(load("1", "[65, 1114112, 1114367]").characters(), (std::vector<uint32_t>{65, 0x110000, 0x1100FF}));
}

// Found by fuzzing (issue 13): a "type" that is not a string escaped as nlohmann::json::type_error.
TEST(CharTokenizer, GenericLoaderRefusesAFileWhoseTypeIsNotAString) {
  const std::string path = testing::temp_path("type_not_string.json");
  for (const char* text : {R"({"type":1,"x":"nanoformer-char"})", R"({"type":["nanoformer-char"]})",
                           R"({"type":"nanoformer-char","version":1,"code_points":{"a":1}})"}) {
    {
      std::ofstream f(path, std::ios::binary);
      f << text;
    }
    EXPECT_THROW_WITH(load_tokenizer(path), path) << text;
  }
  EXPECT_THROW_WITH(CharTokenizer::from_json(R"({"type":1})", "v.json"), "v.json", "not a character vocabulary");
  std::remove(path.c_str());
}

}  // namespace
}  // namespace nf::tokenizer
