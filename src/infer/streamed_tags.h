#pragma once
// What the splitters of streamed text into tagged parts share (reasoning_split's <think>,
// tool_call_parser's <tool_call>): a tag may arrive cut across pieces, so the text that may still
// become one is held back until the next piece says.
#include <algorithm>
#include <cctype>
#include <string_view>

namespace nf::infer {

inline bool is_space(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

// The length of the longest suffix of `text` that is a proper prefix of `tag`: what may still
// become the tag with the next piece.
inline size_t partial_tag(std::string_view text, std::string_view tag) {
  for (size_t n = std::min(text.size(), tag.size() - 1); n > 0; --n)
    if (text.substr(text.size() - n) == tag.substr(0, n)) return n;
  return 0;
}

}  // namespace nf::infer
