// ECMA-262 patterns (ECMA-262 §22.2.1, with Annex B.1.2's literal `{` `}` `]` and class ranges
// beside \d \w \s) parsed to a syntax tree, then built into a Thompson automaton (regex_internal.h).
#include <algorithm>
#include <limits>

#include "nanoformer/grammar/regex.h"
#include "regex_internal.h"

namespace nf::grammar::regex_detail {
namespace {

constexpr int kMaxNesting = 256;                // groups and classes nested deeper are refused (the parser recurses once a level)
constexpr uint32_t kMaxRepetition = 1000;       // {n,m} counts above this are refused
constexpr uint32_t kUnbounded = std::numeric_limits<uint32_t>::max();
// patterns whose automaton would have more states and edges are refused (its memory; JSONSchemaBench's largest has 2^16..2^17)
constexpr uint64_t kMaxNfaSize = uint64_t{1} << 20;

struct Node {
  enum class Kind : uint8_t { set, concat, alternation, repeat, begin, end };
  Kind kind;
  CodeSet set;                   // set
  std::vector<uint32_t> children;  // concat, alternation; repeat: one
  uint32_t min = 0, max = 0;     // repeat (max: kUnbounded)
  uint64_t size = 0;             // an upper bound on its Nfa's states and edges
};

bool is_digit(int32_t c) { return c >= '0' && c <= '9'; }
bool is_ascii_alphanumeric(int32_t c) { return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
int hex_value(int32_t c) {
  if (is_digit(c)) return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// ECMA-262 §22.2.2.9's character class escapes (\d \w \s; upper case: their complements).
CodeSet class_escape_set(int32_t letter) {
  CodeSet set;
  switch (letter | 0x20) {
    case 'd': set = {{'0', '9'}}; break;
    case 'w': set = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}}; break;
    default:  // 's': WhiteSpace and LineTerminator (§12.2, §12.3)
      set = {{0x09, 0x0D}, {0x20, 0x20}, {0xA0, 0xA0}, {0x1680, 0x1680}, {0x2000, 0x200A}, {0x2028, 0x2029},
             {0x202F, 0x202F}, {0x205F, 0x205F}, {0x3000, 0x3000}, {0xFEFF, 0xFEFF}};
  }
  set = normalized(std::move(set));
  return (letter >= 'A' && letter <= 'Z') ? complemented(set) : set;
}

class Parser {
 public:
  explicit Parser(std::string_view pattern) : pattern_(pattern) {
    for (size_t pos = 0; pos < pattern_.size();) {
      const size_t at = pos;
      if (decode_utf8(pattern_, pos) < 0) fail(pattern_, at, "invalid UTF-8");
    }
  }

  Nfa parse() {
    const uint32_t root = parse_disjunction();
    if (!at_end()) fail(pattern_, pos_, "unmatched )");
    Nfa nfa;
    // search semantics: a prefix state looping on every code point, and an accepting one after the pattern
    const CodeSet every = complemented({});
    nfa.start = new_state(nfa);
    const auto [start, end] = build(nfa, root);
    nfa.accept = new_state(nfa);
    for (const CodeRange& r : every) {
      nfa.states[nfa.start].edges.push_back({r.first, r.second, nfa.start});
      nfa.states[nfa.accept].edges.push_back({r.first, r.second, nfa.accept});
    }
    nfa.states[nfa.start].moves.emplace_back(start, Nfa::Move::empty);
    nfa.states[end].moves.emplace_back(nfa.accept, Nfa::Move::empty);
    return nfa;
  }

 private:
  bool at_end() const { return pos_ >= pattern_.size(); }
  int32_t peek() const {
    size_t p = pos_;
    return at_end() ? -1 : decode_utf8(pattern_, p);
  }
  int32_t next() { return decode_utf8(pattern_, pos_); }
  bool take(char c) {
    if (at_end() || pattern_[pos_] != c) return false;
    ++pos_;
    return true;
  }

  uint32_t add(Node node, size_t offset) {
    if (node.size > kMaxNfaSize)
      fail(pattern_, offset, "a pattern over " + std::to_string(kMaxNfaSize) + " automaton states and edges");
    nodes_.push_back(std::move(node));
    return static_cast<uint32_t>(nodes_.size() - 1);
  }
  uint32_t set_node(CodeSet set, size_t offset) {
    const uint64_t size = 2 + set.size();
    return add({Node::Kind::set, std::move(set), {}, 0, 0, size}, offset);
  }
  uint32_t list_node(Node::Kind kind, std::vector<uint32_t> children, size_t offset) {
    if (children.size() == 1) return children[0];
    uint64_t size = 2;
    for (const uint32_t c : children) size += nodes_[c].size + 2;
    return add({kind, {}, std::move(children), 0, 0, size}, offset);
  }

  void enter(size_t offset) {
    if (++depth_ > kMaxNesting) fail(pattern_, offset, "nesting deeper than " + std::to_string(kMaxNesting));
  }

  // Disjunction :: Alternative ( | Alternative )*
  uint32_t parse_disjunction() {
    const size_t offset = pos_;
    std::vector<uint32_t> alternatives{parse_alternative()};
    while (take('|')) alternatives.push_back(parse_alternative());
    return list_node(Node::Kind::alternation, std::move(alternatives), offset);
  }

  // Alternative :: Term*, where ^ may only come first and $ only last.
  uint32_t parse_alternative() {
    const size_t offset = pos_;
    std::vector<uint32_t> terms;
    while (!at_end() && pattern_[pos_] != '|' && pattern_[pos_] != ')') {
      const size_t term = pos_;
      if (take('^')) {
        if (!terms.empty()) fail(pattern_, term, "^ not at the start of its alternative");
        terms.push_back(add({Node::Kind::begin, {}, {}, 0, 0, 3}, term));
        refuse_quantifier();
      } else if (take('$')) {
        terms.push_back(add({Node::Kind::end, {}, {}, 0, 0, 3}, term));
        refuse_quantifier();
        if (!at_end() && pattern_[pos_] != '|' && pattern_[pos_] != ')') fail(pattern_, term, "$ not at the end of its alternative");
      } else {
        terms.push_back(parse_quantified(parse_atom(), term));
      }
    }
    return list_node(Node::Kind::concat, std::move(terms), offset);
  }

  void refuse_quantifier() {
    if (!at_end() && (pattern_[pos_] == '*' || pattern_[pos_] == '+' || pattern_[pos_] == '?' || braces().has_value))
      fail(pattern_, pos_, "nothing to repeat");
  }

  struct Braces {
    bool has_value = false;
    uint32_t min = 0, max = 0;
    size_t end = 0;
  };
  // {n} {n,} {n,m} at pos_ (counts saturate above kMaxRepetition); has_value false when the text
  // there is not one (Annex B: then `{` is a literal).
  Braces braces() const {
    Braces b;
    size_t p = pos_;
    if (p >= pattern_.size() || pattern_[p] != '{') return b;
    const auto number = [&](uint32_t& value) {
      const size_t first = p;
      value = 0;
      while (p < pattern_.size() && is_digit(pattern_[p])) value = std::min(value * 10 + static_cast<uint32_t>(pattern_[p++] - '0'), kMaxRepetition + 1);
      return p > first;
    };
    ++p;
    if (!number(b.min)) return b;
    b.max = b.min;
    if (p < pattern_.size() && pattern_[p] == ',') {
      ++p;
      if (!number(b.max)) b.max = kUnbounded;
    }
    if (p >= pattern_.size() || pattern_[p] != '}') return b;
    b.end = p + 1;
    b.has_value = true;
    return b;
  }

  // Atom Quantifier?
  uint32_t parse_quantified(uint32_t atom, size_t offset) {
    Braces q;
    const size_t at = pos_;
    if (take('*')) q = {true, 0, kUnbounded, pos_};
    else if (take('+')) q = {true, 1, kUnbounded, pos_};
    else if (take('?')) q = {true, 0, 1, pos_};
    else if ((q = braces()).has_value) pos_ = q.end;
    else return atom;
    if (q.min > kMaxRepetition || (q.max != kUnbounded && q.max > kMaxRepetition))
      fail(pattern_, at, "a repetition count above " + std::to_string(kMaxRepetition));
    if (q.min > q.max) fail(pattern_, at, "repetition counts out of order");
    take('?');  // lazy: the same language
    const uint64_t copies = q.max == kUnbounded ? uint64_t{q.min} + 1 : q.max;
    return add({Node::Kind::repeat, {}, {atom}, q.min, q.max, (nodes_[atom].size + 2) * copies + 3}, offset);
  }

  uint32_t parse_atom() {
    const size_t offset = pos_;
    const int32_t c = next();
    switch (c) {
      case '.': return set_node(complemented({{'\n', '\n'}, {'\r', '\r'}, {0x2028, 0x2029}}), offset);
      case '(': return parse_group(offset);
      case '[': return set_node(parse_class(offset), offset);
      case '\\': return parse_atom_escape(offset);
      case '*': case '+': case '?': fail(pattern_, offset, "nothing to repeat");
      case '{':
        pos_ = offset;
        if (braces().has_value) fail(pattern_, offset, "nothing to repeat");
        ++pos_;
        [[fallthrough]];
      default: return set_node(normalized({{static_cast<uint32_t>(c), static_cast<uint32_t>(c)}}), offset);
    }
  }

  uint32_t parse_group(size_t offset) {
    enter(offset);
    if (take('?')) {
      if (take('<')) {
        if (take('=') || take('!')) fail(pattern_, offset, "a lookbehind");
        const size_t name = pos_;
        while (!at_end() && (is_ascii_alphanumeric(pattern_[pos_]) || pattern_[pos_] == '_' || pattern_[pos_] == '$')) ++pos_;
        if (pos_ == name || !take('>')) fail(pattern_, offset, "a bad group name");
      } else if (take('=') || take('!')) {
        fail(pattern_, offset, "a lookahead");
      } else if (!take(':')) {
        fail(pattern_, offset, "an unsupported group (?" + std::string(pattern_.substr(pos_, 1)));
      }
    }
    const uint32_t inner = parse_disjunction();
    if (!take(')')) fail(pattern_, offset, "an unterminated group");
    --depth_;
    return inner;
  }

  // `\` at offset, pos_ past it: AtomEscape (§22.2.1).
  uint32_t parse_atom_escape(size_t offset) {
    if (at_end()) fail(pattern_, offset, "\\ at the end of the pattern");
    const int32_t e = peek();
    if (e == 'b' || e == 'B') fail(pattern_, offset, "a word boundary \\" + std::string(1, static_cast<char>(e)));
    if ((is_digit(e) && e != '0') || e == 'k') fail(pattern_, offset, "a backreference");
    if (e == 'd' || e == 'D' || e == 'w' || e == 'W' || e == 's' || e == 'S') return ++pos_, set_node(class_escape_set(e), offset);
    const uint32_t c = parse_character_escape(offset);
    return set_node(normalized({{c, c}}), offset);
  }

  // CharacterEscape (§22.2.1) after `\` at offset: its code point (a lone surrogate matches nothing later).
  uint32_t parse_character_escape(size_t offset) {
    const int32_t e = next();
    switch (e) {
      case 't': return '\t';
      case 'n': return '\n';
      case 'v': return '\v';
      case 'f': return '\f';
      case 'r': return '\r';
      case 'c': {
        const int32_t letter = peek();
        if (!((letter >= 'a' && letter <= 'z') || (letter >= 'A' && letter <= 'Z'))) fail(pattern_, offset, "a bad \\c escape");
        ++pos_;
        return static_cast<uint32_t>(letter % 32);
      }
      case '0':
        if (is_digit(peek())) fail(pattern_, offset, "an octal escape");
        return 0;
      case 'x': return hex_digits(2, offset);
      case 'u': {
        if (take('{')) {
          uint32_t v = 0;
          const size_t first = pos_;
          while (hex_value(peek()) >= 0 && v <= kMaxCodePoint) v = v * 16 + static_cast<uint32_t>(hex_value(next()));
          if (pos_ == first || v > kMaxCodePoint || !take('}')) fail(pattern_, offset, "a bad \\u{...} escape");
          return v;
        }
        const uint32_t high = hex_digits(4, offset);
        // a surrogate pair written as two escapes is one code point (§22.2.1.1 RegExpUnicodeEscapeSequence)
        if (high >= 0xD800 && high <= 0xDBFF && pattern_.substr(pos_, 2) == "\\u") {
          const size_t back = pos_;
          pos_ += 2;
          bool four = true;
          for (size_t i = 0; i < 4; ++i) four = four && pos_ + i < pattern_.size() && hex_value(pattern_[pos_ + i]) >= 0;
          if (four) {
            const uint32_t low = hex_digits(4, back);
            if (low >= 0xDC00 && low <= 0xDFFF) return 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00);
          }
          pos_ = back;
        }
        return high;
      }
      default:
        // identity escapes: any code point but ASCII letters and digits (`\/`, `\-`, `\.`, `\ `, ...)
        if (e < 0 || is_ascii_alphanumeric(e)) fail(pattern_, offset, "an unknown escape \\" + std::string(pattern_.substr(offset + 1, 1)));
        return static_cast<uint32_t>(e);
    }
  }

  uint32_t hex_digits(int count, size_t offset) {
    uint32_t v = 0;
    for (int i = 0; i < count; ++i) {
      const int h = hex_value(peek());
      if (h < 0) fail(pattern_, offset, "a bad hexadecimal escape");
      ++pos_;
      v = v * 16 + static_cast<uint32_t>(h);
    }
    return v;
  }

  // CharacterClass (§22.2.1) from `[` at offset; Annex B: a range beside \d \w \s is its ends and `-`.
  CodeSet parse_class(size_t offset) {
    enter(offset);
    const bool negated = take('^');
    CodeSet ranges;
    while (!at_end() && pattern_[pos_] != ']') {
      CodeSet first_set;
      const uint32_t first = parse_class_atom(offset, first_set);
      if (!at_end() && pattern_[pos_] == '-' && pos_ + 1 < pattern_.size() && pattern_[pos_ + 1] != ']') {
        const size_t dash = pos_++;
        CodeSet last_set;
        const uint32_t last = parse_class_atom(offset, last_set);
        if (first_set.empty() && last_set.empty()) {
          if (first > last) fail(pattern_, dash, "a class range out of order");
          ranges.emplace_back(first, last);
          continue;
        }
        ranges.insert(ranges.end(), first_set.begin(), first_set.end());
        ranges.insert(ranges.end(), last_set.begin(), last_set.end());
        ranges.emplace_back('-', '-');
        if (first_set.empty()) ranges.emplace_back(first, first);
        if (last_set.empty()) ranges.emplace_back(last, last);
        continue;
      }
      if (first_set.empty()) ranges.emplace_back(first, first);
      ranges.insert(ranges.end(), first_set.begin(), first_set.end());
    }
    if (!take(']')) fail(pattern_, offset, "an unterminated character class");
    --depth_;
    CodeSet set = normalized(std::move(ranges));
    return negated ? complemented(set) : set;
  }

  // One ClassAtom: its code point, or (an escape like \d) its set in `set`.
  uint32_t parse_class_atom(size_t class_offset, CodeSet& set) {
    const size_t offset = pos_;
    const int32_t c = next();
    if (c != '\\') return static_cast<uint32_t>(c);
    if (at_end()) fail(pattern_, class_offset, "an unterminated character class");
    const int32_t e = peek();
    if (e == 'b') return ++pos_, 0x08;
    if (e == '-') return ++pos_, '-';
    if (e == 'd' || e == 'D' || e == 'w' || e == 'W' || e == 's' || e == 'S') {
      ++pos_;
      set = class_escape_set(e);  // never empty
      return 0;
    }
    if (is_digit(e) && e != '0') fail(pattern_, offset, "an octal escape");
    return parse_character_escape(offset);
  }

  // Thompson's construction: the fragment (start, end) of node `id`, recursing once per tree level
  // (the tree's depth is bounded by kMaxNesting).
  std::pair<uint32_t, uint32_t> build(Nfa& nfa, uint32_t id) {
    const Node& node = nodes_[id];
    const uint32_t start = new_state(nfa);
    uint32_t end = start;
    const auto link = [&](uint32_t from, uint32_t to, Nfa::Move move = Nfa::Move::empty) { nfa.states[from].moves.emplace_back(to, move); };
    switch (node.kind) {
      case Node::Kind::set:
        end = new_state(nfa);
        for (const CodeRange& r : node.set) nfa.states[start].edges.push_back({r.first, r.second, end});
        break;
      case Node::Kind::begin:
      case Node::Kind::end:
        end = new_state(nfa);
        link(start, end, node.kind == Node::Kind::begin ? Nfa::Move::begin : Nfa::Move::end);
        break;
      case Node::Kind::concat:
        for (const uint32_t child : node.children) {
          const auto [s, e] = build(nfa, child);
          link(end, s);
          end = e;
        }
        break;
      case Node::Kind::alternation:
        end = new_state(nfa);
        for (const uint32_t child : node.children) {
          const auto [s, e] = build(nfa, child);
          link(start, s);
          link(e, end);
        }
        break;
      case Node::Kind::repeat: {
        const uint32_t child = node.children[0], min = node.min, max = node.max;
        for (uint32_t i = 0; i < min; ++i) {  // x{n}: n copies
          const auto [s, e] = build(nfa, child);
          link(end, s);
          end = e;
        }
        if (max == kUnbounded) {  // then x*: a loop through one more copy
          const auto [s, e] = build(nfa, child);
          link(end, s);
          link(e, end);
        } else if (max > min) {  // then x? (max - min) times, each able to skip to the end
          const uint32_t last = new_state(nfa);
          for (uint32_t i = min; i < max; ++i) {
            const auto [s, e] = build(nfa, child);
            link(end, last);
            link(end, s);
            end = e;
          }
          link(end, last);
          end = last;
        }
        break;
      }
    }
    return {start, end};
  }

  uint32_t new_state(Nfa& nfa) {
    if (nfa.states.size() >= kMaxNfaSize + 2)  // never: the nodes' sizes bound it
      fail(pattern_, 0, "a pattern over " + std::to_string(kMaxNfaSize) + " automaton states and edges");
    nfa.states.emplace_back();
    return static_cast<uint32_t>(nfa.states.size() - 1);
  }

  std::string_view pattern_;
  size_t pos_ = 0;
  int depth_ = 0;
  std::vector<Node> nodes_;
};

}  // namespace

Nfa parse_pattern(std::string_view pattern) { return Parser(pattern).parse(); }

}  // namespace nf::grammar::regex_detail
