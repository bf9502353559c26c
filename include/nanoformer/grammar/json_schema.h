#pragma once
// JSON Schema to GBNF text (grammar.h) whose language is JSON text that validates against the
// schema. The schema is read as its draft means it (draft-04, -06, -07, 2019-09, 2020-12, chosen by
// `$schema`; 2020-12 when absent): annotations and unknown keywords (x-* extensions, vendor blocks,
// typos) are ignored; every assertion is written into the grammar where a context-free grammar can
// express it (docs/structured-output.md lists how each keyword is compiled). Where it cannot
// (uniqueItems over arbitrary values, `not` of a complex schema, multipleOf of a real, overlapping
// oneOf branches, ...): with `strict` (the default) the schema is refused, nf::Error naming the
// keyword and its path; without, the grammar approximates it and `approximations` says where
// (an answer may then not validate there).
// The JSON generated is compact but for optional whitespace after { [ , : (one space, or a
// newline and up to 20 spaces or tabs); numbers have at most 16 integer digits, 16 fraction digits
// and 2 exponent digits, so that every output can end and parses as a double; object properties
// come in the order the schema declares them.
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace nf::grammar {

struct SchemaOptions {
  bool strict = true;  // refuse what the grammar cannot express exactly (else approximate and say so)
};

struct SchemaGrammar {
  std::string gbnf;                          // the whole grammar: `root` and the rules it uses
  std::vector<std::string> approximations;  // "<path>: <keyword>: <what the grammar does instead>" (strict off only)
};

// The grammar of `schema` (an ordered_json: the properties keep their order); throws nf::Error
// naming the keyword or the $ref at fault.
SchemaGrammar json_schema_grammar(const nlohmann::ordered_json& schema, const SchemaOptions& options = {});
// The rules of `schema` alone, for several schemas in one grammar (tool calls' arguments): its
// rule is `name`, its helpers name-0, name-1, ...; they refer to json_shared_rules(), which the
// grammar must hold once.
std::string json_schema_rules(const nlohmann::ordered_json& schema, const std::string& name,
                              const SchemaOptions& options = {}, std::vector<std::string>* approximations = nullptr);
std::string json_shared_rules();
// The GBNF of any JSON object (response_format json_object).
std::string json_object_gbnf();

}  // namespace nf::grammar
