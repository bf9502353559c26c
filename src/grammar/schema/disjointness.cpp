// Whether two oneOf branches can share a value the grammar writes, and what to require of one so
// that they cannot (schema/schema_compiler.h): decided on their quick facts, which allow at least
// the values the schemas do, so "disjoint" is never said of branches that overlap.
#include <algorithm>
#include <set>

#include "grammar/schema/schema_compiler.h"

namespace nf::grammar {

// Whether no value the grammar writes for `a` satisfies `b` (or the reverse): their types differ,
// their enum values differ, or one's objects always hold a property the other's never hold or
// hold with another constant. False when unsure (oneOf then excludes the other branch by its
// negation).
bool SchemaCompiler::disjoint(const json* a, const json* b) {
  const Facts fa = quick_facts(a), fb = quick_facts(b);
  if ((fa.types & fb.types) == 0) return true;
  if (fa.values && fb.values) {
    bool shared = false;
    for (const json* x : *fa.values)
      for (const json* y : *fb.values) shared = shared || *x == *y;
    if (!shared) return true;
  }
  if ((fa.types & fb.types) != kObject) return false;
  // the properties a schema's objects may hold: declared ones and required ones (extras only where
  // patternProperties or a schema-valued additionalProperties allows them, or nothing is declared)
  const auto holds_only_declared = [&](const Facts& f, std::set<std::string>& names) {
    if (f.partial) return false;  // its alternatives may declare more
    bool declared_any = false;
    for (const json* o : f.objects) {
      if (o->contains("patternProperties") && !(*o)["patternProperties"].empty()) return false;
      if (o->contains("additionalProperties") && (*o)["additionalProperties"].is_object()) return false;
      if (o->contains("properties"))
        for (const auto& [name, sub] : (*o)["properties"].items()) names.insert(name), declared_any = true;
      if (o->contains("additionalProperties") && (*o)["additionalProperties"] == false) declared_any = true;
    }
    for (const std::string& r : f.required) names.insert(r);
    return declared_any;
  };
  const auto excludes = [&](const Facts& f, const Facts& g) {  // f's objects never satisfy g
    std::set<std::string> names;
    if (holds_only_declared(f, names))
      for (const std::string& r : g.required)
        if (!names.count(r)) return true;
    // a required property with different constants on both sides
    for (const std::string& r : f.required) {
      if (std::find(g.required.begin(), g.required.end(), r) == g.required.end()) continue;
      const auto constant = [&](const Facts& h) -> std::optional<Facts> {
        for (const json* o : h.objects)
          if (o->contains("properties") && (*o)["properties"].contains(r)) {
            const json& sub = (*o)["properties"][r];
            paths_.emplace(&sub, path_of(o) + "/properties/" + r);
            return quick_facts(&sub);
          }
        return std::nullopt;
      };
      const auto x = constant(f), y = constant(g);
      if (!x || !y || !x->values || !y->values) continue;
      bool shared = false;
      for (const json* u : *x->values)
        for (const json* w : *y->values) shared = shared || *u == *w;
      if (!shared) return true;
    }
    return false;
  };
  return excludes(fa, fb) || excludes(fb, fa);
}

// What makes an object of `a` fail `b`, to require of it: a property both declare with constants
// of their own (enum / const values none of which the other allows), or, when `b` is closed
// (additionalProperties false), one of the properties `a` declares and `b` does not. nullopt: none.
std::optional<SchemaCompiler::json> SchemaCompiler::separation(const json* a, const json* b) {
  const Facts fa = quick_facts(a), fb = quick_facts(b);
  if (!(fa.types & kObject) || !(fb.types & kObject)) return std::nullopt;
  const auto values_of = [&](const Facts& f, const std::string& name) -> std::optional<std::vector<const json*>> {
    for (const json* o : f.objects)
      if (o->contains("properties") && (*o)["properties"].contains(name)) {
        const json& sub = (*o)["properties"][name];
        paths_.emplace(&sub, path_of(o) + "/properties/" + name);
        return quick_facts(&sub).values;
      }
    return std::nullopt;
  };
  std::vector<std::string> declared;
  for (const json* o : fa.objects)
    if (o->contains("properties") && (*o)["properties"].is_object())
      for (const auto& [name, sub] : (*o)["properties"].items()) declared.push_back(name);
  for (const std::string& name : declared) {
    const auto x = values_of(fa, name), y = values_of(fb, name);
    if (!x || !y) continue;
    bool shared = false;
    for (const json* u : *x)
      for (const json* w : *y) shared = shared || *u == *w;
    if (!shared) return json{{"type", "object"}, {"required", {name}}};
  }
  // b closed: a property b neither declares nor matches by pattern fails it
  const bool closed = !fb.partial && std::any_of(fb.objects.begin(), fb.objects.end(), [](const json* o) {
    return o->contains("additionalProperties") && (*o)["additionalProperties"] == false &&
           !(o->contains("patternProperties") && !(*o)["patternProperties"].empty());
  });
  if (!closed) return std::nullopt;
  json some = json::array();
  for (const std::string& name : declared) {
    const bool in_b = std::any_of(fb.objects.begin(), fb.objects.end(), [&](const json* o) {
      return (o->contains("properties") && (*o)["properties"].contains(name)) ||
             (o->contains("patternProperties") && !(*o)["patternProperties"].empty());
    });
    if (!in_b) some.push_back({{"required", {name}}});
  }
  if (some.empty()) return std::nullopt;
  return json{{"type", "object"}, {"anyOf", some}};
}

}  // namespace nf::grammar
