// Prompts given as token ids (infer/prompt_ids.h).
#include "nanoformer/infer/prompt_ids.h"

#include <charconv>

#include "nanoformer/core/error.h"

namespace nf::infer {

std::vector<int64_t> parse_prompt_ids(std::string_view text, int64_t vocab_size, std::string_view flag) {
  std::vector<int64_t> ids;
  const auto separator = [](char c) { return c == ' ' || c == ',' || c == '\t' || c == '\n'; };
  for (size_t pos = 0; pos < text.size();) {
    if (separator(text[pos])) { ++pos; continue; }
    size_t end = pos;
    while (end < text.size() && !separator(text[end])) ++end;
    const std::string_view word = text.substr(pos, end - pos);
    int64_t id = 0;
    const auto [last, error] = std::from_chars(word.data(), word.data() + word.size(), id);
    NF_CHECK(error == std::errc() && last == word.data() + word.size(), flag, ": '", word,
             "' is not a token id (expected integers separated by spaces)");
    ids.push_back(id);
    pos = end;
  }
  check_token_ids(ids, vocab_size, flag);
  return ids;
}

void check_token_ids(std::span<const int64_t> ids, int64_t vocab_size, std::string_view what) {
  for (size_t i = 0; i < ids.size(); ++i)
    NF_CHECK(ids[i] >= 0 && ids[i] < vocab_size, what, ": token id ", ids[i], " (position ", i,
             ") is outside the model's vocabulary [0, ", vocab_size, ")");
}

}  // namespace nf::infer
