// Code point sets and UTF-8 decoding for the regular-expression automata, and their error message.
#include <algorithm>
#include <cstdio>

#include "nanoformer/core/error.h"
#include "regex_internal.h"

namespace nf::grammar::regex_detail {

CodeSet normalized(CodeSet ranges) {
  std::sort(ranges.begin(), ranges.end());
  CodeSet merged;
  for (const CodeRange& r : ranges) {
    if (!merged.empty() && r.first <= merged.back().second + 1) merged.back().second = std::max(merged.back().second, r.second);
    else merged.push_back(r);
  }
  CodeSet out;  // without the surrogates
  for (const CodeRange& r : merged) {
    if (r.first < kSurrogateFirst) out.emplace_back(r.first, std::min(r.second, kSurrogateFirst - 1));
    if (r.second > kSurrogateLast) out.emplace_back(std::max(r.first, kSurrogateLast + 1), r.second);
  }
  return out;
}

CodeSet complemented(const CodeSet& set) {
  CodeSet out;
  uint32_t next = 0;
  for (const CodeRange& r : set) {
    if (r.first > next) out.emplace_back(next, r.first - 1);
    next = r.second + 1;
  }
  if (next <= kMaxCodePoint) out.emplace_back(next, kMaxCodePoint);
  return normalized(std::move(out));
}

int32_t decode_utf8(std::string_view utf8, size_t& pos) {
  const auto byte = [&](size_t i) { return static_cast<uint8_t>(utf8[i]); };
  const uint8_t lead = byte(pos);
  if (lead < 0x80) return utf8[pos++];
  // lead byte: the number of continuation bytes and the smallest code point that needs them
  int more;
  uint32_t c, smallest;
  if ((lead & 0xE0) == 0xC0) more = 1, c = lead & 0x1F, smallest = 0x80;
  else if ((lead & 0xF0) == 0xE0) more = 2, c = lead & 0x0F, smallest = 0x800;
  else if ((lead & 0xF8) == 0xF0) more = 3, c = lead & 0x07, smallest = 0x10000;
  else return -1;
  if (pos + static_cast<size_t>(more) >= utf8.size()) return -1;  // truncated
  for (int i = 1; i <= more; ++i) {
    const uint8_t b = byte(pos + static_cast<size_t>(i));
    if ((b & 0xC0) != 0x80) return -1;
    c = (c << 6) | (b & 0x3F);
  }
  if (c < smallest || c > kMaxCodePoint || (c >= kSurrogateFirst && c <= kSurrogateLast)) return -1;
  pos += static_cast<size_t>(more) + 1;
  return static_cast<int32_t>(c);
}

void fail(std::string_view pattern, size_t offset, const std::string& what) {
  constexpr size_t kShown = 200;
  std::string shown;
  for (size_t i = 0; i < pattern.size(); ++i) {
    const auto c = static_cast<uint8_t>(pattern[i]);
    if (i >= kShown && (c & 0xC0) != 0x80) {  // cut on a code point's first byte
      shown += "...";
      break;
    }
    if (c < 0x20 || c == 0x7F) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      shown += hex;
    } else {
      shown += static_cast<char>(c);
    }
  }
  NF_FAIL("regex: ", what, " at offset ", offset, " of /", shown, "/");
}

}  // namespace nf::grammar::regex_detail
