// WordPiece (BERT) tokenizers: ids and decoded texts identical to Hugging Face tokenizers on the
// fixtures of tools/tokenizer/make_wordpiece_fixtures.py (all-MiniLM-L6-v2's tokenizer.json with
// several normalizer settings, and a small cased WordPiece trained by HF), save/reload, and
// errors naming the unsupported fields.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "fixtures.h"
#include "nanoformer/core/error.h"
#include "nanoformer/tokenizer/bert_normalizer.h"
#include "nanoformer/tokenizer/tokenizer_json.h"
#include "nanoformer/tokenizer/wordpiece_tokenizer.h"

namespace nf::tokenizer {
namespace {

using nlohmann::json;
using testing::fixture;
using testing::temp_path;

const json& cases() {
  static const json c = json::parse(read_file(fixture("wordpiece_cases.json")));
  return c;
}

// The variant's tokenizer.json: the fixture file with the variant's top-level fields replaced.
json variant_json(const json& variant) {
  json j = json::parse(read_file(fixture(variant["file"].get<std::string>())));
  for (const auto& [key, value] : variant["edits"].items()) j[key] = value;
  return j;
}

std::vector<std::string> texts() { return cases()["texts"].get<std::vector<std::string>>(); }

class WordPieceParity : public ::testing::TestWithParam<std::string> {};

TEST_P(WordPieceParity, IdsAndDecodingMatchHuggingFace) {
  const json& variant = cases()["variants"][GetParam()];
  const WordPieceTokenizer tok = wordpiece_tokenizer_from_json(variant_json(variant).dump(), GetParam());
  const std::vector<std::string> all = texts();
  ASSERT_EQ(all.size(), variant["ids"].size());
  for (size_t i = 0; i < all.size(); ++i) {
    const auto expected = variant["ids"][i].get<std::vector<TokenId>>();
    const auto expected_special = variant["ids_special"][i].get<std::vector<TokenId>>();
    EXPECT_EQ(tok.encode(all[i]), expected) << "text " << i << ": " << all[i];
    std::vector<TokenId> with_special;
    tok.encode_with_special_tokens(all[i], with_special);
    EXPECT_EQ(with_special, expected_special) << "text " << i << ": " << all[i];
    std::string decoded, skipped;
    tok.decode(expected_special, decoded, false);
    tok.decode(expected_special, skipped, true);
    EXPECT_EQ(decoded, variant["decoded"][i].get<std::string>()) << "text " << i;
    EXPECT_EQ(skipped, variant["decoded_skip_special"][i].get<std::string>()) << "text " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, WordPieceParity,
                         ::testing::Values("minilm", "minilm_cased", "minilm_cased_strip", "minilm_keep_accents",
                                           "minilm_no_normalizer", "small"));

TEST(WordPiece, LoadTokenizerReadsTheBertFile) {
  const auto tok = load_tokenizer(fixture("wp_minilm.json"));
  EXPECT_EQ(tok->kind(), "wordpiece");
  EXPECT_EQ(tok->vocab_size(), 30522u);
  EXPECT_EQ(tok->encode("Hello, world!"), (std::vector<TokenId>{7592, 1010, 2088, 999}));
  std::vector<TokenId> ids;
  tok->encode_with_special_tokens("Hello, world!", ids);
  EXPECT_EQ(ids, (std::vector<TokenId>{101, 7592, 1010, 2088, 999, 102}));
  ids.clear();
  tok->encode_with_special_tokens("", ids);  // the template applies to an empty text too, as in HF
  EXPECT_EQ(ids, (std::vector<TokenId>{101, 102}));
  EXPECT_EQ(tok->token_id("[CLS]"), 101u);
  EXPECT_EQ(tok->token_id("##ing"), 2075u);
}

TEST(WordPiece, SaveThenLoadGivesTheSameTokenizer) {
  for (const char* name : {"minilm", "minilm_no_normalizer", "small"}) {
    const json& variant = cases()["variants"][name];
    const WordPieceTokenizer tok = wordpiece_tokenizer_from_json(variant_json(variant).dump(), name);
    const std::string path = temp_path(std::string("wp_") + name + ".json");
    tok.save(path);
    const auto back = load_tokenizer(path);
    std::remove(path.c_str());
    EXPECT_EQ(tokenizer_to_json(dynamic_cast<const WordPieceTokenizer&>(*back)), tokenizer_to_json(tok));
    for (const std::string& text : texts()) {
      std::vector<TokenId> a, b;
      tok.encode_with_special_tokens(text, a);
      back->encode_with_special_tokens(text, b);
      EXPECT_EQ(a, b) << name << ": " << text;
    }
  }
  // the kept fields come back as the file wrote them
  const json saved = json::parse(tokenizer_to_json(wordpiece_tokenizer_from_json(read_file(fixture("wp_minilm.json")))));
  const json original = json::parse(read_file(fixture("wp_minilm.json")));
  for (const char* key : {"truncation", "padding", "post_processor", "normalizer", "decoder", "added_tokens", "model"})
    EXPECT_EQ(saved[key], original[key]) << key;
}

TEST(WordPiece, EncodeIsAdditiveAtNewlines) {
  const auto tok = load_tokenizer(fixture("wp_minilm.json"));
  ASSERT_TRUE(tok->splittable_after_newline());
  const std::string a = "Café [SEP] 机器 naïve\n", b = "Second line, with words.";
  std::vector<TokenId> parts = tok->encode(a);
  tok->encode(b, parts);
  EXPECT_EQ(tok->encode(a + b), parts);
}

TEST(WordPiece, InvalidUtf8IsKeptAsUnknownWords) {
  const auto tok = load_tokenizer(fixture("wp_minilm.json"));
  // each invalid byte is a word of its own, which no vocabulary entry matches
  EXPECT_EQ(tok->encode("ab\xff" "cd"), (std::vector<TokenId>{11113, 100, 3729}));
}

TEST(BertNormalizer, StepsFollowTheOptions) {
  BertNormalizerOptions o;
  EXPECT_EQ(bert_normalize("Ça\tVA\x01 机器", o), "ca va  机  器 ");
  o.lowercase = false;
  EXPECT_EQ(bert_normalize("Ça\tVA", o), "Ça VA");  // strip_accents follows lowercase
  o.strip_accents = true;
  EXPECT_EQ(bert_normalize("Ça\tVA", o), "Ca VA");
  o.clean_text = o.handle_chinese_chars = false;
  EXPECT_EQ(bert_normalize("\t机\x01", o), "\t机\x01");
  std::vector<std::string> words;
  for_each_bert_word("  Hey friend!  How are you?!?", [&](std::string_view w) { words.emplace_back(w); });
  EXPECT_EQ(words, (std::vector<std::string>{"Hey", "friend", "!", "How", "are", "you", "?", "!", "?"}));
}

void expect_error(const json& j, std::initializer_list<std::string> parts) {
  try {
    (void)any_tokenizer_from_json(j.dump(), "bad.json");
    ADD_FAILURE() << "loaded without an error; expected: " << *parts.begin();
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    for (const std::string& p : parts) EXPECT_NE(what.find(p), std::string::npos) << what;
  }
}

TEST(WordPiece, UnsupportedFieldsAreNamed) {
  const json base = json::parse(read_file(fixture("wp_minilm.json")));
  json j = base;
  j["normalizer"] = {{"type", "NFC"}};
  expect_error(j, {"bad.json", "normalizer", "'NFC'"});
  j = base;
  j["pre_tokenizer"] = {{"type", "Whitespace"}};
  expect_error(j, {"pre_tokenizer", "'Whitespace'"});
  j = base;
  j["pre_tokenizer"] = nullptr;
  expect_error(j, {"pre_tokenizer", "null"});
  j = base;
  j["post_processor"] = {{"type", "RobertaProcessing"}};
  expect_error(j, {"post_processor", "'RobertaProcessing'"});
  j = base;
  j["post_processor"]["single"][1]["Sequence"]["id"] = "B";
  expect_error(j, {"post_processor.single[1].Sequence.id", "'B'"});
  j = base;
  j["post_processor"]["special_tokens"].erase("[SEP]");
  expect_error(j, {"post_processor.special_tokens", "'[SEP]' is missing"});
  j = base;
  j["decoder"] = {{"type", "ByteLevel"}};
  expect_error(j, {"decoder", "'ByteLevel'"});
  j = base;
  j["model"]["unk_token"] = "<unk>";
  expect_error(j, {"model", "'<unk>' is not in the vocabulary"});
  j = base;
  j["model"]["dropout"] = 0.1;
  expect_error(j, {"model.dropout"});
  j = base;
  j["model"]["max_input_chars_per_word"] = -1;
  expect_error(j, {"model.max_input_chars_per_word"});
  j = base;
  j["truncation"] = 128;
  expect_error(j, {"truncation", "128"});
  j = base;
  j["normalizer"]["lowercase"] = "yes";
  expect_error(j, {"normalizer.lowercase"});
}

}  // namespace
}  // namespace nf::tokenizer
