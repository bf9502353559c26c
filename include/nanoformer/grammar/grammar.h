#pragma once
// A context-free grammar over bytes, compiled from GBNF text (llama.cpp's grammar format, a subset):
//
//   root   ::= "{" ws pair ("," ws pair)* "}"      # rules; `root` is where the language starts
//   pair   ::= [a-z]+ ":" ws ("true" | "false")   # literals, classes, groups, alternation
//   ws     ::= [ \t\n]{0,4}                        # ?, *, +, {m}, {m,}, {m,n}; comments with #
//
// Literals are "..." (escapes \n \r \t \\ \" \xHH \uHHHH \UHHHHHHHH; other bytes as they are);
// classes [a-z0-9_] or negated [^"\\] are over Unicode code points and `.` is any code point. A
// class is compiled to byte sequences (its code point ranges split into UTF-8 byte ranges), so
// the grammar matches UTF-8 text byte by byte. Groups and repetitions become rules of their own:
//   x* -> r ::= x r |      x+ -> x x*      x? -> r ::= x |      x{m,n} -> m times x, then n - m nested x?
// Compiling refuses (nf::Error, one line naming the rule or the line:column): a syntax error, an
// undefined rule, no `root`, a left-recursive rule (r ::= r "x", or a repetition of something that
// can be empty: the matcher could expand it forever), a rule that can never end (r ::= "x" r), and
// a grammar whose repetitions expand to more than 2^18 rules, a lone surrogate escape (\uD800), and
// groups nested deeper than 256 (the parser recurses once a group; every other pass is iterative
// and linear in the grammar's size).
#include <bitset>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace nf::grammar {

struct Grammar {
  enum class Kind : uint8_t { bytes, rule, end };
  struct Element {
    Kind kind;
    uint32_t value;  // bytes: an index into byte_sets; rule: a rule id; end: the rule's id
  };
  std::vector<Element> elements;                    // every alternative's elements, each run followed by an end
  std::vector<std::bitset<256>> byte_sets;          // the bytes one `bytes` element matches
  std::vector<std::vector<uint32_t>> alternatives;  // per rule: where each alternative starts in elements
  std::vector<std::string> rule_names;              // per rule (generated ones: "<parent>-<n>")
  uint32_t root = 0;
};

// Compiles GBNF text; throws nf::Error (one line) on the faults listed above.
Grammar compile_gbnf(std::string_view text);
// A GBNF literal of exactly these bytes: "..." with " and \ escaped, bytes below 0x20 as \xHH.
std::string gbnf_literal(std::string_view bytes);

}  // namespace nf::grammar
