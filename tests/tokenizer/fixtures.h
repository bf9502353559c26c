#pragma once
// Shared helpers for the tokenizer tests: paths of the fixtures in tests/data/tokenizer (made by
// tools/tokenizer/make_fixtures.py with Hugging Face tokenizers) and readers for them.
#include <gtest/gtest.h>
#include <unistd.h>

#include <sstream>
#include <string>
#include <vector>

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

}  // namespace nf::tokenizer::testing
