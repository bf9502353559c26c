#pragma once
// Internal to src/grammar/regex/: code point sets, the pattern parser's nondeterministic automaton
// and the raw deterministic automata that Automaton (grammar/regex.h) minimizes.
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace nf::grammar::regex_detail {

constexpr uint32_t kMaxCodePoint = 0x10FFFF;
constexpr uint32_t kSurrogateFirst = 0xD800, kSurrogateLast = 0xDFFF;

using CodeRange = std::pair<uint32_t, uint32_t>;  // [first, last]
using CodeSet = std::vector<CodeRange>;           // sorted, disjoint, not adjacent, no surrogates

// Sorts, merges and removes the surrogates (UTF-8 text cannot hold them).
CodeSet normalized(CodeSet ranges);
// Every code point (but the surrogates) not in `set`.
CodeSet complemented(const CodeSet& set);
// The code point after c, stepping over the surrogates (ranges either side of them are adjacent).
inline uint32_t next_code_point(uint32_t c) { return c == kSurrogateFirst - 1 ? kSurrogateLast + 1 : c + 1; }

// The code point starting at utf8[pos] (advancing pos), or -1 when the bytes there are not UTF-8
// (overlong forms, surrogates and values beyond U+10FFFF included).
int32_t decode_utf8(std::string_view utf8, size_t& pos);

// "regex: <what> at offset <offset> of /<pattern>/", one line: control characters in the pattern
// shown as \xHH, a pattern over 200 bytes cut there with "...".
[[noreturn]] void fail(std::string_view pattern, size_t offset, const std::string& what);

// A Thompson automaton (Russ Cox, "Regular Expression Matching Can Be Simple And Fast", 2007) over
// code point ranges. Besides plain empty moves it has the anchors' moves: `begin` (^) may be taken
// only before the first code point, `end` ($) only after the last.
struct Nfa {
  enum class Move : uint8_t { empty, begin, end };
  struct Edge {
    uint32_t first, last, target;
  };
  struct State {
    std::vector<Edge> edges;
    std::vector<std::pair<uint32_t, Move>> moves;
  };
  std::vector<State> states;
  uint32_t start = 0, accept = 0;
};

// The pattern (search semantics: Σ* before it and after it; see grammar/regex.h) as an Nfa whose
// `accept` state loops on every code point. Throws nf::Error on the refusals regex.h lists.
Nfa parse_pattern(std::string_view pattern);

// A deterministic automaton as built, before minimization: state 0 is the start.
struct Dfa {
  struct Edge {
    uint32_t first, last, target;
  };
  std::vector<std::vector<Edge>> edges;  // per state, sorted, disjoint
  std::vector<bool> accepting;
};

// The subset construction (Rabin & Scott 1959) of the pattern's Nfa: throws nf::Error once it
// reaches more than `max_states` states.
Dfa subset_construction(const Nfa& nfa, std::string_view pattern, size_t max_states);

}  // namespace nf::grammar::regex_detail
