// Grammars for constrained decoding: GBNF compiled to a byte grammar (grammar/grammar.h), JSON Schema
// to GBNF (grammar/json_schema.h), the matcher (grammar/matcher.h) and the token masks
// (grammar/constraint.h). The masks are checked against a brute force: a backtracking
// recognizer over the compiled grammar's alternatives (independent of the matcher's stacks, the
// trie and the cache) that says whether a byte string is a prefix of the grammar's language; a token
// must be allowed exactly when appending its bytes keeps the output such a prefix.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <algorithm>
#include <random>
#include <sstream>

#include "nanoformer/core/error.h"
#include "nanoformer/grammar/grammar.h"
#include "nanoformer/grammar/constraint.h"
#include "nanoformer/grammar/json_schema.h"

namespace nf::grammar {
namespace {

using json = nlohmann::ordered_json;

std::shared_ptr<const Grammar> gbnf(std::string_view text) { return std::make_shared<const Grammar>(compile_gbnf(text)); }

// Whether the elements from `at` to their alternative's end can match nothing.
bool derives_empty(const Grammar& g, uint32_t at) {
  for (;; ++at) {
    const Grammar::Element& e = g.elements[at];
    if (e.kind == Grammar::Kind::end) return true;
    if (e.kind == Grammar::Kind::bytes) return false;
    bool any = false;
    for (const uint32_t start : g.alternatives[e.value]) any = any || derives_empty(g, start);
    if (!any) return false;
  }
}

// Whether s[i..] can be matched by the pending elements (a stack of positions, top at the back):
// with any rest of the stack left over (every rule can end: compile_gbnf checks it), or, when
// `whole`, with a rest that can match nothing (s is then a sentence).
bool prefix_match(const Grammar& g, std::vector<uint32_t> stack, const std::string& s, size_t i, bool whole,
                  int budget = 0) {
  if (i == s.size())
    return !whole || std::all_of(stack.begin(), stack.end(), [&](uint32_t at) { return derives_empty(g, at); });
  if (budget > 2000) return false;  // a pathological expansion; the grammars here never get near
  while (!stack.empty()) {
    const uint32_t at = stack.back();
    stack.pop_back();
    const Grammar::Element& e = g.elements[at];
    if (e.kind == Grammar::Kind::end) continue;
    stack.push_back(at + 1);
    if (e.kind == Grammar::Kind::bytes) {
      if (!g.byte_sets[e.value].test(static_cast<uint8_t>(s[i]))) return false;
      return prefix_match(g, std::move(stack), s, i + 1, whole, budget + 1);
    }
    for (const uint32_t start : g.alternatives[e.value]) {
      std::vector<uint32_t> next = stack;
      next.push_back(start);
      if (prefix_match(g, std::move(next), s, i, whole, budget + 1)) return true;
    }
    return false;
  }
  return false;  // the grammar ended with bytes left
}
bool is_prefix(const Grammar& g, const std::string& s, bool whole = false) {
  for (const uint32_t start : g.alternatives[g.root])
    if (prefix_match(g, {start}, s, 0, whole)) return true;
  return false;
}

// Whether s is a whole sentence of the grammar (the matcher's view: it can end after s).
bool is_sentence(std::shared_ptr<const Grammar> g, const std::string& s) {
  GrammarMatcher m(std::move(g));
  return m.accept(s) && GrammarMatcher::can_end(m.state());
}

// A small vocabulary that can spell JSON: single bytes, some multi-byte pieces (a UTF-8 letter
// split over two tokens too), a token with a newline, one no grammar here allows; the last id is the end.
std::vector<std::string> small_vocab() {
  std::vector<std::string> v;
  for (const char c : std::string("{}[]\":, 0123456789-.eEabcdfilnrstu\\\n\t"))
    v.push_back(std::string(1, c));
  for (const char* piece : {"{\"", "\":", "\",", "\"}", "true", "false", "null", "ab", "\"a", "12", "0.", "é", "\xC3",
                            "\xA9", "\\n", "\\u00e9", "}]", "[{", "\n  ", "\x01", "aé\""})
    v.emplace_back(piece);
  v.emplace_back("");  // the end id: no bytes
  return v;
}

// For prefixes reached by random walks (each step a random allowed token), the mask equals the
// brute force for every token, and the end id is allowed exactly where the output is a sentence.
void expect_masks_match_brute_force(const std::string& grammar_text, uint64_t seed) {
  SCOPED_TRACE(grammar_text.substr(0, 200));
  const auto grammar = gbnf(grammar_text);
  const std::vector<std::string> vocab = small_vocab();
  const int64_t eos = static_cast<int64_t>(vocab.size()) - 1;
  const auto trie = std::make_shared<const TokenTrie>(vocab);
  std::mt19937_64 rng(seed);
  int checked = 0;
  for (int walk = 0; walk < 6; ++walk) {
    GrammarConstraint constraint(grammar, trie, {eos});
    std::string prefix;
    for (int step = 0; step < 24; ++step) {
      std::vector<int64_t> allowed;
      for (int64_t id = 0; id < static_cast<int64_t>(vocab.size()); ++id) {
        const bool expected = id == eos ? is_prefix(*grammar, prefix, true) : is_prefix(*grammar, prefix + vocab[id]);
        ASSERT_EQ(constraint.allowed(id), expected) << "token " << id << " '" << vocab[id] << "' after '" << prefix << "'";
        if (expected && id != eos) allowed.push_back(id);
        ++checked;
      }
      if (allowed.empty()) break;
      const int64_t id = allowed[rng() % allowed.size()];
      constraint.accept(id);
      prefix += vocab[id];
    }
  }
  EXPECT_GT(checked, 500);
}

TEST(Grammar, MasksEqualBruteForceOverGbnfGrammars) {
  expect_masks_match_brute_force(R"(root ::= "{" ws pair ("," ws pair)* "}"
pair ::= [a-f]+ ":" ws ("true" | "false" | num)
num  ::= "-"? [0-9]{1,3} ("." [0-9]+)?
ws   ::= [ \n]?)", 1);
  expect_masks_match_brute_force(R"(root ::= item+
item ::= "a" | "ab" | [^a-z{}\[\]"\\0-9]   # non-ASCII code points too (UTF-8 byte sequences)
)", 2);
  expect_masks_match_brute_force(R"(root ::= ( "[" list? "]" ) | "null"
list ::= root ( "," root ){0,3})", 3);
}

TEST(Grammar, MasksEqualBruteForceOverJsonSchemas) {
  expect_masks_match_brute_force(json_object_gbnf(), 4);
  const std::vector<json> schemas = {
      json::parse(R"({"type": "object", "properties": {"a": {"type": "string", "maxLength": 4},
                      "b": {"type": "integer"}, "c": {"type": "boolean"}}, "required": ["b"],
                      "additionalProperties": false})"),
      json::parse(R"({"type": "array", "items": {"anyOf": [{"type": "number"}, {"type": "null"},
                      {"enum": ["ab", 1, true]}]}, "minItems": 1, "maxItems": 3})"),
      json::parse(R"({"$defs": {"node": {"type": "object", "properties": {"n": {"type": "integer"},
                      "c": {"type": "array", "items": {"$ref": "#/$defs/node"}}}, "required": ["n", "c"]}},
                      "$ref": "#/$defs/node"})"),
      json::parse(R"({"type": ["string", "null"], "minLength": 1})"),
  };
  for (size_t i = 0; i < schemas.size(); ++i) expect_masks_match_brute_force(json_schema_grammar(schemas[i]).gbnf, 10 + i);
}

TEST(Grammar, JsonObjectGrammarAcceptsJsonObjectsOnly) {
  const auto g = gbnf(json_object_gbnf());
  for (const char* text : {R"({})", R"({"a": [1, -2.5e3, "x\u00e9\n", null, true, {"b": {}}]})", "{\n  \"é\": \"ü\"}"})
    EXPECT_TRUE(is_sentence(g, text)) << text;
  for (const char* text : {R"([])", R"({"a"})", R"({"a": 01})", "{\"a\": \"\x01\"}", R"({"a": 1,})", R"("x")"})
    EXPECT_FALSE(is_sentence(g, text)) << text;
}

TEST(Grammar, SchemaGrammarAcceptsWhatValidates) {
  const json schema = json::parse(R"({"type": "object", "properties": {"name": {"type": "string"},
      "tags": {"type": "array", "items": {"enum": ["x", "y"]}, "maxItems": 2}, "age": {"type": "integer"}},
      "required": ["name", "age"], "additionalProperties": false})");
  const auto g = gbnf(json_schema_grammar(schema).gbnf);
  EXPECT_TRUE(is_sentence(g, R"({"name": "n", "age": 3})"));
  EXPECT_TRUE(is_sentence(g, R"({"name":"n","tags":["y","x"],"age":-3})"));
  EXPECT_FALSE(is_sentence(g, R"({"age": 3, "name": "n"})"));  // properties come in their order
  EXPECT_FALSE(is_sentence(g, R"({"name": "n"})"));            // age is required
  EXPECT_FALSE(is_sentence(g, R"({"name": "n", "tags": ["x", "y", "x"], "age": 1})"));
  EXPECT_FALSE(is_sentence(g, R"({"name": "n", "age": 1.5})"));
}

// The one-line error of `f`, or "" when it does not throw.
template <class F>
std::string error_of(F f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Grammar, BadGbnfIsRefusedWithOneLineNamingTheFault) {
  std::vector<std::pair<std::string, std::string>> cases = {
      {"root ::= \"a", "an unterminated literal at line 1, column 12"},
      {"root ::= x", "the rule 'x' is used but never defined"},
      {"a ::= \"x\"", "no rule 'root'"},
      {"root ::= root \"x\" | \"y\"", "the rule 'root' is left-recursive"},
      {"root ::= (\"x\"?)*", "is left-recursive"},
      {"root ::= \"x\" root", "the rule 'root' can never end"},
      {"root ::= [b-a]", "a bad class range"},
      {"root ::= \"a\" ::= \"b\"", "unexpected ':'"},
      {"root ::= \"\\q\"", "unknown escape: '\\' followed by 'q'"},
      {"root ::= \"\\\n\"", "unknown escape: '\\' followed by byte 0x0a"},  // (a fuzz finding: a newline in the error)
      {"root ::= \"a\"{3,1}", "{m,n} with n < m"},
      {"root ::= *", "'*' with nothing before it"},
      {"root ::= \"a\"\nroot ::= \"b\"", "the rule 'root' is defined twice"},
  };
  std::string many = "root ::= ";
  for (int i = 0; i < 300; ++i) many += "\"a\"{0,1000} ";
  cases.emplace_back(many, "the grammar expands to more than 262144 rules");
  for (const auto& [text, message] : cases) {
    const std::string e = error_of([&] { compile_gbnf(text); });
    EXPECT_NE(e.find(message), std::string::npos) << text << " -> " << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  }
}

TEST(Grammar, SchemaFaultsAreNamed) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"type": "object", "properties": {}, "required": ["x"], "additionalProperties": false})",
       "no JSON value satisfies the schema"},
      {R"({"$ref": "#/$defs/missing"})", "the $ref '#/$defs/missing' at # is not found"},
      {R"({"$ref": "other.json#/a"})", "the $ref 'other.json#/a' at # points outside the schema"},
      {R"({"type": "float"})", "the type 'float' at # is not a JSON Schema type"},
      {R"({"type": "object", "properties": {"a": {"minLength": "3"}}})", "'minLength' at #/properties/a must be a non-negative integer"},
      {R"({"type": "array", "items": {"type": "object"}, "uniqueItems": true, "minItems": 2})",
       "'uniqueItems' at # cannot be written as a grammar"},
      {R"x({"type": "string", "pattern": "(a)\\1"})x", "'pattern' at # cannot be written as a grammar (regex: "},
  };
  for (const auto& [schema, message] : cases) {
    const std::string e = error_of([&] { json_schema_grammar(json::parse(schema)); });
    EXPECT_NE(e.find(message), std::string::npos) << schema << " -> " << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  }
}

// Hostile grammars (issue 39): each is refused with one line naming the budget it passes, or
// compiled and matched, in time linear in its size and without recursion on the C++ stack.

// root ::= r0, r0 ::= r1, ..., r{n-1} ::= "x"; with `twice`, each rule's one alternative given twice.
std::string chain(int n, bool twice) {
  std::ostringstream text;
  text << "root ::= r0\n";
  for (int i = 0; i + 1 < n; ++i) {
    text << 'r' << i << " ::= r" << i + 1;
    if (twice) text << " | r" << i + 1;
    text << '\n';
  }
  text << 'r' << n - 1 << " ::= \"x\"\n";
  return text.str();
}

TEST(Grammar, DeepGroupsAreRefusedAtADocumentedDepthNotByTheStack) {
  const auto nested = [](int depth) { return "root ::= " + std::string(depth, '(') + "\"a\"" + std::string(depth, ')'); };
  const auto at_limit = gbnf(nested(256));  // the documented depth compiles and matches
  GrammarMatcher m(at_limit);
  EXPECT_TRUE(m.accept("a"));
  EXPECT_TRUE(GrammarMatcher::must_end(m.state()));
  for (const int depth : {257, 5'000, 20'000, 100'000}) {
    const std::string e = error_of([&] { compile_gbnf(nested(depth)); });
    EXPECT_NE(e.find("grammar: groups nested deeper than 256 at line 1, column 266"), std::string::npos) << depth << " -> " << e;
  }
}

TEST(Grammar, ALongChainOfUnitRulesCompilesAndMatches) {
  // r0 ::= r1, r1 ::= r2, ...: 60,000 rules, defined in the order that made the old fixpoint quadratic
  const auto g = gbnf(chain(60'000, false));  // (quadratic before: 20 s at 50,000 rules; compile times in tools/serve/grammar_budget.py)
  GrammarMatcher m(g);  // the first state expands the whole chain
  EXPECT_TRUE(m.accept("x"));
  EXPECT_TRUE(GrammarMatcher::must_end(m.state()));
  // a chain longer than one step's budget is refused, naming it
  const auto too_long = gbnf(chain(70'000, false));
  EXPECT_NE(error_of([&] { GrammarMatcher{too_long}; }).find("reaches more than 65536 rule positions"), std::string::npos);
}

TEST(Grammar, ExpansionsThatBranchAndMeetAgainCostTheirDistinctPositions) {
  // r0 ::= r1 | r1, r1 ::= r2 | r2, ...: 2^40 paths to one byte, 40 positions
  GrammarMatcher m(gbnf(chain(40, true)));
  EXPECT_TRUE(m.accept("x"));
  // nested repetitions of something that may be empty: a million stacks from the first byte on
  const std::string e = error_of([&] { GrammarMatcher{gbnf("root ::= ((\"a\"{0,1000}){0,1000}){0,1000}")}; });
  EXPECT_NE(e.find("grammar: one step of the grammar reaches more than 65536 rule positions"), std::string::npos) << e;
}

TEST(Grammar, SchemasNestedAHundredThousandDeepAreRefusedByDepth) {
  constexpr size_t kDeep = 100'000;
  std::string items;
  for (size_t i = 0; i < kDeep; ++i) items += R"({"type": "array", "items": )";
  items += R"({"type": "string"})" + std::string(kDeep, '}');
  std::string any_of;  // nested through a list, too
  for (size_t i = 0; i < kDeep; ++i) any_of += R"({"anyOf": [)";
  any_of += R"({"type": "null"})";
  for (size_t i = 0; i < kDeep; ++i) any_of += "]}";
  for (const std::string& schema : {items, any_of})
    EXPECT_NE(error_of([&] { json_schema_grammar(json::parse(schema)); }).find("json_schema: schemas nested deeper than 256"),
              std::string::npos);
}

TEST(Grammar, ALoneSurrogateIsNotACharacter) {
  EXPECT_NE(error_of([] { compile_gbnf(R"(root ::= "\uD800")"); }).find("the surrogate U+D800 is not a character"),
            std::string::npos);
  EXPECT_NE(error_of([] { compile_gbnf(R"(root ::= "a\U0000DFFF")"); }).find("the surrogate U+DFFF"), std::string::npos);
  GrammarMatcher m(gbnf(R"(root ::= "\uD7FF\uE000")"));  // its neighbours are characters
  EXPECT_TRUE(m.accept("\xED\x9F\xBF\xEE\x80\x80"));
}

TEST(Grammar, RepetitionKeepsTheStateSoMasksAreCached) {
  // inside a string the state after each character is the same set of stacks (tail calls)
  const auto g = gbnf(json_object_gbnf());
  GrammarMatcher m(g);
  ASSERT_TRUE(m.accept(R"({"key": "ab)"));
  const GrammarMatcher::State inside = m.state();
  ASSERT_TRUE(m.accept("cdefgh"));
  EXPECT_EQ(m.state(), inside);
}

}  // namespace
}  // namespace nf::grammar
