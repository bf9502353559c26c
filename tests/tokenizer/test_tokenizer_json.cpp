// tokenizer.json: saving and reloading, the accepted variants, and clear errors for malformed
// files and unsupported features.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "fixtures.h"
#include "nanoformer/core/error.h"
#include "nanoformer/tokenizer/tokenizer_json.h"

namespace nf::tokenizer {
namespace {

using nlohmann::json;
using testing::fixture;

json fixture_json(const char* name = "hf_gpt2.json") { return json::parse(read_file(fixture(name))); }

// Expects loading `text` to fail with a message containing every one of `parts`.
void expect_error(const std::string& text, std::initializer_list<std::string> parts) {
  try {
    (void)tokenizer_from_json(text, "bad.json");
    ADD_FAILURE() << "loaded without an error; expected: " << *parts.begin();
  } catch (const Error& e) {
    for (const std::string& p : parts) EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
  }
}

TEST(TokenizerJson, SaveThenLoadGivesTheSameTokenizer) {
  const BpeTokenizer tok = load_tokenizer_json(fixture("hf_gpt4.json"));
  const std::string path = testing::temp_path("roundtrip.json");
  tok.save(path);
  const auto loaded = load_tokenizer(path);
  ASSERT_EQ(loaded->kind(), "bpe");
  const auto& again = dynamic_cast<const BpeTokenizer&>(*loaded);
  EXPECT_EQ(tokenizer_to_json(again), tokenizer_to_json(tok));
  EXPECT_EQ(again.pre_tokenizer().pattern, SplitPattern::kGpt4);
  EXPECT_TRUE(again.model().options().ignore_merges);
  for (const std::string& text : testing::parity_texts()) EXPECT_EQ(again.encode(text), tok.encode(text));
  std::remove(path.c_str());
}

// HF writes merges as ["a", "b"] pairs since tokenizers 0.20, as "a b" strings before.
TEST(TokenizerJson, MergesInStringFormLoadLikePairs) {
  json j = fixture_json();
  json strings = json::array();
  for (const json& m : j["model"]["merges"]) strings.push_back(m[0].get<std::string>() + " " + m[1].get<std::string>());
  j["model"]["merges"] = strings;
  j["model"].erase("type");  // older files have no model type
  const BpeTokenizer a = tokenizer_from_json(j.dump());
  const BpeTokenizer b = load_tokenizer_json(fixture("hf_gpt2.json"));
  for (const std::string& text : testing::parity_texts()) EXPECT_EQ(a.encode(text), b.encode(text));
}

TEST(TokenizerJson, AcceptsTheTiktokenCl100kRegex) {
  json j = fixture_json("hf_gpt4.json");
  j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] =
      R"('(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+)";
  EXPECT_EQ(tokenizer_from_json(j.dump()).pre_tokenizer().pattern, SplitPattern::kGpt4);
}

TEST(TokenizerJson, MissingFileNamesThePath) {
  try {
    (void)load_tokenizer_json("/nonexistent/dir/tokenizer.json");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/dir/tokenizer.json"), std::string::npos) << e.what();
  }
}

TEST(TokenizerJson, TruncatedFileIsRefused) {
  const std::string text = read_file(fixture("hf_gpt2.json"));
  expect_error(text.substr(0, text.size() / 2), {"bad.json", "not valid JSON"});
  expect_error("", {"bad.json", "not valid JSON"});
  expect_error("[1, 2]", {"bad.json", "object"});
}

TEST(TokenizerJson, UnsupportedFeaturesAreNamed) {
  json j = fixture_json();
  j["model"]["type"] = "WordPiece";
  expect_error(j.dump(), {"model.type", "WordPiece"});

  j = fixture_json();
  j["normalizer"] = {{"type", "NFC"}};
  expect_error(j.dump(), {"normalizer", "NFC"});

  j = fixture_json();
  j["model"]["dropout"] = 0.1;
  expect_error(j.dump(), {"model.dropout"});

  j = fixture_json();
  j["model"]["byte_fallback"] = true;
  expect_error(j.dump(), {"byte_fallback"});

  j = fixture_json();
  j["model"]["continuing_subword_prefix"] = "##";
  expect_error(j.dump(), {"continuing_subword_prefix"});

  j = fixture_json();
  j["pre_tokenizer"] = {{"type", "Whitespace"}};
  expect_error(j.dump(), {"pre_tokenizer", "Whitespace"});

  j = fixture_json();
  j["pre_tokenizer"] = nullptr;
  expect_error(j.dump(), {"pre_tokenizer", "null"});

  j = fixture_json("hf_gpt4.json");
  j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "\\w+";
  expect_error(j.dump(), {"Regex", "\\\\w+"});

  j = fixture_json();
  j["decoder"] = {{"type", "WordPiece"}};
  expect_error(j.dump(), {"decoder", "WordPiece"});

  j = fixture_json();
  j["post_processor"] = {{"type", "TemplateProcessing"}};
  expect_error(j.dump(), {"post_processor", "TemplateProcessing"});

  j = fixture_json();
  j["truncation"] = {{"max_length", 512}};
  expect_error(j.dump(), {"truncation"});
}

TEST(TokenizerJson, InconsistentVocabularyIsRefused) {
  json j = fixture_json();
  // A merge whose result is not in the vocabulary (as in a corrupted GPT-2 file).
  j["model"]["merges"].push_back("< |");
  const std::string merge_rank = std::to_string(j["model"]["merges"].size() - 1);
  expect_error(j.dump(), {"merge " + merge_rank, "'<|' is not in the vocabulary"});

  j = fixture_json();
  j["model"]["merges"][0] = "a b c";
  expect_error(j.dump(), {"model.merges[0]", "a b c"});

  j = fixture_json();
  j["model"]["vocab"]["zzz-dup"] = 5;
  expect_error(j.dump(), {"id 5 is given to both"});

  j = fixture_json();
  j["model"]["vocab"]["neg"] = -3;
  expect_error(j.dump(), {"model.vocab['neg']", "-3"});

  j = fixture_json();
  j["added_tokens"][0]["id"] = 100;  // <|endoftext|> is id 0 in the vocabulary
  expect_error(j.dump(), {"added_tokens", "<|endoftext|>", "100"});

  j = fixture_json();
  j["added_tokens"][0].erase("content");
  expect_error(j.dump(), {"added_tokens[0].content", "missing"});

  j = fixture_json();
  j["model"].erase("vocab");
  expect_error(j.dump(), {"model.vocab", "missing"});
}

TEST(TokenizerJson, VocabularyGapsDecodeWithAnError) {
  json j = fixture_json();
  j["model"]["vocab"]["gap-token"] = 1000;  // ids 600..999 (but the added 600, 601) are unused
  const BpeTokenizer tok = tokenizer_from_json(j.dump());
  EXPECT_EQ(tok.vocab_size(), 1001u);
  const std::vector<TokenId> gap{700};
  try {
    (void)tok.decode(gap);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("token id 700 has no token"), std::string::npos) << e.what();
  }
}

TEST(TokenizerJson, SavedFileCanBeWrittenAndReadThroughTheGenericLoader) {
  const std::string path = testing::temp_path("generic.json");
  load_tokenizer_json(fixture("hf_prefix.json")).save(path);
  const auto tok = load_tokenizer(path);
  const auto texts = testing::parity_texts();
  const auto expected = testing::expected_ids("hf_prefix.ids");
  for (size_t i = 0; i < texts.size(); ++i) EXPECT_EQ(tok->encode(texts[i]), expected[i]);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace nf::tokenizer
