#pragma once
// Regular languages over Unicode code points as minimal deterministic automata: ECMA-262 regular
// expressions (JSON Schema's `pattern`, `patternProperties`, and the patterns of `format`) compiled
// to them, combined (intersection, complement), and written as grammar rules (grammar.h) that spell
// the accepted strings as the contents of a JSON string.
//
//   Automaton::regex("^[a-z]+(-[a-z]+)*$").intersect(Automaton::length(1, 64)).json_string_rules("key")
//
// The regular expressions are ECMA-262's (the dialect JSON Schema names, without flags: no `i`, `m`,
// `s`; `u` semantics for escapes): literals, `.` (any code point but \n \r U+2028 U+2029), classes
// `[a-z]` `[^...]` with escapes inside, \d \D \w \W \s \S (ECMA's sets: \d is [0-9], \w
// [A-Za-z0-9_], \s its whitespace and line terminators), escapes \t \n \v \f \r \0 \cX \xHH \uHHHH
// \u{H...} and identity escapes, groups `(...)` `(?:...)` `(?<name>...)`, alternation, quantifiers
// ? * + {n} {n,} {n,m} and their lazy forms (the same language), anchors ^ and $. As JavaScript
// engines do (ECMA-262 Annex B), `{` `}` `]` that start no quantifier and close no class are
// literals, and a class range with \d \w \s at an end (`[\w-.]`) is its ends and `-`; a pair of
// \uHHHH surrogates is one code point, and a lone surrogate matches nothing. A pattern matches
// a string when it matches some substring of it (JSON Schema's search semantics): parts not anchored
// by ^ (at the start) or $ (at the end) may have any text before or after them. What is not regular,
// or not supported, is refused with nf::Error ("regex: <what> at offset <n> of /<pattern>/", on one
// line: control characters in the pattern shown as \xHH, a pattern cut after 200 bytes with "..."):
// backreferences, lookahead and lookbehind, \b \B, an anchor that is neither at the start nor at the
// end of its alternative, and a pattern or automaton beyond the budgets (kMaxPatternBytes,
// kMaxStates, repetition counts above 1000, groups nested deeper than 256, and the work of building
// one: 2^20 states and edges of its nondeterministic automaton, 2^24 subset-construction steps).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace nf::grammar {

namespace regex_detail {
struct Dfa;  // src/grammar/regex/regex_internal.h
}

class Automaton {
 public:
  static constexpr size_t kMaxPatternBytes = 10000;
  static constexpr size_t kMaxStates = 4096;  // of any automaton built (subset construction, products)

  Automaton() = default;  // matches nothing

  // The strings `pattern` matches (search semantics, above).
  static Automaton regex(std::string_view pattern);
  // Every string; the one string `utf8`; the strings of min..max code points (max < 0: no bound).
  static Automaton any_string();
  static Automaton literal(std::string_view utf8);
  static Automaton length(int64_t min, int64_t max);

  Automaton intersect(const Automaton& other) const;  // both match
  Automaton complement() const;                       // every string this one does not match
  bool empty() const;                                 // matches nothing
  bool matches(std::string_view utf8) const;          // invalid UTF-8 never matches
  size_t states() const { return accepting_.size(); }
  // The fewest and the most code points of a matched string (most: -1 when unbounded; both -1 when empty()).
  int64_t min_length() const;
  int64_t max_length() const;

  // GBNF rules (grammar.h), one per state, right-linear (`name` is the start state, the others
  // `name`-s1, `name`-s2, ..., apart from the `name`-0, `name`-1, ... that compile_gbnf and other
  // writers generate): their language is the contents of a JSON string (between its quotes,
  // without them) whose value this automaton matches, escaped as JSON requires and nothing more:
  // `"` as \", `\` as \\, U+0008 U+0009 U+000A U+000C U+000D as \b \t \n \f \r, the other code
  // points below U+0020 as \u00XX (lower-case hex), every other code point as its UTF-8 bytes.
  // Throws nf::Error when empty(): no GBNF rule matches nothing.
  std::string json_string_rules(const std::string& name) const;

 private:
  struct Transition {
    uint32_t first, last;  // a range of code points (it may span the surrogates, which no input holds)
    uint32_t target;
  };
  // state 0 is the start; transitions of a state sorted, ranges disjoint; no transition: dead.
  // Default-constructed: one dead state, the empty language.
  std::vector<std::vector<Transition>> transitions_ = std::vector<std::vector<Transition>>(1);
  std::vector<bool> accepting_ = std::vector<bool>(1, false);

  // `dfa` trimmed (states that reach no accepting state dropped) and minimized (Moore's partition
  // refinement), its states numbered breadth-first from the start: equal languages, equal automata.
  static Automaton minimal(const regex_detail::Dfa& dfa);
};

}  // namespace nf::grammar
