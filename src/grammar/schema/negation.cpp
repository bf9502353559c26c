// `not`: the schema of values a schema rejects, written with the keywords the compiler already
// compiles (schema/schema_compiler.h). not (K1 and ... and Kn) = (not K1) or ... or (not Kn), and
// a keyword that constrains one type only is false for values of other types, so its negation is
// that type with the keyword's opposite: not {minLength: 3} = {type: string, maxLength: 2}. Where
// the opposite is not something a grammar writes (not uniqueItems, not format, not multipleOf,
// ...), the negation allows none of that keyword's type: a subset of the values rejected, so that
// every value the grammar writes is still rejected by the schema negated.
#include <cmath>

#include "grammar/schema/schema_compiler.h"
#include "nanoformer/core/error.h"

namespace nf::grammar {
namespace {

using json = SchemaCompiler::json;

json of_type(uint8_t bits, json more = json::object()) {
  more["x-nf-types"] = bits;
  return more;
}

}  // namespace

const SchemaCompiler::json* SchemaCompiler::negation(const json* schema) {
  if (const auto it = negations_.find(schema); it != negations_.end()) return it->second;
  const json& s = *schema;
  const std::string where = path_of(schema) + "/not";
  const auto done = [&](json made) {
    const json* n = synthesize(std::move(made), where);
    negations_[schema] = n;
    return n;
  };
  if (s.is_boolean()) return done(json(!s.get<bool>()));
  if (!s.is_object()) return done(json(false));  // refused where the schema itself is compiled
  const bool own = synthesized(schema);
  json options = json::array();  // the schema is rejected when any one of its assertions fails
  const auto negated = [&](const json* sub) { return json{{"x-nf-not-of", id_of(sub)}}; };
  const auto sub_part = [&](const json& sub, const std::string& suffix) {
    paths_.emplace(&sub, path_of(schema) + suffix);
    return &sub;
  };
  if (own) {  // the compiler's own keywords
    if (s.contains("x-nf-not-of")) options.push_back({{"x-nf-part", s["x-nf-not-of"]}});  // not not A = A
    if (s.contains("x-nf-part")) options.push_back(negated(by_id(s["x-nf-part"].get<int64_t>())));
    if (s.contains("x-nf-types")) options.push_back(of_type(static_cast<uint8_t>(kAllTypes & ~s["x-nf-types"].get<int>())));
    if (s.contains("x-nf-not-values")) options.push_back({{"enum", s["x-nf-not-values"]}});
    if (s.contains("x-nf-not-pattern")) options.push_back(of_type(kString, {{"pattern", s["x-nf-not-pattern"]}}));
    if (s.contains("x-nf-minimum"))
      options.push_back(of_type(kInteger | kFraction, {{"x-nf-maximum", {s["x-nf-minimum"][0], !s["x-nf-minimum"][1].get<bool>()}}}));
    if (s.contains("x-nf-maximum"))
      options.push_back(of_type(kInteger | kFraction, {{"x-nf-minimum", {s["x-nf-maximum"][0], !s["x-nf-maximum"][1].get<bool>()}}}));
  }
  const bool ref_alone = s.contains("$ref") && document_.asserts("$ref") && document_.ref_overrides_siblings();
  if (s.contains("$ref") && document_.asserts("$ref") && s["$ref"].is_string()) {
    const json& target = document_.resolve(s["$ref"].get<std::string>(), path_of(schema));
    paths_.emplace(&target, s["$ref"].get<std::string>());
    options.push_back(negated(&target));
  }
  static const json nothing = json::object();
  for (const auto& [key, v] : (ref_alone ? nothing : s).items()) {
    if (!document_.asserts(key) || key == "$ref") continue;
    const std::string at = "/" + key;
    if (key == "type") {
      const json probe = {{"type", v}};
      const Facts f = merge({{synthesize(probe, path_of(schema)), true}});
      options.push_back(of_type(static_cast<uint8_t>(kAllTypes & ~f.types)));
    } else if (key == "enum") {
      options.push_back({{"x-nf-not-values", v}});
    } else if (key == "const") {
      options.push_back({{"x-nf-not-values", json::array({v})}});
    } else if (key == "allOf" && v.is_array()) {
      for (size_t i = 0; i < v.size(); ++i) options.push_back(negated(sub_part(v[i], at + "/" + std::to_string(i))));
    } else if ((key == "anyOf" || key == "oneOf") && v.is_array()) {
      // none of them (for oneOf, a subset of its negation: two or more matching is left out)
      json all = json::array();
      for (size_t i = 0; i < v.size(); ++i) all.push_back(negated(sub_part(v[i], at + "/" + std::to_string(i))));
      options.push_back({{"allOf", all}});
    } else if (key == "not") {
      options.push_back({{"x-nf-part", id_of(sub_part(v, at))}});
    } else if (key == "if") {  // (if and not then) or (not if and not else)
      const json* condition = sub_part(v, "/if");
      json yes = {{"x-nf-part", id_of(condition)}}, no = negated(condition);
      if (s.contains("then")) yes = {{"allOf", {yes, negated(sub_part(s["then"], "/then"))}}};
      else yes = false;
      if (s.contains("else")) no = {{"allOf", {no, negated(sub_part(s["else"], "/else"))}}};
      else no = false;
      options.push_back({{"anyOf", {yes, no}}});
    } else if (key == "minLength" && v.is_number() && v.get<double>() >= 1) {
      options.push_back(of_type(kString, {{"maxLength", static_cast<int64_t>(std::ceil(v.get<double>())) - 1}}));
    } else if (key == "maxLength" && v.is_number()) {
      options.push_back(of_type(kString, {{"minLength", static_cast<int64_t>(std::floor(v.get<double>())) + 1}}));
    } else if (key == "pattern" && v.is_string()) {
      options.push_back(of_type(kString, {{"x-nf-not-pattern", v}}));
    } else if ((key == "minimum" || key == "exclusiveMinimum") && v.is_number()) {
      const bool exclusive = key == "exclusiveMinimum" || (document_.draft() == Draft::draft4 && s.contains("exclusiveMinimum") && s["exclusiveMinimum"] == true);
      options.push_back(of_type(kInteger | kFraction, {{"x-nf-maximum", {v, !exclusive}}}));
    } else if ((key == "maximum" || key == "exclusiveMaximum") && v.is_number()) {
      const bool exclusive = key == "exclusiveMaximum" || (document_.draft() == Draft::draft4 && s.contains("exclusiveMaximum") && s["exclusiveMaximum"] == true);
      options.push_back(of_type(kInteger | kFraction, {{"x-nf-minimum", {v, !exclusive}}}));
    } else if (key == "minItems" && v.is_number() && v.get<double>() >= 1) {
      options.push_back(of_type(kArray, {{"maxItems", static_cast<int64_t>(std::ceil(v.get<double>())) - 1}}));
    } else if (key == "maxItems" && v.is_number()) {
      options.push_back(of_type(kArray, {{"minItems", static_cast<int64_t>(std::floor(v.get<double>())) + 1}}));
    } else if (key == "minProperties" && v.is_number() && v.get<double>() >= 1) {
      options.push_back(of_type(kObject, {{"maxProperties", static_cast<int64_t>(std::ceil(v.get<double>())) - 1}}));
    } else if (key == "maxProperties" && v.is_number()) {
      options.push_back(of_type(kObject, {{"minProperties", static_cast<int64_t>(std::floor(v.get<double>())) + 1}}));
    } else if (key == "required" && v.is_array()) {
      for (const json& name : v)
        if (name.is_string()) options.push_back(of_type(kObject, {{"properties", {{name.get<std::string>(), false}}}}));
    } else if (key == "properties" && v.is_object()) {  // some property present and not as it says
      for (const auto& [name, sub] : v.items())
        options.push_back(of_type(kObject, {{"required", {name}},
                                            {"properties", {{name, negated(sub_part(sub, at + "/" + name))}}}}));
    } else if ((key == "items" && v.is_object()) && document_.draft() >= Draft::draft6) {  // an item not as it says
      options.push_back(of_type(kArray, {{"contains", negated(sub_part(v, at))}}));
    } else if (key != "then" && key != "else") {
      // format, multipleOf, uniqueItems, patternProperties, ...: no value of their type is written
      unwritten_.push_back("the 'not' at " + path_of(schema) + " of '" + key + "'");
    }
  }
  if (options.empty()) return done(json(false));
  if (options.size() == 1) return done(options[0]);
  return done({{"anyOf", options}});
}

}  // namespace nf::grammar
