// GBNF text to a byte-level Grammar (grammar/grammar.h).
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>
#include <optional>
#include <utility>

#include "nanoformer/core/error.h"
#include "nanoformer/grammar/grammar.h"

namespace nf::grammar {
namespace {

using Element = Grammar::Element;
using Kind = Grammar::Kind;
using Sequence = std::vector<Element>;
using CodeRange = std::pair<uint32_t, uint32_t>;  // [first, last] code points

constexpr uint32_t kMaxCodePoint = 0x10FFFF;
constexpr int64_t kMaxRepetition = 1000;  // {m,n} bounds above this are refused (each copy is a rule)
constexpr size_t kMaxRules = size_t{1} << 18;  // a grammar expanding to more rules is refused (memory)
constexpr int kMaxNesting = 256;  // groups nested deeper are refused (the parser recurses once a group)

// The UTF-8 bytes of a code point.
std::string utf8(uint32_t c) {
  std::string s;
  if (c < 0x80) {
    s += static_cast<char>(c);
  } else if (c < 0x800) {
    s += static_cast<char>(0xC0 | (c >> 6));
    s += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    s += static_cast<char>(0xE0 | (c >> 12));
    s += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    s += static_cast<char>(0xF0 | (c >> 18));
    s += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    s += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (c & 0x3F));
  }
  return s;
}

// Splits [lo, hi] (no surrogates) into runs whose UTF-8 encodings are byte-wise ranges: each run
// is one sequence of byte ranges (Russ Cox's utf8 range splitting, as RE2 and Rust's regex do).
void split_utf8(uint32_t lo, uint32_t hi, std::vector<std::vector<std::pair<uint8_t, uint8_t>>>& out) {
  for (const uint32_t edge : {0x7Fu, 0x7FFu, 0xFFFFu})
    if (lo <= edge && hi > edge) {  // different encoded lengths
      split_utf8(lo, edge, out);
      split_utf8(edge + 1, hi, out);
      return;
    }
  if (hi < 0x80) {
    out.push_back({{static_cast<uint8_t>(lo), static_cast<uint8_t>(hi)}});
    return;
  }
  for (int i = 1; i < 4; ++i) {
    const uint32_t m = (1u << (6 * i)) - 1;  // the low continuation bits
    if ((lo & ~m) != (hi & ~m)) {
      if ((lo & m) != 0) {
        split_utf8(lo, lo | m, out);
        split_utf8((lo | m) + 1, hi, out);
        return;
      }
      if ((hi & m) != m) {
        split_utf8(lo, (hi & ~m) - 1, out);
        split_utf8(hi & ~m, hi, out);
        return;
      }
    }
  }
  const std::string a = utf8(lo), b = utf8(hi);
  std::vector<std::pair<uint8_t, uint8_t>> run;
  for (size_t i = 0; i < a.size(); ++i) run.emplace_back(static_cast<uint8_t>(a[i]), static_cast<uint8_t>(b[i]));
  out.push_back(std::move(run));
}

class Compiler {
 public:
  explicit Compiler(std::string_view text) : text_(text) {}

  Grammar compile() {
    skip_space(true);
    while (pos_ < text_.size()) {
      parse_rule();
      skip_space(true);
    }
    for (size_t r = 0; r < rules_.size(); ++r)
      NF_CHECK(defined_[r], "grammar: the rule '", names_[r], "' is used but never defined");
    const auto root = ids_.find("root");
    NF_CHECK(root != ids_.end(), "grammar: no rule 'root' (the rule where the language starts)");
    check_ends_and_left_recursion();
    return flatten(root->second);
  }

 private:
  // A character of the text as an error shows it: 'c', or its byte's code when it is not printable
  // (so that the error stays one line).
  static std::string shown(char c) {
    if (c >= 0x20 && c < 0x7f) return std::string("'") + c + "'";
    char code[16];
    std::snprintf(code, sizeof code, "byte 0x%02x", static_cast<unsigned>(static_cast<uint8_t>(c)));
    return code;
  }

  [[noreturn]] void fail(const std::string& what) const {
    size_t line = 1, column = 1;
    for (size_t i = 0; i < pos_ && i < text_.size(); ++i) {
      if (text_[i] == '\n') ++line, column = 1;
      else ++column;
    }
    throw Error("grammar: " + what + " at line " + std::to_string(line) + ", column " + std::to_string(column));
  }

  bool at_end() const { return pos_ >= text_.size(); }
  char peek() const { return at_end() ? '\0' : text_[pos_]; }

  // Skips blanks and comments, and newlines when `newlines` (inside a group, after `|`).
  void skip_space(bool newlines) {
    while (!at_end()) {
      const char c = text_[pos_];
      if (c == ' ' || c == '\t' || c == '\r' || (newlines && c == '\n')) {
        ++pos_;
      } else if (c == '#') {
        while (!at_end() && text_[pos_] != '\n') ++pos_;
      } else {
        break;
      }
    }
  }

  static bool name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
  }

  std::string parse_name() {
    const size_t start = pos_;
    while (!at_end() && name_char(text_[pos_])) ++pos_;
    if (pos_ == start) fail(at_end() ? "a rule name expected, found the end" : "a rule name expected, found " + shown(peek()));
    return std::string(text_.substr(start, pos_ - start));
  }

  uint32_t rule_id(const std::string& name) {
    const auto [it, added] = ids_.try_emplace(name, static_cast<uint32_t>(rules_.size()));
    if (added) {
      rules_.emplace_back();
      names_.push_back(name);
      defined_.push_back(false);
    }
    return it->second;
  }

  uint32_t new_rule(uint32_t parent) {
    if (rules_.size() >= kMaxRules) fail("the grammar expands to more than " + std::to_string(kMaxRules) + " rules");
    const uint32_t id = static_cast<uint32_t>(rules_.size());
    rules_.emplace_back();
    names_.push_back(names_[top_rule_] + "-" + std::to_string(id));
    defined_.push_back(true);
    return id;
  }

  Element byte_set(const std::bitset<256>& set) {
    sets_.push_back(set);
    return {Kind::bytes, static_cast<uint32_t>(sets_.size() - 1)};
  }
  Element single_byte(uint8_t b) {  // one set per byte value, however many literals use it
    if (single_byte_sets_[b] == UINT32_MAX) {
      std::bitset<256> set;
      set.set(b);
      single_byte_sets_[b] = byte_set(set).value;
    }
    return {Kind::bytes, single_byte_sets_[b]};
  }

  void parse_rule() {
    const std::string name = parse_name();
    skip_space(false);
    if (text_.substr(pos_, 3) != "::=") fail("'::=' expected after the rule name '" + name + "'");
    pos_ += 3;
    const uint32_t id = rule_id(name);
    if (defined_[id]) fail("the rule '" + name + "' is defined twice");
    defined_[id] = true;
    top_rule_ = id;
    skip_space(false);
    next_rule_ = false;
    rules_[id] = parse_alternatives(id, false);
    skip_space(false);
    if (!at_end() && peek() != '\n' && !next_rule_) fail("unexpected " + shown(peek()));
  }

  std::vector<Sequence> parse_alternatives(uint32_t rule, bool nested) {
    std::vector<Sequence> alternatives;
    alternatives.push_back(parse_sequence(rule, nested));
    while (peek() == '|') {
      ++pos_;
      skip_space(true);
      alternatives.push_back(parse_sequence(rule, nested));
    }
    return alternatives;
  }

  // The code point at pos_ inside a literal or class (an escape or UTF-8).
  uint32_t parse_char() {
    const auto c = static_cast<uint8_t>(text_[pos_]);
    if (c == '\\') {
      ++pos_;
      if (at_end()) fail("an escape at the end of the text");
      const char e = text_[pos_++];
      const auto hex = [&](int digits) {
        uint32_t v = 0;
        for (int i = 0; i < digits; ++i) {
          if (at_end() || !std::isxdigit(static_cast<unsigned char>(peek()))) fail("a hexadecimal escape needs " + std::to_string(digits) + " digits");
          const char h = text_[pos_++];
          v = v * 16 + static_cast<uint32_t>(h <= '9' ? h - '0' : (h | 0x20) - 'a' + 10);
        }
        return v;
      };
      const auto code_point = [&](int digits) {
        const uint32_t v = hex(digits);
        if (v >= 0xD800 && v <= 0xDFFF) {
          pos_ -= static_cast<size_t>(digits) + 2;
          char shown_code[16];
          std::snprintf(shown_code, sizeof shown_code, "U+%04X", static_cast<unsigned>(v));
          fail(std::string("the surrogate ") + shown_code + " is not a character (UTF-8 cannot encode it)");
        }
        return v;
      };
      switch (e) {
        case 'n': return '\n';
        case 'r': return '\r';
        case 't': return '\t';
        case 'x': return hex(2);
        case 'u': return code_point(4);
        case 'U': return code_point(8);
        case '\\': case '"': case '\'': case '[': case ']': case '-': case '^': case '/': return static_cast<uint8_t>(e);
        default: --pos_; fail("unknown escape: '\\' followed by " + shown(e));
      }
    }
    // UTF-8
    int length = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (length == 0 || pos_ + static_cast<size_t>(length) > text_.size()) fail("invalid UTF-8");
    uint32_t v = length == 1 ? c : c & (0x7F >> length);
    for (int i = 1; i < length; ++i) {
      const auto b = static_cast<uint8_t>(text_[pos_ + static_cast<size_t>(i)]);
      if ((b & 0xC0) != 0x80) fail("invalid UTF-8");
      v = (v << 6) | (b & 0x3F);
    }
    pos_ += static_cast<size_t>(length);
    return v;
  }

  // A literal's bytes: escapes give code points (\xHH a byte below 0x100 given as is).
  Sequence parse_literal() {
    const char quote = text_[pos_++];
    Sequence seq;
    while (!at_end() && peek() != quote) {
      const bool escaped = peek() == '\\' && pos_ + 1 < text_.size() && text_[pos_ + 1] == 'x';
      const uint32_t c = parse_char();
      if (c > kMaxCodePoint) fail("code point " + std::to_string(c) + " is beyond U+10FFFF");
      if (escaped) {
        seq.push_back(single_byte(static_cast<uint8_t>(c)));
      } else {
        for (const char b : utf8(c)) seq.push_back(single_byte(static_cast<uint8_t>(b)));
      }
    }
    if (at_end()) fail("an unterminated literal");
    ++pos_;
    return seq;
  }

  // A class's code point ranges, complemented when negated (surrogates never included).
  std::vector<CodeRange> parse_class() {
    ++pos_;  // [
    bool negated = false;
    if (peek() == '^') negated = true, ++pos_;
    std::vector<CodeRange> ranges;
    while (!at_end() && peek() != ']') {
      const uint32_t first = parse_char();
      uint32_t last = first;
      if (peek() == '-' && pos_ + 1 < text_.size() && text_[pos_ + 1] != ']') {
        ++pos_;
        last = parse_char();
      }
      if (last < first || last > kMaxCodePoint) fail("a bad class range");
      ranges.emplace_back(first, last);
    }
    if (at_end()) fail("an unterminated character class");
    ++pos_;
    std::sort(ranges.begin(), ranges.end());
    std::vector<CodeRange> merged;
    for (const CodeRange& r : ranges) {
      if (!merged.empty() && r.first <= merged.back().second + 1) merged.back().second = std::max(merged.back().second, r.second);
      else merged.push_back(r);
    }
    if (negated) {
      std::vector<CodeRange> complement;
      uint32_t next = 0;
      for (const CodeRange& r : merged) {
        if (r.first > next) complement.emplace_back(next, r.first - 1);
        next = r.second + 1;
      }
      if (next <= kMaxCodePoint) complement.emplace_back(next, kMaxCodePoint);
      merged = std::move(complement);
    }
    std::vector<CodeRange> out;  // without the surrogates D800-DFFF, which UTF-8 never encodes
    for (const CodeRange& r : merged) {
      if (r.first < 0xD800) out.emplace_back(r.first, std::min(r.second, 0xD7FFu));
      if (r.second > 0xDFFF) out.emplace_back(std::max(r.first, 0xE000u), r.second);
    }
    return out;
  }

  // One element matching a code point of `ranges`: a byte set when all are ASCII, else a rule
  // whose alternatives are the UTF-8 byte range sequences.
  Element class_element(const std::vector<CodeRange>& ranges, uint32_t parent) {
    std::vector<std::vector<std::pair<uint8_t, uint8_t>>> runs;
    for (const CodeRange& r : ranges) split_utf8(r.first, r.second, runs);
    std::bitset<256> ascii;
    std::vector<Sequence> alternatives;
    for (const auto& run : runs) {
      if (run.size() == 1) {
        for (int b = run[0].first; b <= run[0].second; ++b) ascii.set(static_cast<size_t>(b));
        continue;
      }
      Sequence seq;
      for (const auto& [lo, hi] : run) {
        std::bitset<256> set;
        for (int b = lo; b <= hi; ++b) set.set(static_cast<size_t>(b));
        seq.push_back(byte_set(set));
      }
      alternatives.push_back(std::move(seq));
    }
    if (alternatives.empty() && ascii.any()) return byte_set(ascii);
    if (ascii.any()) alternatives.insert(alternatives.begin(), Sequence{byte_set(ascii)});
    if (alternatives.empty()) fail("a character class that matches nothing");
    const uint32_t id = new_rule(parent);
    rules_[id] = std::move(alternatives);
    return {Kind::rule, id};
  }

  // `item` as one element (a rule when it is several).
  Element single(Sequence item, uint32_t parent) {
    if (item.size() == 1) return item[0];
    const uint32_t id = new_rule(parent);
    rules_[id] = {std::move(item)};
    return {Kind::rule, id};
  }

  // item{min,max} (max < 0: unbounded) appended to seq.
  void repeat(Sequence& seq, Element item, int64_t min, int64_t max, uint32_t parent) {
    for (int64_t i = 0; i < min; ++i) seq.push_back(item);
    if (max < 0) {  // r ::= item r |
      const uint32_t r = new_rule(parent);
      rules_[r] = {{item, {Kind::rule, r}}, {}};
      seq.push_back({Kind::rule, r});
      return;
    }
    std::optional<Element> rest;  // opt_k ::= item opt_{k-1} |
    for (int64_t k = 0; k < max - min; ++k) {
      const uint32_t r = new_rule(parent);
      Sequence more{item};
      if (rest) more.push_back(*rest);
      rules_[r] = {std::move(more), {}};
      rest = Element{Kind::rule, r};
    }
    if (rest) seq.push_back(*rest);
  }

  int64_t parse_int() {
    const size_t start = pos_;
    int64_t v = 0;
    while (!at_end() && std::isdigit(static_cast<unsigned char>(peek()))) {
      v = v * 10 + (text_[pos_++] - '0');
      if (v > kMaxRepetition) fail("a repetition bound above " + std::to_string(kMaxRepetition));
    }
    if (pos_ == start) fail("a number expected in {m,n}");
    return v;
  }

  Sequence parse_sequence(uint32_t rule, bool nested) {
    Sequence seq;
    size_t last_start = 0;  // where the last item's elements start in seq
    while (!at_end()) {
      const char c = peek();
      const size_t item_start = seq.size();
      if (c == '"' || c == '\'') {
        const Sequence lit = parse_literal();
        seq.insert(seq.end(), lit.begin(), lit.end());
      } else if (c == '[') {
        seq.push_back(class_element(parse_class(), rule));
      } else if (c == '.') {
        ++pos_;
        seq.push_back(class_element({{0, 0xD7FF}, {0xE000, kMaxCodePoint}}, rule));
      } else if (c == '(') {
        if (++nesting_ > kMaxNesting) fail("groups nested deeper than " + std::to_string(kMaxNesting));
        ++pos_;
        skip_space(true);
        const uint32_t group = new_rule(rule);
        rules_[group] = parse_alternatives(group, true);
        if (peek() != ')') fail(at_end() ? "')' expected, found the end" : "')' expected, found " + shown(peek()));
        ++pos_;
        --nesting_;
        seq.push_back({Kind::rule, group});
      } else if (name_char(c)) {
        const size_t start = pos_;
        const std::string name = parse_name();
        skip_space(nested);
        if (text_.substr(pos_, 3) == "::=") {  // the next rule's start
          if (nested) fail("'::=' inside a group");
          pos_ = start;
          next_rule_ = true;
          break;
        }
        seq.push_back({Kind::rule, rule_id(name)});
        last_start = item_start;
        continue;  // the space is skipped: postfix operators may follow
      } else if (c == '*' || c == '+' || c == '?' || c == '{') {
        Sequence item(seq.begin() + static_cast<ptrdiff_t>(last_start), seq.end());
        if (item.empty()) fail(std::string("'") + c + "' with nothing before it");
        seq.resize(last_start);
        const Element e = single(std::move(item), rule);
        ++pos_;
        int64_t min = 0, max = -1;
        if (c == '+') min = 1;
        if (c == '?') max = 1;
        if (c == '{') {
          skip_space(false);
          min = parse_int();
          skip_space(false);
          max = min;
          if (peek() == ',') {
            ++pos_;
            skip_space(false);
            max = peek() == '}' ? -1 : parse_int();
            skip_space(false);
          }
          if (peek() != '}') fail("'}' expected");
          ++pos_;
          if (max >= 0 && max < min) fail("{m,n} with n < m");
        }
        repeat(seq, e, min, max, rule);
        skip_space(nested);
        last_start = seq.size();  // a second operator needs a group
        continue;
      } else {
        break;  // |, ), a newline, or something the caller reports
      }
      last_start = item_start;
      skip_space(nested);
    }
    return seq;
  }

  // The rules that can match the empty string (`nullable`: an alternative of only nullable rules)
  // or, otherwise, that can end at all (an alternative of bytes and rules that can end): a work
  // list over the uses of each rule, so a long chain r0 ::= r1, r1 ::= r2, ... costs its length.
  std::vector<bool> least_fixpoint(bool nullable) const {
    const size_t n = rules_.size();
    std::vector<uint32_t> alt_rule;        // alternative -> its rule
    std::vector<size_t> missing;           // alternative -> its elements not yet known to qualify
    std::vector<std::vector<uint32_t>> uses(n);  // rule -> the alternatives it appears in (once per use)
    std::vector<uint32_t> ready;           // rules known to qualify, their uses not yet counted
    std::vector<bool> holds(n, false);
    for (size_t r = 0; r < n; ++r)
      for (const Sequence& alt : rules_[r]) {
        const auto a = static_cast<uint32_t>(alt_rule.size());
        alt_rule.push_back(static_cast<uint32_t>(r));
        size_t count = 0;
        for (const Element& e : alt) {
          if (e.kind == Kind::bytes) {
            if (nullable) count = SIZE_MAX;  // a byte is never empty
            if (count == SIZE_MAX) break;
            continue;
          }
          ++count;
          uses[e.value].push_back(a);
        }
        missing.push_back(count);
        if (count == 0 && !holds[r]) holds[r] = true, ready.push_back(static_cast<uint32_t>(r));
      }
    while (!ready.empty()) {
      const uint32_t s = ready.back();
      ready.pop_back();
      for (const uint32_t a : uses[s]) {
        if (missing[a] == SIZE_MAX || --missing[a] > 0 || holds[alt_rule[a]]) continue;
        holds[alt_rule[a]] = true;
        ready.push_back(alt_rule[a]);
      }
    }
    return holds;
  }

  // Refuses rules that never end and left recursion (a rule reachable from itself without
  // consuming a byte).
  void check_ends_and_left_recursion() {
    const size_t n = rules_.size();
    const std::vector<bool> nullable = least_fixpoint(true), ends = least_fixpoint(false);
    for (size_t r = 0; r < n; ++r)
      NF_CHECK(ends[r], "grammar: the rule '", names_[r], "' can never end (every alternative leads back to it)");
    // left edges: r -> s where s can come first in one of r's alternatives
    std::vector<std::vector<uint32_t>> left(n);
    for (size_t r = 0; r < n; ++r)
      for (const Sequence& alt : rules_[r])
        for (const Element& e : alt) {
          if (e.kind != Kind::rule) break;
          left[r].push_back(e.value);
          if (!nullable[e.value]) break;
        }
    std::vector<int> mark(n, 0);  // 0 unseen, 1 on the path, 2 done
    std::vector<std::pair<uint32_t, size_t>> path;
    for (size_t start = 0; start < n; ++start) {
      if (mark[start]) continue;
      path.emplace_back(static_cast<uint32_t>(start), 0);
      mark[start] = 1;
      while (!path.empty()) {
        auto& [r, next] = path.back();
        if (next == left[r].size()) {
          mark[r] = 2;
          path.pop_back();
          continue;
        }
        const uint32_t s = left[r][next++];
        NF_CHECK(mark[s] != 1, "grammar: the rule '", names_[s],
                 "' is left-recursive (it can reach itself before matching a byte, as r ::= r \"x\" or (x?)*)");
        if (mark[s] == 0) mark[s] = 1, path.emplace_back(s, 0);
      }
    }
  }

  Grammar flatten(uint32_t root) {
    Grammar g;
    g.byte_sets = std::move(sets_);
    g.rule_names = std::move(names_);
    g.root = root;
    g.alternatives.resize(rules_.size());
    for (size_t r = 0; r < rules_.size(); ++r)
      for (const Sequence& alt : rules_[r]) {
        g.alternatives[r].push_back(static_cast<uint32_t>(g.elements.size()));
        g.elements.insert(g.elements.end(), alt.begin(), alt.end());
        g.elements.push_back({Kind::end, static_cast<uint32_t>(r)});
      }
    return g;
  }

  std::string_view text_;
  size_t pos_ = 0;
  uint32_t top_rule_ = 0;  // the named rule being parsed: generated rules are named after it
  int nesting_ = 0;        // groups open at pos_
  std::vector<uint32_t> single_byte_sets_ = std::vector<uint32_t>(256, UINT32_MAX);  // byte -> its set's index
  bool next_rule_ = false;  // the rule being parsed ended where the next one starts (after a `|` and a newline)
  std::vector<std::vector<Sequence>> rules_;
  std::vector<std::string> names_;
  std::vector<bool> defined_;
  std::map<std::string, uint32_t> ids_;
  std::vector<std::bitset<256>> sets_;
};

}  // namespace

Grammar compile_gbnf(std::string_view text) { return Compiler(text).compile(); }

std::string gbnf_literal(std::string_view bytes) {
  static const char* hex = "0123456789ABCDEF";
  std::string out = "\"";
  for (const char c : bytes) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20) {
      out += "\\x";
      out += hex[u >> 4];
      out += hex[u & 15];
    } else {
      out += c;
    }
  }
  return out + "\"";
}

}  // namespace nf::grammar
