// JSON Schema to GBNF (grammar/json_schema.h).
#include "nanoformer/grammar/json_schema.h"

#include <map>
#include <utility>
#include <nlohmann/json.hpp>
#include <set>
#include <vector>

#include "nanoformer/core/error.h"

namespace nf::grammar {
namespace {

using json = nlohmann::ordered_json;  // properties are generated in the order given

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

const std::set<std::string> kIgnored = {"title", "description", "default", "examples", "$schema", "$id",
                                        "$comment", "$defs", "definitions", "strict"};
const std::set<std::string> kSupported = {"type", "properties", "required", "additionalProperties", "items",
                                          "minItems", "maxItems", "minLength", "maxLength", "enum", "const",
                                          "anyOf", "$ref"};

// A GBNF literal of these bytes.
std::string literal(const std::string& bytes) {
  std::string out = "\"";
  for (const char c : bytes) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20) {
      static const char* hex = "0123456789ABCDEF";
      out += "\\x";
      out += hex[u >> 4];
      out += hex[u & 15];
    } else {
      out += c;
    }
  }
  return out + "\"";
}

class SchemaCompiler {
 public:
  SchemaCompiler(const json& root, std::string name) : root_(root), name_(std::move(name)) {}

  // The rule `name_` and its helpers (name_-0, name_-1, ...), without the shared JSON rules.
  std::string compile() {
    const std::string top = rule_for(root_, "#");
    std::string out = name_ + " ::= " + top + "\n";
    for (const std::string& r : rules_) out += r + "\n";
    return out;
  }

 private:
  std::string add_rule(const std::string& body) {
    const std::string name = name_ + "-" + std::to_string(rules_.size());
    rules_.push_back(name + " ::= " + body);
    return name;
  }

  static int64_t count(const json& s, const char* key, const std::string& where) {
    const json& v = s[key];
    NF_CHECK(v.is_number_unsigned() && v.get<uint64_t>() <= 100000, "json_schema: '", key, "' at ", where,
             " must be an integer in [0, 100000], got ", v.dump());
    return v.get<int64_t>();
  }

  // A GBNF expression for `s` (at JSON pointer `where`, for errors).
  std::string rule_for(const json& s, const std::string& where) {
    NF_CHECK(++depth_ < 256, "json_schema: schemas nested deeper than 256 at ", where);
    struct Leave {
      int& d;
      ~Leave() { --d; }
    } leave{depth_};
    if (s.is_boolean()) {
      NF_CHECK(s.get<bool>(), "json_schema: the schema false at ", where, " allows nothing");
      return "json-value";
    }
    NF_CHECK(s.is_object(), "json_schema: the schema at ", where, " must be an object, got ", s.type_name());
    for (const auto& [key, value] : s.items())
      NF_CHECK(kIgnored.count(key) || kSupported.count(key), "json_schema: the keyword '", key, "' at ", where,
               " is not supported");
    if (s.contains("$ref")) return ref(s, where);
    if (s.contains("const")) return literal(s["const"].dump());
    if (s.contains("enum")) {
      const json& values = s["enum"];
      NF_CHECK(values.is_array() && !values.empty(), "json_schema: 'enum' at ", where, " must be a non-empty array");
      std::string alt;
      for (const json& v : values) alt += (alt.empty() ? "" : " | ") + literal(v.dump());
      return "( " + alt + " )";
    }
    if (s.contains("anyOf")) {
      const json& options = s["anyOf"];
      NF_CHECK(options.is_array() && !options.empty(), "json_schema: 'anyOf' at ", where, " must be a non-empty array");
      std::string alt;
      for (size_t i = 0; i < options.size(); ++i)
        alt += (alt.empty() ? "" : " | ") + rule_for(options[i], where + "/anyOf/" + std::to_string(i));
      return add_rule(alt);
    }
    if (!s.contains("type")) return "json-value";
    const json& type = s["type"];
    if (type.is_array()) {
      NF_CHECK(!type.empty(), "json_schema: 'type' at ", where, " is an empty list");
      std::string alt;
      for (const json& t : type) {
        json one = s;
        one["type"] = t;
        alt += (alt.empty() ? "" : " | ") + rule_for(one, where);
      }
      return add_rule(alt);
    }
    NF_CHECK(type.is_string(), "json_schema: 'type' at ", where, " must be a string or a list of them");
    const std::string t = type.get<std::string>();
    if (t == "object") return object(s, where);
    if (t == "array") return array(s, where);
    if (t == "string") return string(s, where);
    if (t == "number") return "json-number";
    if (t == "integer") return "json-integer";
    if (t == "boolean") return "json-boolean";
    if (t == "null") return "\"null\"";
    throw Error("json_schema: the type '" + t + "' at " + where + " is not a JSON Schema type");
  }

  std::string ref(const json& s, const std::string& where) {
    NF_CHECK(s["$ref"].is_string(), "json_schema: '$ref' at ", where, " must be a string");
    const std::string target = s["$ref"].get<std::string>();
    if (const auto it = refs_.find(target); it != refs_.end()) return it->second;
    const json* resolved = nullptr;
    if (target == "#") {
      resolved = &root_;
    } else {
      for (const char* prefix : {"#/$defs/", "#/definitions/"}) {
        const std::string p = prefix;
        if (target.rfind(p, 0) != 0) continue;
        const std::string section = p.substr(2, p.size() - 3), name = target.substr(p.size());
        if (root_.is_object() && root_.contains(section) && root_[section].is_object() && root_[section].contains(name))
          resolved = &root_[section][name];
      }
    }
    NF_CHECK(resolved, "json_schema: the $ref '", target, "' at ", where,
             " is not found (supported: \"#\", \"#/$defs/<name>\", \"#/definitions/<name>\")");
    // the rule is named before it is built, so that a recursive reference finds it
    const std::string name = name_ + "-ref-" + std::to_string(refs_.size());
    refs_[target] = name;
    const std::string body = rule_for(*resolved, target);
    rules_.push_back(name + " ::= " + body);
    return name;
  }

  std::string object(const json& s, const std::string& where) {
    if (s.contains("additionalProperties"))
      NF_CHECK(s["additionalProperties"].is_boolean(), "json_schema: 'additionalProperties' at ", where,
               " is supported only as false or true");
    const bool extra = s.value("additionalProperties", true);
    if (!s.contains("properties")) {
      NF_CHECK(!s.contains("required") || s["required"].empty(), "json_schema: 'required' at ", where, " without 'properties'");
      return extra ? "json-object" : "( \"{\" ws \"}\" )";
    }
    const json& props = s["properties"];
    NF_CHECK(props.is_object(), "json_schema: 'properties' at ", where, " must be an object");
    std::set<std::string> required;
    if (s.contains("required")) {
      NF_CHECK(s["required"].is_array(), "json_schema: 'required' at ", where, " must be an array of names");
      for (const json& r : s["required"]) {
        NF_CHECK(r.is_string() && props.contains(r.get<std::string>()), "json_schema: 'required' at ", where,
                 " names ", r.dump(), ", which is not in 'properties'");
        required.insert(r.get<std::string>());
      }
    }
    // in the order given: pair_i, then rest_i ("something before": a comma first) or first_i
    std::vector<std::string> pairs;
    std::vector<bool> needed;
    for (const auto& [name, sub] : props.items()) {
      const std::string value = rule_for(sub, where + "/properties/" + name);
      pairs.push_back(literal(json(name).dump()) + " ws \":\" ws " + value + " ws");
      needed.push_back(required.count(name) > 0);
    }
    // after_i: properties i.. when one was written (each with a comma); first_i: when none was
    std::string after = "", first = "";
    for (size_t k = pairs.size(); k-- > 0;) {
      const std::string with_after = after.empty() ? "" : " " + after;
      const std::string next_after =
          add_rule("\",\" ws " + pairs[k] + with_after + (needed[k] ? "" : " |" + (after.empty() ? std::string() : " " + after)));
      const std::string next_first =
          add_rule(pairs[k] + with_after + (needed[k] ? "" : " |" + (first.empty() ? std::string() : " " + first)));
      after = next_after;
      first = next_first;
    }
    return "( \"{\" ws " + first + " \"}\" )";
  }

  std::string array(const json& s, const std::string& where) {
    const std::string item = s.contains("items") ? rule_for(s["items"], where + "/items") : "json-value";
    const int64_t min = s.contains("minItems") ? count(s, "minItems", where) : 0;
    const int64_t max = s.contains("maxItems") ? count(s, "maxItems", where) : -1;
    NF_CHECK(max < 0 || max >= min, "json_schema: 'maxItems' ", max, " < 'minItems' ", min, " at ", where);
    NF_CHECK(min <= 1000 && max <= 1000, "json_schema: 'minItems'/'maxItems' above 1000 at ", where, " are not supported");
    if (max == 0) return "( \"[\" ws \"]\" )";
    const std::string more_min = std::to_string(min > 0 ? min - 1 : 0);
    const std::string more = "( \",\" ws " + item + " ws ){" + more_min + "," + (max < 0 ? "" : std::to_string(max - 1)) + "}";
    const std::string items = item + " ws " + more;
    return "( \"[\" ws " + (min > 0 ? items : "( " + items + " )?") + " \"]\" )";
  }

  std::string string(const json& s, const std::string& where) {
    const int64_t min = s.contains("minLength") ? count(s, "minLength", where) : 0;
    const int64_t max = s.contains("maxLength") ? count(s, "maxLength", where) : -1;
    NF_CHECK(max < 0 || max >= min, "json_schema: 'maxLength' ", max, " < 'minLength' ", min, " at ", where);
    NF_CHECK(min <= 1000 && max <= 1000, "json_schema: 'minLength'/'maxLength' above 1000 at ", where, " are not supported");
    if (min == 0 && max < 0) return "json-string";
    return "( \"\\\"\" json-char{" + std::to_string(min) + "," + (max < 0 ? "" : std::to_string(max)) + "} \"\\\"\" )";
  }

  const json& root_;
  std::string name_;
  std::vector<std::string> rules_;
  std::map<std::string, std::string> refs_;
  int depth_ = 0;
};

}  // namespace

SchemaGrammar json_schema_grammar(const nlohmann::ordered_json& schema, const SchemaOptions&) {
  return {SchemaCompiler(schema, "root").compile() + kJsonRules, {}};
}

std::string json_schema_rules(const nlohmann::ordered_json& schema, const std::string& name, const SchemaOptions&,
                              std::vector<std::string>*) {
  return SchemaCompiler(schema, name).compile();
}

std::string json_shared_rules() { return kJsonRules; }

std::string json_object_gbnf() { return std::string("root ::= json-object\n") + kJsonRules; }

}  // namespace nf::grammar
