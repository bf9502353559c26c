// JSON Schema to GBNF (grammar/json_schema.h): the rules every schema's grammar shares, and the
// entry points; the compiler itself is in schema/.
#include "nanoformer/grammar/json_schema.h"

#include <nlohmann/json.hpp>

#include "grammar/schema/schema_compiler.h"

namespace nf::grammar {
namespace {

// The rules every schema's grammar shares (json-value is any JSON value).
constexpr const char* kJsonRules = R"(ws ::= | " " | "\n" [ \t]{0,20}
json-value ::= json-object | json-array | json-string | json-number | "true" | "false" | "null"
json-object ::= "{" ws ( json-string ws ":" ws json-value ws ( "," ws json-string ws ":" ws json-value ws )* )? "}"
json-array ::= "[" ws ( json-value ws ( "," ws json-value ws )* )? "]"
json-string ::= "\"" json-char* "\""
json-char ::= [^"\\\x00-\x1F] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} )
json-integer ::= "-"? ( "0" | [1-9] [0-9]{0,15} )
json-number ::= json-integer ( "." [0-9]{1,16} )? ( [eE] [-+]? [0-9]{1,2} )?
json-boolean ::= "true" | "false"
)";

}  // namespace

SchemaGrammar json_schema_grammar(const nlohmann::ordered_json& schema, const SchemaOptions& options) {
  SchemaCompiler compiler(schema, "root", options);
  SchemaGrammar out{compiler.compile() + kJsonRules, {}};
  out.approximations = compiler.approximations();
  return out;
}

std::string json_schema_rules(const nlohmann::ordered_json& schema, const std::string& name, const SchemaOptions& options,
                              std::vector<std::string>* approximations) {
  SchemaCompiler compiler(schema, name, options);
  std::string rules = compiler.compile();
  if (approximations) *approximations = compiler.approximations();
  return rules;
}

std::string json_shared_rules() { return kJsonRules; }

std::string json_object_gbnf() { return std::string("root ::= json-object\n") + kJsonRules; }

}  // namespace nf::grammar
