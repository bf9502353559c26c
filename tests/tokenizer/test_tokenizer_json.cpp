// tokenizer.json: saving and reloading, the accepted variants, and clear errors for malformed
// files and unsupported features.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "fixtures.h"
#include "nanoformer/core/error.h"
#include "nanoformer/tokenizer/tokenizer_json.h"
#include "support/testing.h"

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
  // 601 entries (ids 0..599 and 604) and 5 added tokens (0, 1, 2 also in the vocabulary; 600,
  // 601): ids 602 and 603 are unused. Ids may leave gaps but stay below entries + added tokens.
  j["model"]["vocab"]["gap-token"] = 604;
  const BpeTokenizer tok = tokenizer_from_json(j.dump());
  EXPECT_EQ(tok.vocab_size(), 605u);
  const std::vector<TokenId> gap{603};
  try {
    (void)tok.decode(gap);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("token id 603 has no token"), std::string::npos) << e.what();
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

// Found by fuzzing (issue 13): an id far beyond the vocabulary sized the token tables by itself
// (2^31 entries, 80 GiB) and ended in std::bad_alloc. Ids are checked against the number of
// entries plus added tokens before anything is allocated.
TEST(TokenizerJson, IdsBeyondTheVocabularySizeAreRefusedBeforeAllocating) {
  json j = fixture_json();
  j["model"]["vocab"]["big"] = 2147483647;
  expect_error(j.dump(), {"bad.json", "model.vocab['big']", "2147483647",
                          "ids must be below 606 (601 vocabulary entries + 5 added tokens)"});

  j = fixture_json();
  j["model"]["vocab"]["gap-token"] = 606;  // one past entries + added tokens
  expect_error(j.dump(), {"model.vocab['gap-token']", "606"});

  j = fixture_json();
  j["added_tokens"].push_back({{"id", 2147483647}, {"content", "<big>"}, {"special", true}});
  expect_error(j.dump(), {"bad.json", "added_tokens[5].id", "2147483647"});

  // The smallest files the campaign found: no vocabulary besides the one token.
  const std::string pipeline =
      R"("pre_tokenizer":{"type":"ByteLevel","add_prefix_space":false},"decoder":{"type":"ByteLevel"},)";
  expect_error("{" + pipeline + R"("model":{"vocab":{"a":2147483647},"merges":[]}})", {"model.vocab['a']", "2147483647"});
  expect_error("{" + pipeline + R"("model":{"vocab":{},"merges":[]},"added_tokens":[{"id":2147483647,"content":"x"}]})",
               {"added_tokens[0].id", "2147483647"});
}

// The same check guards tokenizers built in code.
TEST(TokenizerJson, AddedTokenIdsBeyondTheVocabularySizeAreRefusedInCode) {
  const BpeTokenizer tok = load_tokenizer_json(fixture("hf_gpt2.json"));
  std::vector<AddedToken> added = tok.added().tokens();
  added.push_back({.id = 2147483647, .content = "<big>"});
  EXPECT_THROW_WITH(BpeTokenizer(tok.model(), added, tok.pre_tokenizer()), "added token '<big>'", "2147483647");
}

// Found by fuzzing (issue 13): error messages printed the offending value with a recursive dump,
// so 80,000 nested '[' in a merge, a Split pattern, a vocab value or an added token's id
// overflowed the stack. Nesting beyond any real file is refused, and messages stay short.
TEST(TokenizerJson, DeepNestingIsRefusedWithoutRecursion) {
  const std::string deep = std::string(100'000, '[') + std::string(100'000, ']');
  const json base = fixture_json();
  const auto replace_value = [](json j, const json::json_pointer& where, const std::string& raw) {
    j[where] = "@@MARK@@";
    std::string s = j.dump();
    s.replace(s.find("\"@@MARK@@\""), 10, raw);
    return s;
  };
  expect_error(replace_value(base, json::json_pointer("/model/merges/0"), deep), {"bad.json", "nest"});
  expect_error(replace_value(base, json::json_pointer("/model/vocab/Ġhe"), deep), {"bad.json", "nest"});
  expect_error(replace_value(base, json::json_pointer("/added_tokens/0/id"), deep), {"bad.json", "nest"});
  const json gpt4 = fixture_json("hf_gpt4.json");
  expect_error(replace_value(gpt4, json::json_pointer("/pre_tokenizer/pretokenizers/0/pattern"), "{\"String\":" + deep + "}"),
               {"bad.json", "nest"});
}

TEST(TokenizerJson, ErrorMessagesQuoteABoundedExcerptOfTheValue) {
  const auto expect_short_error = [](const json& j, const std::string& path) {
    try {
      (void)tokenizer_from_json(j.dump(), "bad.json");
      ADD_FAILURE() << "loaded without an error; expected one about " << path;
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(path), std::string::npos) << what;
      EXPECT_LT(what.size(), 400u) << what;
    }
  };
  json j = fixture_json();
  j["model"]["merges"][0] = json::array({std::string(100'000, 'x'), "b", "c"});
  expect_short_error(j, "model.merges[0]");
  j = fixture_json();
  j["model"]["vocab"]["Ġhe"] = json::array({json::array({json::array({std::string(100'000, 'y')})})});
  expect_short_error(j, "model.vocab['Ġhe']");
  j = fixture_json();
  j["model"]["vocab"][std::string(100'000, 'k')] = -1;
  expect_short_error(j, "model.vocab['kkk");
}

// Found by fuzzing (issue 13): the 5-byte file "1e400" escaped as nlohmann::json::out_of_range.
TEST(TokenizerJson, NumbersOutOfRangeAreAnErrorNamingTheFile) {
  expect_error("1e400", {"bad.json", "not valid JSON"});
  expect_error(R"({"model":{"vocab":{"a":1e400}}})", {"bad.json", "not valid JSON"});
  json j = fixture_json();
  j["model"]["vocab"]["Ġhe"] = 1e300;
  expect_error(j.dump(), {"model.vocab['Ġhe']", "1e+300"});
}

}  // namespace
}  // namespace nf::tokenizer
