// The binary token file and corpus preparation.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>

#include "fixtures.h"
#include "nanoformer/core/error.h"
#include "nanoformer/tokenizer/char_tokenizer.h"
#include "nanoformer/tokenizer/corpus.h"
#include "nanoformer/tokenizer/token_file.h"
#include "nanoformer/tokenizer/tokenizer_json.h"

namespace nf::tokenizer {
namespace {

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

template <class F>
void expect_error(F&& f, std::initializer_list<std::string> parts) {
  try {
    f();
    ADD_FAILURE() << "no error; expected: " << *parts.begin();
  } catch (const Error& e) {
    for (const std::string& p : parts) EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
  }
}

TEST(TokenFile, RoundTripsSmallAndLargeVocabularies) {
  for (uint64_t vocab : {uint64_t{6400}, uint64_t{65536}, uint64_t{65537}, uint64_t{200000}}) {
    const std::string path = testing::temp_path("roundtrip.bin");
    std::vector<TokenId> ids;
    for (uint64_t i = 0; i < 1000; ++i) ids.push_back(static_cast<TokenId>((i * 7919) % vocab));
    ids.push_back(static_cast<TokenId>(vocab - 1));
    {
      TokenFileWriter w(path, vocab);
      w.write(std::span<const TokenId>(ids).first(10));
      w.write(std::span<const TokenId>(ids).subspan(10));
      w.close();
    }
    const TokenFile f(path);
    EXPECT_EQ(f.size(), ids.size());
    EXPECT_EQ(f.vocab_size(), vocab);
    EXPECT_EQ(f.token_width(), vocab <= 65536 ? 2u : 4u);
    EXPECT_EQ(f.read_all(), ids);
    EXPECT_EQ(f[5], ids[5]);
    std::vector<TokenId> window(3);
    f.read(ids.size() - 3, window);
    EXPECT_EQ(window, std::vector<TokenId>(ids.end() - 3, ids.end()));
    EXPECT_NO_THROW(f.validate_ids());
    EXPECT_EQ(f.max_id(), vocab - 1);
    EXPECT_EQ(f.find_id_at_least(vocab - 1),
              static_cast<uint64_t>(std::find(ids.begin(), ids.end(), vocab - 1) - ids.begin()));
    EXPECT_EQ(f.find_id_at_least(vocab), ids.size());
    EXPECT_THROW((void)f[ids.size()], Error);
    std::remove(path.c_str());
  }
}

TEST(TokenFile, HeaderIsLittleEndianAsDocumented) {
  const std::string path = testing::temp_path("header.bin");
  {
    TokenFileWriter w(path, 300);
    const std::vector<TokenId> ids{1, 258};
    w.write(ids);
    w.close();
  }
  const std::string bytes = read_file(path);
  ASSERT_EQ(bytes.size(), 32u + 4u);
  EXPECT_EQ(bytes.substr(0, 8), "NFTOKENS");
  EXPECT_EQ(bytes[8], 1);   // version
  EXPECT_EQ(bytes[12], 2);  // bytes per token
  EXPECT_EQ(static_cast<unsigned char>(bytes[16]), 300 & 0xFF);
  EXPECT_EQ(bytes[17], 1);  // 300 = 0x012C
  EXPECT_EQ(bytes[24], 2);  // count
  EXPECT_EQ(bytes.substr(32), std::string("\x01\x00\x02\x01", 4));
  std::remove(path.c_str());
}

TEST(TokenFile, BadFilesAreRefusedWithTheirName) {
  const std::string path = testing::temp_path("bad.bin");
  {
    TokenFileWriter w(path, 1000);
    const std::vector<TokenId> ids(100, 7);
    w.write(ids);
    w.close();
  }
  const std::string good = read_file(path);
  write_bytes(path, good.substr(0, good.size() - 1));
  expect_error([&] { TokenFile f(path); }, {path, "truncated", "100 tokens"});
  write_bytes(path, good.substr(0, 20));
  expect_error([&] { TokenFile f(path); }, {path, "header"});
  write_bytes(path, "XXTOKENS" + good.substr(8));
  expect_error([&] { TokenFile f(path); }, {path, "bad magic"});
  std::string v2 = good;
  v2[8] = 2;
  write_bytes(path, v2);
  expect_error([&] { TokenFile f(path); }, {path, "version 2"});
  std::string big_id = good;
  big_id[32] = static_cast<char>(0xFF);
  big_id[33] = static_cast<char>(0xFF);
  write_bytes(path, big_id);
  expect_error([&] { TokenFile(path).validate_ids(); }, {path, "65535"});
  expect_error([&] { TokenFile f(testing::temp_path("missing.bin")); }, {"missing.bin", "cannot open"});
  std::remove(path.c_str());
}

TEST(TokenFile, WriterRefusesOutOfRangeIdsAndLeavesNoFile) {
  const std::string path = testing::temp_path("refused.bin");
  std::remove(path.c_str());
  {
    TokenFileWriter w(path, 10);
    const std::vector<TokenId> ids{3, 10};
    expect_error([&] { w.write(ids); }, {"token id 10", "out of range"});
  }
  EXPECT_FALSE(std::ifstream(path).good());
  EXPECT_FALSE(std::ifstream(path + ".tmp").good());
}

TEST(Corpus, SafeCutsFollowANewlineBeforeAnAlphanumeric) {
  EXPECT_EQ(find_safe_cut("ab\ncd", 0), 3u);
  EXPECT_EQ(find_safe_cut("ab\n cd\n\nx", 0), 8u);
  EXPECT_EQ(find_safe_cut("ab\ncd", 4), std::string::npos);
  EXPECT_EQ(find_safe_cut("ab\n", 0), std::string::npos);
}

// Preparing in many small parallel chunks gives exactly the ids of encoding each file whole.
TEST(Corpus, PreparedFileEqualsDirectEncoding) {
  const BpeTokenizer bpe = load_tokenizer_json(testing::fixture("hf_gpt2.json"));
  const BpeTokenizer prefixed = load_tokenizer_json(testing::fixture("hf_prefix.json"));  // not splittable
  const std::string corpus = read_file(testing::fixture("corpus.txt"));
  const CharTokenizer chars = CharTokenizer::train(corpus);
  const std::string input1 = testing::temp_path("in1.txt"), input2 = testing::temp_path("in2.txt");
  const std::string out = testing::temp_path("out.bin");
  write_bytes(input1, corpus);
  write_bytes(input2, "second file\n" + corpus.substr(0, 1000));
  for (const Tokenizer* tok : std::initializer_list<const Tokenizer*>{&bpe, &prefixed, &chars}) {
    PrepareOptions options;
    options.threads = 3;
    options.chunk_bytes = 97;
    options.block_bytes = 1000;
    options.separator = 0;
    uint64_t last_done = 0;
    options.progress = [&](uint64_t done, uint64_t total) {
      EXPECT_GE(done, last_done);
      EXPECT_LE(done, total);
      last_done = done;
    };
    const PrepareStats stats = prepare_token_file(*tok, {input1, input2}, out, options);
    std::vector<TokenId> expected = tok->encode(read_file(input1));
    expected.push_back(0);
    const auto second = tok->encode(read_file(input2));
    expected.insert(expected.end(), second.begin(), second.end());
    expected.push_back(0);
    const TokenFile f(out);
    EXPECT_EQ(f.read_all(), expected) << tok->kind();
    EXPECT_EQ(stats.tokens, expected.size());
    EXPECT_EQ(stats.bytes, corpus.size() + 12 + 1000);
    EXPECT_EQ(f.vocab_size(), tok->vocab_size());
  }
  for (const auto& p : {input1, input2, out}) std::remove(p.c_str());
}

TEST(Corpus, UnreadableInputIsNamedBeforeAnythingIsWritten) {
  const BpeTokenizer tok = load_tokenizer_json(testing::fixture("hf_gpt2.json"));
  const std::string out = testing::temp_path("never.bin");
  std::remove(out.c_str());
  expect_error([&] { prepare_token_file(tok, {"/nonexistent/corpus.txt"}, out); },
               {"/nonexistent/corpus.txt", "cannot open"});
  expect_error([&] { prepare_token_file(tok, {::testing::TempDir()}, out); }, {"directory"});
  EXPECT_FALSE(std::ifstream(out).good());
}

}  // namespace
}  // namespace nf::tokenizer
