// JSONL corpora: blocks of whole lines with their line numbers, documents encoded one by one with
// the end-of-text token after each, `prepare` of JSONL into a token file, and errors that name the
// file and the line.
#include "nanoformer/tokenizer/jsonl.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "nanoformer/tokenizer/char_tokenizer.h"
#include "nanoformer/tokenizer/corpus.h"
#include "nanoformer/tokenizer/token_file.h"
#include "support/testing.h"
#include "tokenizer/fixtures.h"

namespace nf::tokenizer {
namespace {

void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

std::vector<TokenId> encode_all(const Tokenizer& tok, const std::string& path, JsonlTextOptions options) {
  std::vector<TokenId> ids;
  encode_jsonl_texts(tok, path, options, [&](std::span<const TokenId> part) { ids.insert(ids.end(), part.begin(), part.end()); });
  return ids;
}

TEST(Jsonl, BlocksHoldWholeNumberedLines) {
  const std::string path = testing::temp_path("blocks.jsonl");
  write_text(path, "{\"a\": 1}\n\n  \r\n{\"b\": 22}\r\n{\"c\": 333}");  // blank lines count, CRLF is cut
  for (size_t block : {size_t{1}, size_t{5}, size_t{1000}}) {
    std::vector<std::pair<uint64_t, std::string>> lines;
    read_jsonl_blocks(path, block, [&](std::span<const JsonlLine> part) {
      for (const JsonlLine& l : part) lines.emplace_back(l.number, std::string(l.text));
    });
    const std::vector<std::pair<uint64_t, std::string>> expected{{1, "{\"a\": 1}"}, {4, "{\"b\": 22}"}, {5, "{\"c\": 333}"}};
    EXPECT_EQ(lines, expected) << "block " << block;
  }
  std::remove(path.c_str());
}

TEST(Jsonl, DocumentsAreEncodedAloneEachFollowedByEndOfText) {
  const auto tok = load_tokenizer(testing::fixture("hf_gpt2.json"));
  ASSERT_TRUE(end_of_text_id(*tok));
  const TokenId eot = *end_of_text_id(*tok);
  const std::string path = testing::temp_path("docs.jsonl");
  const std::vector<std::string> docs{"Hello world", "机器学习 \"quoted\"\nnext line", " spaced out "};
  std::string text;
  for (const std::string& d : docs) text += "{\"text\": " + nlohmann::json(d).dump() + ", \"id\": 7}\n";
  write_text(path, text);
  std::vector<TokenId> expected;
  for (const std::string& d : docs) {
    const auto ids = tok->encode(d);
    expected.insert(expected.end(), ids.begin(), ids.end());
    expected.push_back(eot);
  }
  JsonlTextOptions options;
  options.separator = eot;
  options.threads = 3;
  for (size_t block : {size_t{3}, size_t{1 << 20}}) {
    options.block_bytes = block;
    EXPECT_EQ(encode_all(*tok, path, options), expected) << "block " << block;
  }
  // a character vocabulary has no <|endoftext|>
  EXPECT_FALSE(end_of_text_id(CharTokenizer::train("abc")));
  std::remove(path.c_str());
}

TEST(Jsonl, MalformedLinesNameFileAndLine) {
  const auto tok = load_tokenizer(testing::fixture("hf_gpt2.json"));
  const std::string path = testing::temp_path("bad.jsonl");
  JsonlTextOptions options;
  options.threads = 2;
  write_text(path, "{\"text\": \"ok\"}\n\n{\"text\": \"ok\"\n{\"text\": 3}\n");
  EXPECT_THROW_WITH(encode_all(*tok, path, options), path + ":3:", "not valid JSON");  // the first bad line
  write_text(path, "{\"text\": \"ok\"}\n{\"content\": \"x\"}\n");
  EXPECT_THROW_WITH(encode_all(*tok, path, options), path + ":2:", "no \"text\" field");
  write_text(path, "{\"text\": \"ok\"}\n{\"text\": [1]}\n");
  EXPECT_THROW_WITH(encode_all(*tok, path, options), path + ":2:", "\"text\" is not a string", "[1]");
  write_text(path, "[\"text\"]\n");
  EXPECT_THROW_WITH(encode_all(*tok, path, options), path + ":1:", "expected a JSON object");
  options.field = "body";
  write_text(path, "{\"body\": \"ok\"}\n{\"text\": \"x\"}\n");
  EXPECT_THROW_WITH(encode_all(*tok, path, options), path + ":2:", "no \"body\" field");
  EXPECT_THROW_WITH(encode_all(*tok, testing::temp_path("missing.jsonl"), options), "missing.jsonl", "cannot open");
  std::remove(path.c_str());
}

// `prepare` of a JSONL file writes exactly the ids of its documents, each followed by the separator.
TEST(Jsonl, PreparedTokenFileEqualsTheDocuments) {
  const auto tok = load_tokenizer(testing::fixture("hf_gpt2.json"));
  const std::string jsonl = testing::temp_path("prep.jsonl"), other = testing::temp_path("prep.txt");
  const std::string out = testing::temp_path("prep.bin");
  write_text(jsonl, "{\"body\": \"first\"}\n{\"body\": \"second one\"}\n");
  write_text(other, "{\"body\": \"third\"}\n");  // read as JSONL only when every input is
  PrepareOptions options;
  options.jsonl = true;
  options.jsonl_field = "body";
  options.document_separator = end_of_text_id(*tok);
  prepare_token_file(*tok, {jsonl, other}, out, options);
  std::vector<TokenId> expected;
  for (const char* d : {"first", "second one", "third"}) {
    const auto ids = tok->encode(d);
    expected.insert(expected.end(), ids.begin(), ids.end());
    expected.push_back(*options.document_separator);
  }
  EXPECT_EQ(TokenFile(out).read_all(), expected);
  for (const auto& p : {jsonl, other, out}) std::remove(p.c_str());
}

}  // namespace
}  // namespace nf::tokenizer
