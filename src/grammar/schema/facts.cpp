// A conjunction's own keywords merged into one record per assertion, and the quick superset facts
// of a schema (schema/schema_compiler.h).
#include <algorithm>
#include <cmath>

#include "grammar/schema/schema_compiler.h"
#include "nanoformer/core/error.h"

namespace nf::grammar {
namespace {

using json = SchemaCompiler::json;

uint8_t type_bits(const json& type, const std::string& where) {
  if (type.is_array()) {
    uint8_t bits = 0;
    for (const json& t : type) bits |= type_bits(t, where);
    return bits;
  }
  NF_CHECK(type.is_string(), "json_schema: 'type' at ", where, " must be a string or a list of them");
  const std::string t = type.get<std::string>();
  if (t == "null") return kNull;
  if (t == "boolean") return kBoolean;
  if (t == "object") return kObject;
  if (t == "array") return kArray;
  if (t == "string") return kString;
  if (t == "integer") return kInteger;
  if (t == "number") return kInteger | kFraction;
  throw Error("json_schema: the type '" + t + "' at " + where + " is not a JSON Schema type");
}

int64_t count(const json& v, const char* key, const std::string& where) {
  const bool integral = v.is_number() && v.get<double>() >= 0 && std::floor(v.get<double>()) == v.get<double>();
  NF_CHECK(integral && v.get<double>() <= 1e15, "json_schema: '", key, "' at ", where, " must be a non-negative integer, got ", v.dump());
  return static_cast<int64_t>(v.get<double>());
}

double number(const json& v, const char* key, const std::string& where) {
  NF_CHECK(v.is_number(), "json_schema: '", key, "' at ", where, " must be a number, got ", v.dump());
  return v.get<double>();
}

void add_once(std::vector<const json*>& list, const json* s) {
  if (std::find(list.begin(), list.end(), s) == list.end()) list.push_back(s);
}

void lower_bound(SchemaCompiler::Facts& f, double v, bool exclusive) {
  if (!f.minimum || v > *f.minimum || (v == *f.minimum && exclusive)) f.minimum = v, f.exclusive_minimum = exclusive;
}
void upper_bound(SchemaCompiler::Facts& f, double v, bool exclusive) {
  if (!f.maximum || v < *f.maximum || (v == *f.maximum && exclusive)) f.maximum = v, f.exclusive_maximum = exclusive;
}

}  // namespace

SchemaCompiler::Facts SchemaCompiler::merge(const Conjunction& leaves) {
  Facts f;
  for (const Part& part : leaves) {
    const json& s = *part.schema;
    if (!s.is_object()) continue;
    const std::string& where = path_of(part.schema);
    if (f.where.empty()) f.where = where;
    const bool own = synthesized(part.schema);
    const auto values = [&](std::vector<const json*> given) {
      if (!f.values) {
        f.values = std::move(given);
        return;
      }
      std::vector<const json*> kept;  // JSON equality (1 == 1.0, as JSON Schema's enum)
      for (const json* v : *f.values)
        if (std::any_of(given.begin(), given.end(), [&](const json* g) { return *g == *v; })) kept.push_back(v);
      f.values = std::move(kept);
    };
    for (const auto& [key, v] : s.items()) {
      if (own && key.rfind("x-nf-", 0) == 0) {
        if (key == "x-nf-types") f.types &= static_cast<uint8_t>(v.get<int>());
        if (key == "x-nf-not-values")
          for (const json& e : v) f.excluded_values.push_back(&e);
        if (key == "x-nf-not-pattern") f.excluded_patterns.push_back(v.get<std::string>());
        if (key == "x-nf-minimum") lower_bound(f, v[0].get<double>(), v[1].get<bool>());
        if (key == "x-nf-maximum") upper_bound(f, v[0].get<double>(), v[1].get<bool>());
        continue;
      }
      if (!document_.asserts(key)) continue;
      if (key == "type") {
        f.types &= type_bits(v, where);
      } else if (key == "enum") {
        NF_CHECK(v.is_array(), "json_schema: 'enum' at ", where, " must be an array");
        std::vector<const json*> given;
        for (const json& e : v) given.push_back(&e);
        values(std::move(given));
      } else if (key == "const") {
        values({&v});
      } else if (key == "minLength") {
        f.min_length = std::max(f.min_length, count(v, "minLength", where));
      } else if (key == "maxLength") {
        const int64_t m = count(v, "maxLength", where);
        f.max_length = f.max_length < 0 ? m : std::min(f.max_length, m);
      } else if (key == "pattern") {
        NF_CHECK(v.is_string(), "json_schema: 'pattern' at ", where, " must be a string");
        f.patterns.push_back(v.get<std::string>());
      } else if (key == "format") {
        if (v.is_string()) f.formats.push_back(v.get<std::string>());
      } else if (key == "minimum") {
        const bool exclusive = document_.draft() == Draft::draft4 && s.contains("exclusiveMinimum") && s["exclusiveMinimum"] == true;
        lower_bound(f, number(v, "minimum", where), exclusive);
      } else if (key == "maximum") {
        const bool exclusive = document_.draft() == Draft::draft4 && s.contains("exclusiveMaximum") && s["exclusiveMaximum"] == true;
        upper_bound(f, number(v, "maximum", where), exclusive);
      } else if (key == "exclusiveMinimum" || key == "exclusiveMaximum") {
        if (document_.draft() == Draft::draft4) {
          NF_CHECK(v.is_boolean(), "json_schema: '", key, "' at ", where, " must be a boolean in draft-04");
        } else if (key == "exclusiveMinimum") {
          lower_bound(f, number(v, "exclusiveMinimum", where), true);
        } else {
          upper_bound(f, number(v, "exclusiveMaximum", where), true);
        }
      } else if (key == "multipleOf") {
        const double m = number(v, "multipleOf", where);
        NF_CHECK(m > 0, "json_schema: 'multipleOf' at ", where, " must be above 0");
        f.multiples.push_back(m);
      } else if (key == "properties" || key == "patternProperties" || key == "additionalProperties") {
        NF_CHECK(key == "additionalProperties" ? (v.is_object() || v.is_boolean()) : v.is_object(), "json_schema: '", key,
                 "' at ", where, key == "additionalProperties" ? " must be a schema" : " must be an object of schemas");
        add_once(f.objects, part.schema);
      } else if (key == "unevaluatedProperties") {
        f.unevaluated_properties = true;
      } else if (key == "required") {
        NF_CHECK(v.is_array(), "json_schema: 'required' at ", where, " must be an array of property names");
        for (const json& r : v) {
          NF_CHECK(r.is_string(), "json_schema: 'required' at ", where, " must list property names, got ", r.dump());
          if (std::find(f.required.begin(), f.required.end(), r.get<std::string>()) == f.required.end())
            f.required.push_back(r.get<std::string>());
        }
      } else if (key == "minProperties") {
        f.min_properties = std::max(f.min_properties, count(v, "minProperties", where));
      } else if (key == "maxProperties") {
        const int64_t m = count(v, "maxProperties", where);
        f.max_properties = f.max_properties < 0 ? m : std::min(f.max_properties, m);
      } else if (key == "propertyNames") {
        f.property_names.push_back(child(part.schema, v, "/propertyNames"));
      } else if (key == "items" || key == "prefixItems" || key == "additionalItems") {
        add_once(f.arrays, part.schema);
      } else if (key == "unevaluatedItems") {
        f.unevaluated_items = true;
      } else if (key == "minItems") {
        f.min_items = std::max(f.min_items, count(v, "minItems", where));
      } else if (key == "maxItems") {
        const int64_t m = count(v, "maxItems", where);
        f.max_items = f.max_items < 0 ? m : std::min(f.max_items, m);
      } else if (key == "uniqueItems") {
        f.unique_items = f.unique_items || v == true;
      } else if (key == "contains") {
        f.contains.push_back(child(part.schema, v, "/contains"));
      } else if (key == "minContains" && s.contains("contains")) {
        f.min_contains = count(v, "minContains", where);
      } else if (key == "maxContains" && s.contains("contains")) {
        const int64_t m = count(v, "maxContains", where);
        f.max_contains = f.max_contains < 0 ? m : std::min(f.max_contains, m);
      }
    }
  }
  if (f.multiples.size() == 1 && f.multiples[0] == 1) f.types &= static_cast<uint8_t>(~kFraction);  // multipleOf 1: integers
  return f;
}

// Once per schema (a oneOf's branches are compared pairwise, and flattening a branch compares the
// branches of the oneOfs inside it), and as deep as rule_for goes.
SchemaCompiler::Facts SchemaCompiler::quick_facts(const json* schema) {
  if (const auto it = quick_facts_of_.find(schema); it != quick_facts_of_.end()) return it->second;
  NF_CHECK(++quick_depth_ < kMaxDepth, "json_schema: schemas nested deeper than ", kMaxDepth, " at ", path_of(schema));
  struct Leave {
    int& depth;
    ~Leave() { --depth; }
  } leave{quick_depth_};
  Flat flat;
  std::set<const json*> seen;
  flatten({schema, false}, flat, seen, 0);
  Facts f = merge(flat.leaves);
  if (flat.empty) f.types = 0;
  f.partial = !flat.disjunctions.empty();
  return quick_facts_of_.emplace(schema, std::move(f)).first->second;
}

std::optional<SchemaCompiler::Facts> SchemaCompiler::exact_facts(const Conjunction& parts) {
  Flat flat;
  std::set<const json*> seen;
  for (const Part& p : parts) flatten(p, flat, seen, 0);
  if (flat.empty || !flat.disjunctions.empty()) return std::nullopt;
  return merge(flat.leaves);
}

}  // namespace nf::grammar
