#pragma once
// JSON Schema's `pattern` as an automaton (grammar/regex.h), with the one use of lookahead that
// schemas make and that stays regular: assertions right after a leading ^, as in
// "^(?!interactive|name|style).+$" (every name but those). ^(?!X)Y matches the strings Y matches
// that no X matches a prefix of: L(^Y) minus L(^X) (search semantics: ^X alone is "X then
// anything"); ^(?=X)Y those that some X does: L(^Y) and L(^X).
#include <string_view>

#include "nanoformer/grammar/regex.h"

namespace nf::grammar {

// Automaton::regex(pattern), leading lookaheads included; throws nf::Error as it does.
Automaton pattern_automaton(std::string_view pattern);

}  // namespace nf::grammar
