#pragma once
// The token file the training CLI tests train on: 4000 tokens (vocabulary 32) of a repeating
// pattern with noise, enough for windows of 16.
#include <string>
#include <vector>

#include "nanoformer/tokenizer/token_file.h"

namespace nf::testing {

inline void write_pattern_tokens(const std::string& path) {
  tokenizer::TokenFileWriter w(path, 32);
  std::vector<tokenizer::TokenId> ids;
  for (int i = 0; i < 4000; ++i) ids.push_back(static_cast<tokenizer::TokenId>((i * 7 + (i / 13) % 3) % 32));
  w.write(ids);
  w.close();
}

}  // namespace nf::testing
