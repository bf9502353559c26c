#pragma once
// Shared helpers for the tokenizer tests: paths of the fixtures in tests/fixtures/tokenizer (made by
// tools/tokenizer/make_fixtures.py with Hugging Face tokenizers) and readers for them.
#include <gtest/gtest.h>
#include <unistd.h>

#include <sstream>
#include <string>
#include <vector>

#include "nanoformer/tokenizer/bpe_tokenizer.h"
#include "nanoformer/tokenizer/byte_level.h"
#include "nanoformer/tokenizer/tokenizer.h"

namespace nf::tokenizer::testing {

inline std::string fixture(const std::string& name) { return std::string(NF_TEST_DATA_DIR) + "/tokenizer/" + name; }

// A scratch file path unique to this process (tests of several builds may run at once).
inline std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "nf_tok_" + std::to_string(::getpid()) + "_" + name;
}

// The parity texts, as make_fixtures.py joined them.
inline std::vector<std::string> parity_texts() {
  const std::string all = read_file(fixture("parity.txt"));
  const std::string sep = "\n__nf_text__\n";
  std::vector<std::string> out;
  for (size_t pos = 0;;) {
    const size_t end = all.find(sep, pos);
    out.push_back(all.substr(pos, end == std::string::npos ? std::string::npos : end - pos));
    if (end == std::string::npos) break;
    pos = end + sep.size();
  }
  return out;
}

// Expected ids, one line per parity text.
inline std::vector<std::vector<TokenId>> expected_ids(const std::string& name) {
  std::istringstream in(read_file(fixture(name)));
  std::vector<std::vector<TokenId>> out;
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    out.emplace_back();
    for (TokenId id; words >> id;) out.back().push_back(id);
  }
  return out;
}

// The golden ids and loss masks of chat_minimind.jsonl's conversations
// (tools/tokenizer/chat_template_golden.py): two lines per conversation.
inline std::vector<std::pair<std::vector<TokenId>, std::vector<uint8_t>>> chat_golden() {
  std::istringstream in(read_file(fixture("chat_minimind.golden")));
  std::vector<std::pair<std::vector<TokenId>, std::vector<uint8_t>>> out;
  for (std::string ids_line, mask_line; std::getline(in, ids_line) && std::getline(in, mask_line);) {
    std::istringstream ids(ids_line), mask(mask_line);
    out.emplace_back();
    for (TokenId id; ids >> id;) out.back().first.push_back(id);
    for (int m; mask >> m;) out.back().second.push_back(static_cast<uint8_t>(m));
  }
  return out;
}

// Deterministic pseudo-random bytes (xorshift), including invalid UTF-8.
inline std::string random_bytes(uint64_t seed, size_t n) {
  std::string s(n, '\0');
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (char& c : s) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    c = static_cast<char>(x >> 24);
  }
  return s;
}

// A byte-level tokenizer without merges: the id of every byte is the byte itself, so ids can be
// written down by hand; `specials` become added tokens 256, 257, ...
inline BpeTokenizer byte_tokenizer(const std::vector<std::string>& specials) {
  std::vector<std::optional<std::string>> vocab;
  for (int b = 0; b < 256; ++b) vocab.push_back(byte_level::encode(std::string(1, static_cast<char>(b))));
  std::vector<AddedToken> added;
  for (size_t i = 0; i < specials.size(); ++i)
    added.push_back({.id = static_cast<TokenId>(256 + i), .content = specials[i]});
  return BpeTokenizer(BpeModel(vocab, {}), added);
}

// The byte ids of text (what byte_tokenizer encodes it to when it holds no special token).
inline std::vector<TokenId> bytes_of(std::string_view text) {
  std::vector<TokenId> ids;
  for (char c : text) ids.push_back(static_cast<unsigned char>(c));
  return ids;
}

}  // namespace nf::tokenizer::testing
