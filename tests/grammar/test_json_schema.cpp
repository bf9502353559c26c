// JSON Schema to grammar (grammar/json_schema.h): how each draft's keywords are read, what is
// ignored, how applicators combine, and the strict / approximate policy. Every keyword's accept /
// reject agreement with the `jsonschema` package is test_json_schema_oracle.cpp's; these are the
// cases that pin down the compiler's own decisions.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "nanoformer/core/error.h"
#include "nanoformer/grammar/grammar.h"
#include "nanoformer/grammar/json_schema.h"
#include "nanoformer/grammar/matcher.h"

namespace nf::grammar {
namespace {

using json = nlohmann::ordered_json;

struct Language {
  std::shared_ptr<const Grammar> grammar;
  explicit Language(const std::string& schema, SchemaOptions options = {})
      : grammar(std::make_shared<const Grammar>(compile_gbnf(json_schema_grammar(json::parse(schema), options).gbnf))) {}
  bool operator()(const std::string& text) const {
    GrammarMatcher m(grammar);
    return m.accept(text) && GrammarMatcher::can_end(m.state());
  }
};

std::string error_of(const std::string& schema, SchemaOptions options = {}) {
  try {
    json_schema_grammar(json::parse(schema), options);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(JsonSchema, AnnotationsUnknownKeywordsAndExtensionsAreIgnored) {
  const Language plain(R"({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]})");
  const Language noisy(R"({"type": "object", "properties": {"a": {"type": "integer", "x-kubernetes-int-or-string": true,
      "descripton": "a typo", "_format": "int32", "readOnly": true, "examples": [1]}}, "required": ["a"],
      "self": {"vendor": "com.acme", "name": "e", "format": "jsonschema", "version": "1-0-0"},
      "$comment": "c", "title": "t", "id": "x", "x-nf-types": 0})");
  for (const char* text : {R"({"a":1})", R"({"a": -20})", R"({"a":1.5})", R"({})", R"({"a":"1"})"})
    EXPECT_EQ(plain(text), noisy(text)) << text;
  EXPECT_TRUE(noisy(R"({"a":1})"));
}

TEST(JsonSchema, KeywordsAreReadAsTheirDraftMeansThem) {
  // draft-04: exclusiveMaximum is a boolean beside maximum; const is not a keyword yet
  const Language d4(R"({"$schema": "http://json-schema.org/draft-04/schema#", "type": "integer", "maximum": 5,
      "exclusiveMaximum": true, "const": 99})");
  EXPECT_TRUE(d4("4"));
  EXPECT_FALSE(d4("5"));
  // 2020-12: exclusiveMaximum is a number; const asserts
  const Language d2020(R"({"type": "integer", "exclusiveMaximum": 5, "const": 3})");
  EXPECT_TRUE(d2020("3"));
  EXPECT_FALSE(d2020("4"));
  // draft-07: $ref's siblings are ignored; 2019-09 on they apply
  const char* defs = R"("definitions": {"n": {"type": "integer"}}, "$defs": {"n": {"type": "integer"}})";
  const Language d7(std::string(R"({"$schema": "http://json-schema.org/draft-07/schema#", "$ref": "#/definitions/n", "maximum": 3, )") + defs + "}");
  const Language d2019(std::string(R"({"$schema": "https://json-schema.org/draft/2019-09/schema", "$ref": "#/$defs/n", "maximum": 3, )") + defs + "}");
  EXPECT_TRUE(d7("7"));
  EXPECT_FALSE(d2019("7"));
  EXPECT_TRUE(d2019("3"));
  // dependencies is a draft-07 keyword, dependentRequired a 2019-09 one
  const char* deps = R"("type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}})";
  const Language dep7(std::string(R"({"$schema": "http://json-schema.org/draft-07/schema#", "dependencies": {"a": ["b"]}, )") + deps + "}");
  const Language dep2020(std::string(R"({"dependentRequired": {"a": ["b"]}, )") + deps + "}");
  for (const Language* l : {&dep7, &dep2020}) {
    EXPECT_TRUE((*l)(R"({"a":1,"b":2})"));
    EXPECT_TRUE((*l)(R"({"b":2})"));
    EXPECT_FALSE((*l)(R"({"a":1})"));
  }
  const Language ignored(std::string(R"({"dependencies": {"a": ["b"]}, )") + deps + "}");  // 2020-12: not a keyword
  EXPECT_TRUE(ignored(R"({"a":1})"));
  // draft-04 items as a list with additionalItems; 2020-12 prefixItems with items
  const Language tuple4(R"({"$schema": "http://json-schema.org/draft-04/schema#", "items": [{"type": "string"}],
      "additionalItems": {"type": "integer"}})");
  const Language tuple2020(R"({"prefixItems": [{"type": "string"}], "items": {"type": "integer"}})");
  for (const Language* l : {&tuple4, &tuple2020}) {
    EXPECT_TRUE((*l)(R"(["a",1,2])"));
    EXPECT_FALSE((*l)(R"(["a","b"])"));
    EXPECT_FALSE((*l)(R"([1])"));
  }
}

TEST(JsonSchema, ReferencesFollowJsonPointerEscapesIdsAndAnchors) {
  const Language l(R"({"type": "object", "properties": {
      "slash": {"$ref": "#/definitions/a~1b"}, "tilde": {"$ref": "#/definitions/c~0d"},
      "percent": {"$ref": "#/definitions/e%25f"}, "anchor": {"$ref": "#pos"}, "id": {"$ref": "item.json"}},
      "required": ["slash", "tilde", "percent", "anchor", "id"],
      "definitions": {"a/b": {"const": 1}, "c~d": {"const": 2}, "e%f": {"const": 3},
                      "p": {"$anchor": "pos", "const": 4}, "i": {"$id": "https://x.org/item.json", "const": 5}}})");
  EXPECT_TRUE(l(R"({"slash":1,"tilde":2,"percent":3,"anchor":4,"id":5})"));
  EXPECT_FALSE(l(R"({"slash":2,"tilde":2,"percent":3,"anchor":4,"id":5})"));
  // recursion
  const Language tree(R"({"$defs": {"t": {"type": "object", "properties": {"v": {"type": "integer"},
      "kids": {"type": "array", "items": {"$ref": "#/$defs/t"}}}, "required": ["v"], "additionalProperties": false}},
      "$ref": "#/$defs/t"})");
  EXPECT_TRUE(tree(R"({"v":1,"kids":[{"v":2},{"v":3,"kids":[{"v":4}]}]})"));
  EXPECT_FALSE(tree(R"({"v":1,"kids":[{"w":2}]})"));
}

TEST(JsonSchema, ApplicatorsCombine) {
  // allOf: a base by reference and more properties, merged into one object
  const Language all(R"({"allOf": [{"$ref": "#/$defs/base"}, {"properties": {"extra": {"type": "boolean"}}, "required": ["extra"]}],
      "$defs": {"base": {"type": "object", "properties": {"id": {"type": "integer", "minimum": 1}}, "required": ["id"]}}})");
  EXPECT_TRUE(all(R"({"id":1,"extra":true})"));
  EXPECT_FALSE(all(R"({"id":0,"extra":true})"));
  EXPECT_FALSE(all(R"({"id":1})"));
  // oneOf whose branches overlap: each excludes the other
  const Language one(R"({"oneOf": [{"type": "integer"}, {"type": "number", "minimum": 5}]})");
  EXPECT_TRUE(one("3"));
  EXPECT_TRUE(one("5.5"));
  EXPECT_FALSE(one("6"));  // both match: not exactly one
  // a branch whose alternatives declare what the other requires overlaps it
  const Language hidden(R"({"oneOf": [{"type": "object", "properties": {"p": {}},
      "anyOf": [{"properties": {"q": {"const": 1}}, "required": ["q"]}]}, {"type": "object", "required": ["q"]}]})");
  EXPECT_FALSE(hidden(R"({"q":1})"));  // both
  EXPECT_FALSE(hidden(R"({"p":1,"q":1})"));
  EXPECT_TRUE(hidden(R"({"q":2})"));
  // closed branches that share only {}: each requires a property the other does not allow
  const Language closed(R"({"type": "object", "oneOf": [
      {"additionalProperties": false, "properties": {"key": {"type": "string"}}},
      {"additionalProperties": false, "properties": {"keys": {"type": "array"}}}]})");
  EXPECT_TRUE(closed(R"({"key":"a"})"));
  EXPECT_TRUE(closed(R"({"keys":[]})"));
  EXPECT_FALSE(closed(R"({})"));
  // a discriminated union
  const Language tagged(R"({"oneOf": [
      {"type": "object", "properties": {"kind": {"const": "a"}, "x": {"type": "integer"}}, "required": ["kind", "x"]},
      {"type": "object", "properties": {"kind": {"const": "b"}, "y": {"type": "string"}}, "required": ["kind", "y"]}]})");
  EXPECT_TRUE(tagged(R"({"kind":"a","x":1})"));
  EXPECT_TRUE(tagged(R"({"kind":"b","y":"s"})"));
  EXPECT_FALSE(tagged(R"({"kind":"a","y":"s"})"));
  // not: a property forbidden, a value excluded
  const Language negated(R"({"type": "object", "properties": {"a": {"type": "string", "not": {"enum": ["x", "y"]}},
      "b": {"type": "integer"}}, "not": {"required": ["b"]}})");
  EXPECT_TRUE(negated(R"({"a":"z"})"));
  EXPECT_FALSE(negated(R"({"a":"x"})"));
  EXPECT_FALSE(negated(R"({"a":"z","b":1})"));
  // if / then / else on a constant
  const Language cond(R"({"type": "object", "properties": {"unit": {"enum": ["c", "f"]}, "t": {"type": "number"}},
      "required": ["unit", "t"], "if": {"properties": {"unit": {"const": "c"}}},
      "then": {"properties": {"t": {"maximum": 100}}}, "else": {"properties": {"t": {"maximum": 212}}}})");
  EXPECT_TRUE(cond(R"({"unit":"c","t":90})"));
  EXPECT_FALSE(cond(R"({"unit":"c","t":150})"));
  EXPECT_TRUE(cond(R"({"unit":"f","t":150})"));
}

TEST(JsonSchema, PropertiesNotDeclaredFollowTheirSchemas) {
  const Language map(R"({"type": "object", "additionalProperties": {"type": "integer"}})");
  EXPECT_TRUE(map(R"({"a":1,"b":2})"));
  EXPECT_FALSE(map(R"({"a":"x"})"));
  const Language patterns(R"({"type": "object", "properties": {"id": {"type": "string"}},
      "patternProperties": {"^x-": {"type": "integer"}, "^[0-9]+$": {"type": "boolean"}}, "additionalProperties": false})");
  EXPECT_TRUE(patterns(R"({"id":"a","x-b":1,"12":true})"));
  EXPECT_FALSE(patterns(R"({"id":"a","x-b":true})"));
  EXPECT_FALSE(patterns(R"({"id":"a","y":1})"));
  EXPECT_FALSE(patterns(R"({"id":"a","id":"b"})"));  // a declared name is not written again as another
  const Language named(R"({"type": "object", "propertyNames": {"anyOf": [{"pattern": "^a"}, {"enum": ["zz"]}]},
      "additionalProperties": {"type": "integer"}})");
  EXPECT_TRUE(named(R"({"ab":1,"zz":2})"));
  EXPECT_FALSE(named(R"({"b":1})"));
  const Language counted(R"({"type": "object", "properties": {"a": {}, "b": {}, "c": {}}, "minProperties": 2, "maxProperties": 2})");
  EXPECT_TRUE(counted(R"({"a":1,"c":2})"));
  EXPECT_FALSE(counted(R"({"a":1})"));
  EXPECT_FALSE(counted(R"({"a":1,"b":2,"c":3})"));
}

TEST(JsonSchema, PatternsMayOpenWithLookaheads) {
  const Language names(R"({"type": "object", "patternProperties": {"^(?!interactive|name).+$": {"type": "integer"}},
      "additionalProperties": false})");
  EXPECT_TRUE(names(R"({"x":1,"other":2})"));
  EXPECT_FALSE(names(R"({"interactive":1})"));
  EXPECT_FALSE(names(R"({"named":1})"));  // "name" matches at its start
  EXPECT_FALSE(names(R"({"name":1})"));
  const Language both(R"({"type": "string", "pattern": "^(?=.*[0-9])(?!.*x)[a-z0-9]{3,}$"})");
  EXPECT_TRUE(both(R"("ab1")"));
  EXPECT_FALSE(both(R"("abc")"));
  EXPECT_FALSE(both(R"("ax1")"));
  EXPECT_FALSE(both(R"("a1")"));
}

TEST(JsonSchema, StrictRefusesWhatAGrammarCannotSayAndApproximatesOtherwise) {
  const std::string unique = R"({"type": "array", "items": {"type": "integer"}, "uniqueItems": true, "minItems": 2})";
  EXPECT_NE(error_of(unique).find("json_schema: 'uniqueItems' at # cannot be written as a grammar"), std::string::npos);
  const SchemaGrammar loose = json_schema_grammar(json::parse(unique), {.strict = false});
  ASSERT_EQ(loose.approximations.size(), 1u);
  EXPECT_EQ(loose.approximations[0], "#: uniqueItems: items may repeat");
  EXPECT_NO_THROW(compile_gbnf(loose.gbnf));
  // uniqueItems that at most one item satisfies is exact, strict or not
  const Language one(R"({"type": "array", "items": {"type": "integer"}, "uniqueItems": true})");
  EXPECT_TRUE(one("[7]"));
  EXPECT_FALSE(one("[7,8]"));
  EXPECT_NE(error_of(R"({"type": "number", "multipleOf": 0.3})").find("'multipleOf' at #"), std::string::npos);
  // multipleOf a power of ten is a number of decimals
  const Language cents(R"({"type": "number", "multipleOf": 0.01, "minimum": 0})");
  EXPECT_TRUE(cents("12.34"));
  EXPECT_FALSE(cents("12.345"));
}

TEST(JsonSchema, CombinationsStayWithinBudget) {
  // 20 independent anyOfs: 2^20 combinations; the first 64 are written (a test that ends)
  json schema = {{"allOf", json::array()}};
  for (int i = 0; i < 20; ++i) {
    const json name = std::string("p").append(std::to_string(i));  // (not operator+: GCC 12's false -Wrestrict)
    schema["allOf"].push_back({{"anyOf", {{{"type", "object"}, {"required", {name}}}, {{"type", "object"}}}}});
  }
  const SchemaGrammar g = json_schema_grammar(schema);
  EXPECT_NO_THROW(compile_gbnf(g.gbnf));
}

// Passes over the schema that look at subschemas for oneOf (whether branches overlap) or follow
// $ref / allOf are bounded like the rest: 100,000 nested oneOfs and a chain of 10,000 $refs (an
// ordered_json object of more keys takes nlohmann's quadratic inserts, not the compiler, seconds to
// build) end in one line naming the depth.
TEST(JsonSchema, DeepOneOfsAndLongReferenceChainsAreRefusedByDepth) {
  constexpr int kDeep = 100'000;
  std::string one_of;
  for (int i = 0; i < kDeep; ++i) one_of += R"({"oneOf": [{"type": "null"}, )";
  one_of += R"({"type": "string"})";
  for (int i = 0; i < kDeep; ++i) one_of += "]}";
  constexpr int kLong = 10'000;
  json chain = {{"$ref", "#/$defs/d0"}, {"$defs", json::object()}};
  const auto name = [](int i) { return std::string("d").append(std::to_string(i)); };  // (not operator+: GCC 12's false -Wrestrict)
  for (int i = 0; i < kLong; ++i) chain["$defs"][name(i)] = {{"$ref", std::string("#/$defs/").append(name(i + 1))}};
  chain["$defs"][name(kLong)] = {{"type", "integer"}};
  for (const std::string& e : {error_of(one_of), error_of(chain.dump())}) {
    EXPECT_NE(e.find("json_schema: "), std::string::npos) << e;
    EXPECT_NE(e.find("256"), std::string::npos) << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  }
}

}  // namespace
}  // namespace nf::grammar
