// Automaton::json_string_rules (grammar/regex.h): one right-linear GBNF rule per state, spelling
// each code point as JSON writes it inside a string (RFC 8259 §7, with the short escapes).
#include <cstdio>
#include <map>

#include "nanoformer/core/error.h"
#include "nanoformer/grammar/regex.h"
#include "regex_internal.h"

namespace nf::grammar {
namespace {

// A code point inside a GBNF class: \uHHHH or \UHHHHHHHH.
std::string class_char(uint32_t c) {
  char out[16];
  if (c <= 0xFFFF) std::snprintf(out, sizeof out, "\\u%04X", c);
  else std::snprintf(out, sizeof out, "\\U%08X", c);
  return out;
}

// The GBNF literal of the JSON escape of a code point that JSON must escape ("\\\"" for `"`).
std::string escaped_literal(uint32_t c) {
  switch (c) {
    case '"': return "\"\\\\\\\"\"";
    case '\\': return "\"\\\\\\\\\"";
    case 0x08: return "\"\\\\b\"";
    case 0x09: return "\"\\\\t\"";
    case 0x0A: return "\"\\\\n\"";
    case 0x0C: return "\"\\\\f\"";
    case 0x0D: return "\"\\\\r\"";
    default: {
      char out[16];
      std::snprintf(out, sizeof out, "\"\\\\u%04x\"", c);
      return out;
    }
  }
}

bool must_escape(uint32_t c) { return c < 0x20 || c == '"' || c == '\\'; }

}  // namespace

std::string Automaton::json_string_rules(const std::string& name) const {
  NF_CHECK(!empty(), "regex: json_string_rules: the automaton of rule '", name, "' matches no string");
  const auto rule = [&](uint32_t s) { return s == 0 ? name : name + "-s" + std::to_string(s); };
  std::string out;
  for (uint32_t s = 0; s < states(); ++s) {
    // per target: the code points written as themselves (one class) and those escaped
    std::map<uint32_t, regex_detail::CodeSet> plain;
    std::map<uint32_t, std::vector<uint32_t>> escaped;
    for (const Transition& t : transitions_[s]) {
      uint32_t first = t.first;
      for (; first <= t.last && must_escape(first); ++first) escaped[t.target].push_back(first);
      // what is left: plain code points, save `"` and `\` inside [first, last]
      for (const uint32_t special : {uint32_t{'"'}, uint32_t{'\\'}})
        if (first <= special && special <= t.last) {
          if (first < special) plain[t.target].emplace_back(first, special - 1);
          escaped[t.target].push_back(special);
          first = special + 1;
        }
      if (first <= t.last) plain[t.target].emplace_back(first, t.last);
    }
    std::string alternatives;
    const auto add = [&](const std::string& alternative) { alternatives += (alternatives.empty() ? "" : " | ") + alternative; };
    for (auto& [target, ranges] : plain) {
      std::string cls = "[";
      for (const auto& [first, last] : regex_detail::normalized(std::move(ranges)))
        cls += first == last ? class_char(first) : class_char(first) + "-" + class_char(last);
      add(cls + "] " + rule(target));
    }
    for (const auto& [target, points] : escaped)
      for (const uint32_t c : points) add(escaped_literal(c) + " " + rule(target));
    if (accepting_[s]) alternatives += alternatives.empty() ? "\"\"" : " |";
    out += rule(s) + " ::= " + alternatives + "\n";
  }
  return out;
}

}  // namespace nf::grammar
