// Regular expressions (grammar/regex.h), as JSON Schema's `pattern` reaches them from a request's
// schema: the input as a pattern. Bad input must end in a one-line nf::Error "regex: ..."; an
// automaton's json_string_rules must compile, and its grammar, `matches`, the complement and the
// lengths must agree on strings cut from the input and a few fixed ones.
#include <memory>
#include <optional>

#include "fuzz_support.h"
#include "nanoformer/grammar/grammar.h"
#include "nanoformer/grammar/matcher.h"
#include "nanoformer/grammar/regex.h"

using namespace nf;
using namespace nf::grammar;

namespace {

bool valid_utf8(std::string_view s) {
  static const Automaton any = Automaton::any_string();
  return any.matches(s);
}

// The contents of a JSON string whose value is `s`, escaped as regex.h says the rules spell it.
std::string json_escaped(std::string_view s) {
  static const char* const kHex = "0123456789abcdef";
  std::string out;
  for (const char c : s) {
    const auto b = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') out += '\\', out += c;
    else if (c == '\b') out += "\\b";
    else if (c == '\t') out += "\\t";
    else if (c == '\n') out += "\\n";
    else if (c == '\f') out += "\\f";
    else if (c == '\r') out += "\\r";
    else if (b < 0x20) out += std::string("\\u00") + kHex[b >> 4] + kHex[b & 15];
    else out += c;
  }
  return out;
}

void check(const Automaton& a, const std::shared_ptr<const Grammar>& grammar, const std::optional<Automaton>& complement, std::string_view s) {
  if (!valid_utf8(s)) {
    NF_FUZZ_CHECK(!a.matches(s), "invalid UTF-8 matches");
    return;
  }
  const bool matches = a.matches(s);
  NF_FUZZ_CHECK(!complement || complement->matches(s) != matches, "the complement agrees with the automaton");
  if (matches) {
    int64_t length = 0;  // code points: the bytes that do not continue one
    for (const char c : s) length += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    NF_FUZZ_CHECK(a.min_length() <= length && (a.max_length() < 0 || length <= a.max_length()), "a match outside min_length..max_length");
  }
  if (!grammar) return;
  GrammarMatcher m(grammar);
  const std::string quoted = '"' + json_escaped(s) + '"';
  const bool accepted = m.accept(quoted) && GrammarMatcher::can_end(m.state());
  NF_FUZZ_CHECK(accepted == matches, "json_string_rules and matches disagree on \"", json_escaped(s), "\"");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view pattern = fuzz::as_text(data, size);
  Automaton a;
  try {
    a = Automaton::regex(pattern);
  } catch (const Error& e) {
    const std::string_view what = e.what();
    NF_FUZZ_CHECK(what.rfind("regex: ", 0) == 0 && what.find('\n') == std::string_view::npos, "a bad refusal: ", what);
    return 0;
  }
  std::shared_ptr<const Grammar> grammar;
  if (!a.empty()) grammar = std::make_shared<const Grammar>(compile_gbnf("root ::= \"\\\"\" p \"\\\"\"\n" + a.json_string_rules("p")));
  std::optional<Automaton> complement;  // none when it is over the budget (one state more than a's)
  if (fuzz::expect_nf_error([&] { complement = a.complement(); }))
    NF_FUZZ_CHECK(complement->complement().states() == a.states(), "the complement's complement is not the same minimal automaton");
  for (const std::string_view s : {std::string_view(), std::string_view("a"), std::string_view("0\"\\\n\x01\xC3\xA9\xF0\x9F\x98\x80")})
    check(a, grammar, complement, s);
  // pieces of the input: its literal characters make likely matches
  for (size_t cut = 0; cut < 8 && cut <= size; ++cut) {
    check(a, grammar, complement, pattern.substr(cut * size / 8));
    check(a, grammar, complement, pattern.substr(0, cut * size / 8));
  }
  std::string unescaped;
  for (const char c : pattern)
    if (c != '\\' && c != '^' && c != '$' && c != '(' && c != ')' && c != '[' && c != ']' && c != '*' && c != '+' && c != '?') unescaped += c;
  check(a, grammar, complement, unescaped);
  return 0;
}
