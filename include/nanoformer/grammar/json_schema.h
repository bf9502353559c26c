#pragma once
// JSON Schema (a strict subset, as OpenAI's structured outputs use) to GBNF text (grammar.h),
// whose language is JSON text that validates against the schema:
//   type            "object", "array", "string", "number", "integer", "boolean", "null", or a list of them
//   object          properties (emitted in their order), required (each must be a property),
//                   additionalProperties false or true (only the properties given are generated)
//   array           items, minItems, maxItems        string  minLength, maxLength
//   enum, const     any JSON values                  anyOf   a list of schemas
//   $ref            "#", "#/$defs/<name>" or "#/definitions/<name>" (recursion allowed)
//   ignored         title, description, default, examples, $schema, $id, $comment, $defs, definitions, strict
// Any other keyword (pattern, format, minimum, oneOf, ...) is refused: nf::Error naming it.
// An empty schema {} (or true) is any JSON value. The JSON generated is compact but for optional
// whitespace after { [ , : (one space, or a newline and up to 20 spaces or tabs); numbers have at
// most 16 integer digits, 16 fraction digits and 2 exponent digits, so that every output can end and parses as a double.
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace nf::grammar {

// The GBNF of `schema` (an ordered_json: the properties keep their order); throws nf::Error naming the keyword or the $ref at fault.
std::string json_schema_to_gbnf(const nlohmann::ordered_json& schema);
// The rules of `schema` alone, for several schemas in one grammar (tool calls' arguments): its
// rule is `name`, its helpers name-0, name-1, ...; they refer to json_shared_rules(), which the
// grammar must hold once.
std::string json_schema_rules(const nlohmann::ordered_json& schema, const std::string& name);
std::string json_shared_rules();
// The GBNF of any JSON object (response_format json_object).
std::string json_object_gbnf();

}  // namespace nf::grammar
