// Leading lookaheads of a pattern as intersections of automata (schema/pattern.h).
#include "grammar/schema/pattern.h"

#include <optional>
#include <string>

namespace nf::grammar {
namespace {

// Where the group opened at `open` closes (escapes and classes skipped), or npos.
size_t group_end(std::string_view p, size_t open) {
  int depth = 0;
  bool in_class = false;
  for (size_t i = open; i < p.size(); ++i) {
    const char c = p[i];
    if (c == '\\') {
      ++i;
    } else if (in_class) {
      in_class = c != ']';
    } else if (c == '[') {
      in_class = true;
    } else if (c == '(') {
      ++depth;
    } else if (c == ')' && --depth == 0) {
      return i;
    }
  }
  return std::string_view::npos;
}

}  // namespace

Automaton pattern_automaton(std::string_view pattern) {
  if (pattern.substr(0, 4) != "^(?!" && pattern.substr(0, 4) != "^(?=") return Automaton::regex(pattern);
  std::string_view rest = pattern.substr(1);
  std::optional<Automaton> asserted;
  while (rest.size() >= 3 && rest.substr(0, 2) == "(?" && (rest[2] == '!' || rest[2] == '=')) {
    const size_t close = group_end(rest, 0);
    if (close == std::string_view::npos) return Automaton::regex(pattern);  // refused there, named
    std::string inner = "^(?:";  // (appended, not operator+: GCC 12 warns -Wrestrict on that falsely)
    inner.append(rest.substr(3, close - 3)).append(")");
    const Automaton prefixed = Automaton::regex(inner);
    const Automaton one = rest[2] == '!' ? prefixed.complement() : prefixed;
    asserted = asserted ? asserted->intersect(one) : one;
    rest = rest.substr(close + 1);
  }
  std::string anchored = "^";
  anchored.append(rest);
  return asserted->intersect(Automaton::regex(anchored));
}

}  // namespace nf::grammar
