// The split regexes, compiled by hand. Each matcher looks at the code point(s) at `pos` and
// decides which alternative of the regex wins there, in the regex's order. Two constructs need
// care because the engines backtrack:
//   \s+(?!\S)   a whitespace run followed by a non-space gives back its last code point, so that
//               the space can start the next word (" ?\p{L}+" takes "  hello" as " ", " hello");
//               at the end of the text the whole run matches;
//   \s*[\r\n]+  (GPT-4) matches up to and including the last \r or \n of the whitespace run.
// Invalid UTF-8 bytes classify as "other" (like punctuation), one byte each.
#include "nanoformer/tokenizer/pretokenizer.h"

#include "nanoformer/tokenizer/unicode.h"

namespace nf::tokenizer {
namespace {

using unicode::kLetter;
using unicode::kNumber;
using unicode::kSpace;

constexpr std::string_view kGpt2Regex = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
constexpr std::string_view kLlama3Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kCl100kRegex =
    R"('(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+)";
constexpr std::string_view kQwen2Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// The code point at a byte position with its class bits.
struct Unit {
  uint32_t value;
  uint32_t length;
  uint8_t bits;
};

class Text {
 public:
  explicit Text(std::string_view t) : s_(reinterpret_cast<const unsigned char*>(t.data())), n_(t.size()) {}
  size_t size() const { return n_; }
  unsigned char byte(size_t i) const { return s_[i]; }

  Unit at(size_t i) const {
    if (s_[i] < 0x80) return {s_[i], 1, unicode::detail::kAsciiClasses.bits[s_[i]]};
    const unicode::CodePoint cp = unicode::decode_utf8(s_ + i, n_ - i);
    return {cp.value, cp.length, unicode::classify(cp.value)};
  }

  // The end of the run of code points from i whose bits intersect `mask`.
  size_t run(size_t i, uint8_t mask) const {
    while (i < n_) {
      const Unit u = at(i);
      if (!(u.bits & mask)) break;
      i += u.length;
    }
    return i;
  }

  // The end of the run of "other" code points ([^\s\p{L}\p{N}]) from i.
  size_t run_other(size_t i) const {
    while (i < n_) {
      const Unit u = at(i);
      if (u.bits & (kLetter | kNumber | kSpace)) break;
      i += u.length;
    }
    return i;
  }

  // \s+(?!\S)|\s+ at i, where i starts a whitespace run.
  size_t whitespace(size_t i) const {
    size_t last = i;  // start of the run's last code point
    size_t j = i;
    while (j < n_) {
      const Unit u = at(j);
      if (!(u.bits & kSpace)) break;
      last = j;
      j += u.length;
    }
    if (j == n_ || last == i) return j;
    return last;
  }

 private:
  const unsigned char* s_;
  size_t n_;
};

bool is_other(uint8_t bits) { return !(bits & (kLetter | kNumber | kSpace)); }

// 's 't 're 've 'm 'll 'd after an apostrophe at i (case-sensitive for GPT-2, insensitive for
// GPT-4, where the long s 'ſ' also folds to 's'); returns the match end or 0.
size_t contraction(const Text& t, size_t i, bool ignore_case) {
  if (i + 1 >= t.size()) return 0;
  auto lower = [&](size_t k) -> unsigned char {
    const unsigned char c = t.byte(k);
    return ignore_case && c >= 'A' && c <= 'Z' ? static_cast<unsigned char>(c + 32) : c;
  };
  const unsigned char c1 = lower(i + 1);
  if (c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd') return i + 2;
  if (ignore_case && c1 == 0xC5 && i + 2 < t.size() && t.byte(i + 2) == 0xBF) return i + 3;  // ſ
  if (i + 2 >= t.size()) return 0;
  const unsigned char c2 = lower(i + 2);
  if ((c1 == 'r' && c2 == 'e') || (c1 == 'v' && c2 == 'e') || (c1 == 'l' && c2 == 'l')) return i + 3;
  return 0;
}

size_t next_gpt2(const Text& t, size_t i) {
  if (t.byte(i) == '\'') {
    if (size_t end = contraction(t, i, false)) return end;
  }
  const Unit u0 = t.at(i);
  if (u0.value == ' ' && i + 1 < t.size()) {  // " ?" then \p{L}+, \p{N}+ or [^\s\p{L}\p{N}]+
    const Unit u1 = t.at(i + 1);
    if (u1.bits & kLetter) return t.run(i + 1 + u1.length, kLetter);
    if (u1.bits & kNumber) return t.run(i + 1 + u1.length, kNumber);
    if (is_other(u1.bits)) return t.run_other(i + 1 + u1.length);
  }
  if (u0.bits & kLetter) return t.run(i + u0.length, kLetter);
  if (u0.bits & kNumber) return t.run(i + u0.length, kNumber);
  if (is_other(u0.bits)) return t.run_other(i + u0.length);
  return t.whitespace(i);
}

// LLaMA-3's pattern, numbers in runs of up to `digits` (3; Qwen2's: 1)
size_t next_gpt4(const Text& t, size_t i, int digits) {
  if (t.byte(i) == '\'') {
    if (size_t end = contraction(t, i, true)) return end;
  }
  const Unit u0 = t.at(i);
  // [^\r\n\p{L}\p{N}]?\p{L}+
  if (u0.bits & kLetter) return t.run(i + u0.length, kLetter);
  const bool newline = u0.value == '\r' || u0.value == '\n';
  if (!newline && !(u0.bits & kNumber) && i + u0.length < t.size()) {
    const Unit u1 = t.at(i + u0.length);
    if (u1.bits & kLetter) return t.run(i + u0.length + u1.length, kLetter);
  }
  // \p{N}{1,digits}
  if (u0.bits & kNumber) {
    size_t j = i + u0.length;
    for (int k = 1; k < digits && j < t.size(); ++k) {
      const Unit u = t.at(j);
      if (!(u.bits & kNumber)) break;
      j += u.length;
    }
    return j;
  }
  // " ?[^\s\p{L}\p{N}]+[\r\n]*"
  size_t start = i;
  if (u0.value == ' ' && i + 1 < t.size() && is_other(t.at(i + 1).bits)) start = i + 1;
  if (start != i || is_other(u0.bits)) {
    size_t j = t.run_other(start + (start == i ? u0.length : t.at(start).length));
    while (j < t.size() && (t.byte(j) == '\r' || t.byte(j) == '\n')) ++j;
    return j;
  }
  // \s*[\r\n]+: through the last \r or \n of the whitespace run.
  size_t j = i;
  size_t after_newline = 0;
  while (j < t.size()) {
    const Unit u = t.at(j);
    if (!(u.bits & kSpace)) break;
    j += u.length;
    if (u.value == '\r' || u.value == '\n') after_newline = j;
  }
  if (after_newline) return after_newline;
  return t.whitespace(i);
}

}  // namespace

std::string_view pattern_name(SplitPattern pattern) {
  switch (pattern) {
    case SplitPattern::kGpt2:
      return "gpt2";
    case SplitPattern::kGpt4:
      return "gpt4";
    case SplitPattern::kQwen2:
      return "qwen2";
    case SplitPattern::kNone:
      return "none";
  }
  return "?";
}

std::optional<SplitPattern> pattern_from_name(std::string_view name) {
  if (name == "gpt2") return SplitPattern::kGpt2;
  if (name == "gpt4" || name == "llama3") return SplitPattern::kGpt4;
  if (name == "qwen2") return SplitPattern::kQwen2;
  if (name == "none") return SplitPattern::kNone;
  return std::nullopt;
}

std::string_view pattern_regex(SplitPattern pattern) {
  switch (pattern) {
    case SplitPattern::kGpt2:
      return kGpt2Regex;
    case SplitPattern::kGpt4:
      return kLlama3Regex;
    case SplitPattern::kQwen2:
      return kQwen2Regex;
    case SplitPattern::kNone:
      return {};
  }
  return {};
}

std::optional<SplitPattern> pattern_from_regex(std::string_view regex) {
  if (regex == kGpt2Regex) return SplitPattern::kGpt2;
  if (regex == kLlama3Regex || regex == kCl100kRegex) return SplitPattern::kGpt4;
  if (regex == kQwen2Regex) return SplitPattern::kQwen2;
  return std::nullopt;
}

size_t next_split(std::string_view text, size_t pos, SplitPattern pattern) {
  const Text t(text);
  switch (pattern) {
    case SplitPattern::kGpt2:
      return next_gpt2(t, pos);
    case SplitPattern::kGpt4:
      return next_gpt4(t, pos, 3);
    case SplitPattern::kQwen2:
      return next_gpt4(t, pos, 1);
    case SplitPattern::kNone:
      return text.size();
  }
  return text.size();
}

}  // namespace nf::tokenizer
