// Conjunctions of schemas to rules: flattening, distribution over alternatives, memoized rules
// (schema/schema_compiler.h).
#include "grammar/schema/schema_compiler.h"

#include <algorithm>
#include <functional>

#include "nanoformer/core/error.h"

namespace nf::grammar {
namespace {

constexpr size_t kMaxConjunctions = 20000;  // distinct conjunctions one schema may expand to
constexpr size_t kMaxBranches = 64;         // alternatives one conjunction's disjunctions may give (more: the first ones)
constexpr size_t kMaxVisits = 4096;         // partial combinations looked at for them

struct Leave {
  int& depth;
  ~Leave() { --depth; }
};

}  // namespace

SchemaCompiler::SchemaCompiler(const json& root, std::string name, const SchemaOptions& options)
    : root_(root), document_(root), name_(std::move(name)), options_(options) {
  paths_[&root_] = "#";
}

std::string SchemaCompiler::compile() {
  const std::optional<std::string> top = rule_for({{&root_, false}});
  NF_CHECK(top.has_value(), "json_schema: no JSON value satisfies the schema (at #)",
           unwritten_.empty() ? "" : " as the grammar writes it: " + unwritten_[0] + " has no grammar");
  std::string out = name_ + " ::= " + *top + "\n";
  for (const std::string& r : rules_) out += r + "\n";
  return out;
}

const std::string& SchemaCompiler::path_of(const json* schema) const {
  static const std::string unknown = "#";
  const auto it = paths_.find(schema);
  return it == paths_.end() ? unknown : it->second;
}

SchemaCompiler::Part SchemaCompiler::child(const json* parent, const json& schema, const std::string& suffix) {
  paths_.emplace(&schema, path_of(parent) + suffix);
  return {&schema, false};
}

std::string SchemaCompiler::rule_name() { return name_ + "-" + std::to_string(next_rule_++); }

void SchemaCompiler::define(const std::string& name, const std::string& body) { rules_.push_back(name + " ::= " + body); }

std::string SchemaCompiler::add_rule(const std::string& body) {
  const std::string name = rule_name();
  define(name, body);
  return name;
}

void SchemaCompiler::inexpressible(const std::string& where, const std::string& keyword, const std::string& why,
                                   const std::string& instead) {
  NF_CHECK(!options_.strict, "json_schema: '", keyword, "' at ", where, " cannot be written as a grammar (", why,
           "); with strict false it is approximated: ", instead);
  const std::string note = where + ": " + keyword + ": " + instead;
  if (std::find(approximations_.begin(), approximations_.end(), note) == approximations_.end()) approximations_.push_back(note);
}

const SchemaCompiler::json* SchemaCompiler::synthesize(json schema, const std::string& where) {
  arena_.push_back(std::move(schema));
  const json* made = &arena_.back();
  // every object inside counts as written here (its x-nf-* keywords are the compiler's own)
  std::vector<const json*> work{made};
  while (!work.empty()) {
    const json* node = work.back();
    work.pop_back();
    if (!node->is_object() && !node->is_array()) continue;
    synthesized_.insert(node);
    for (const json& item : *node) work.push_back(&item);
  }
  paths_.emplace(made, where);
  return made;
}

int64_t SchemaCompiler::id_of(const json* schema) {
  const auto [it, added] = id_of_.try_emplace(schema, static_cast<int64_t>(ids_.size()));
  if (added) ids_.push_back(schema);
  return it->second;
}

const SchemaCompiler::json* SchemaCompiler::by_id(int64_t id) const {
  NF_CHECK(id >= 0 && static_cast<size_t>(id) < ids_.size(), "json_schema: internal schema id ", id, " unknown");
  return ids_[static_cast<size_t>(id)];
}

void SchemaCompiler::flatten(const Part& part, Flat& flat, std::set<const json*>& seen, int depth) {
  const json& s = *part.schema;
  const std::string& where = path_of(part.schema);
  NF_CHECK(depth < kMaxDepth, "json_schema: $ref / allOf chains longer than ", kMaxDepth, " at ", where);
  if (s.is_boolean()) {
    if (!s.get<bool>()) flat.empty = true;
    return;
  }
  NF_CHECK(s.is_object(), "json_schema: the schema at ", where, " must be an object or a boolean, got ", s.type_name());
  if (part.leaf) {
    flat.leaves.push_back(part);
    return;
  }
  if (!seen.insert(part.schema).second) return;
  const auto list = [&](const char* key) -> const json& {
    const json& v = s[key];
    NF_CHECK(v.is_array() && !v.empty(), "json_schema: '", key, "' at ", where, " must be a non-empty array of schemas");
    return v;
  };
  if (synthesized(part.schema)) {
    if (s.contains("x-nf-not-of")) flatten({negation(by_id(s["x-nf-not-of"].get<int64_t>())), false}, flat, seen, depth + 1);
    if (s.contains("x-nf-part")) flatten({by_id(s["x-nf-part"].get<int64_t>()), false}, flat, seen, depth + 1);
  }
  if (s.contains("$ref") && document_.asserts("$ref")) {
    NF_CHECK(s["$ref"].is_string(), "json_schema: '$ref' at ", where, " must be a string");
    const std::string ref = s["$ref"].get<std::string>();
    const json& target = document_.resolve(ref, where);
    paths_.emplace(&target, ref);
    flatten({&target, false}, flat, seen, depth + 1);
    if (document_.ref_overrides_siblings()) return;  // drafts 4-7: the siblings of $ref are ignored
  }
  flat.leaves.push_back({part.schema, true});
  if (s.contains("allOf")) {
    const json& all = list("allOf");
    for (size_t i = 0; i < all.size(); ++i) flatten(child(part.schema, all[i], "/allOf/" + std::to_string(i)), flat, seen, depth + 1);
  }
  if (s.contains("anyOf")) {
    const json& any = list("anyOf");
    std::vector<Conjunction> options;
    for (size_t i = 0; i < any.size(); ++i) options.push_back({child(part.schema, any[i], "/anyOf/" + std::to_string(i))});
    flat.disjunctions.push_back(std::move(options));
  }
  if (s.contains("oneOf")) {
    // exactly one: each option excludes the others it may overlap with (disjoint ones need nothing)
    const json& one = list("oneOf");
    std::vector<Part> branches;
    for (size_t i = 0; i < one.size(); ++i) branches.push_back(child(part.schema, one[i], "/oneOf/" + std::to_string(i)));
    // (what makes one fail the other, made required, separates two branches more cheaply than a negation)
    std::vector<Conjunction> options;
    for (size_t i = 0; i < branches.size(); ++i) {
      Conjunction option{branches[i]};
      for (size_t j = 0; j < branches.size(); ++j) {
        if (j == i || disjoint(branches[i].schema, branches[j].schema)) continue;
        if (auto required = separation(branches[i].schema, branches[j].schema))
          option.push_back({synthesize(std::move(*required), path_of(branches[i].schema)), false});
        else
          option.push_back({negation(branches[j].schema), false});
      }
      options.push_back(std::move(option));
    }
    flat.disjunctions.push_back(std::move(options));
  }
  if (s.contains("not") && document_.asserts("not"))
    flatten({negation(child(part.schema, s["not"], "/not").schema), false}, flat, seen, depth + 1);
  if (s.contains("if") && document_.asserts("if")) {  // (if and then) or (not if and else)
    const Part condition = child(part.schema, s["if"], "/if");
    Conjunction yes{condition}, no{{negation(condition.schema), false}};
    if (s.contains("then")) yes.push_back(child(part.schema, s["then"], "/then"));
    if (s.contains("else")) no.push_back(child(part.schema, s["else"], "/else"));
    flat.disjunctions.push_back({std::move(yes), std::move(no)});
  }
  // dependencies: the property absent, or present with what it needs
  for (const char* key : {"dependencies", "dependentRequired", "dependentSchemas"}) {
    if (!s.contains(key) || !document_.asserts(key)) continue;
    NF_CHECK(s[key].is_object(), "json_schema: '", key, "' at ", where, " must be an object");
    for (const auto& [name, needs] : s[key].items()) {
      const std::string at = where + "/" + key + "/" + name;
      const json* absent = synthesize({{"properties", {{name, false}}}}, at);
      if (needs.is_array()) {
        json required = json::array({name});
        for (const json& n : needs) {
          NF_CHECK(n.is_string(), "json_schema: '", key, "' at ", at, " must list property names");
          required.push_back(n);
        }
        flat.disjunctions.push_back({{{absent, false}}, {{synthesize({{"type", "object"}, {"required", required}}, at), false}}});
      } else {
        const json* present = synthesize({{"type", "object"}, {"required", {name}}}, at);
        flat.disjunctions.push_back({{{absent, false}}, {{present, false}, child(part.schema, needs, "/" + std::string(key) + "/" + name)}});
      }
    }
  }
}

std::optional<std::string> SchemaCompiler::distribute(const Flat& flat) {
  if (flat.disjunctions.empty()) {
    const Facts facts = merge(flat.leaves);
    if (facts.types == 0) return std::nullopt;
    if (facts.values) return literal_values(facts);
    std::vector<std::string> alternatives;
    for (const auto& one : {literal_values(facts), number_values(facts), string_values(facts), object_values(facts),
                            array_values(facts)})
      if (one) alternatives.push_back(*one);
    if (alternatives.empty()) return std::nullopt;
    std::string body;
    for (const std::string& a : alternatives) body += (body.empty() ? "" : " | ") + a;
    return body;
  }
  // one alternative per combination of options (the first kMaxBranches: fewer alternatives allow
  // fewer values), combinations that require a property another part forbids, or share no type,
  // pruned as they are chosen
  std::vector<std::string> alternatives;
  size_t tried = 0, visited = 0;
  Conjunction chosen = flat.leaves;
  Outline outline;
  for (const Part& p : flat.leaves) outline.add(outline_of(p));
  const std::function<void(size_t, const Outline&)> choose = [&](size_t k, const Outline& so_far) {
    if (tried >= kMaxBranches || ++visited > kMaxVisits) return;
    if (k == flat.disjunctions.size()) {
      ++tried;
      if (const auto r = rule_for(chosen); r && std::find(alternatives.begin(), alternatives.end(), *r) == alternatives.end())
        alternatives.push_back(*r);
      return;
    }
    for (const Conjunction& option : flat.disjunctions[k]) {
      Outline with = so_far;
      for (const Part& p : option) with.add(outline_of(p));
      if (with.contradictory()) continue;
      const size_t size = chosen.size();
      chosen.insert(chosen.end(), option.begin(), option.end());
      choose(k + 1, with);
      chosen.resize(size);
    }
  };
  choose(0, outline);
  if (alternatives.empty()) return std::nullopt;
  std::string body;
  for (const std::string& a : alternatives) body += (body.empty() ? "" : " | ") + a;
  return body;
}

SchemaCompiler::Outline SchemaCompiler::outline_of(const Part& part) {
  Outline o;
  const json& s = *part.schema;
  if (s.is_boolean()) {
    if (!s.get<bool>()) o.types = 0;
    return o;
  }
  if (!s.is_object()) return o;
  const bool own = synthesized(part.schema);
  for (const auto& [key, v] : s.items()) {
    if (own && key == "x-nf-types") o.types &= static_cast<uint8_t>(v.get<int>());
    if (!document_.asserts(key)) continue;
    if (key == "$ref" && !part.leaf) return Outline{};  // its target is not looked at here
    if (key == "type") {
      try {
        o.types &= merge({{part.schema, true}}).types;
      } catch (const Error&) {  // refused where it is compiled
      }
    } else if (key == "required" && v.is_array()) {
      for (const json& r : v)
        if (r.is_string()) o.required.insert(r.get<std::string>());
    } else if (key == "properties" && v.is_object()) {
      for (const auto& [name, sub] : v.items())
        if (sub == false) o.forbidden.insert(name);
    }
  }
  return o;
}

std::optional<std::string> SchemaCompiler::rule_for(Conjunction given) {
  // the key is the set of parts; they are flattened in the order given (properties come in the order declared)
  Conjunction parts = given;
  std::sort(parts.begin(), parts.end());
  parts.erase(std::unique(parts.begin(), parts.end()), parts.end());
  if (const auto it = rules_of_.find(parts); it != rules_of_.end()) return it->second;
  NF_CHECK(++conjunctions_ <= kMaxConjunctions, "json_schema: the schema expands to more than ", kMaxConjunctions,
           " distinct subschemas");
  NF_CHECK(++depth_ < kMaxDepth, "json_schema: schemas nested deeper than ", kMaxDepth, " at ",
           path_of(parts.empty() ? nullptr : parts.front().schema));
  Leave leave{depth_};
  const std::string name = rule_name();
  rules_of_[parts] = name;  // a recursive reference finds it
  Flat flat;
  std::set<const json*> seen;
  std::set<Part> done;
  for (const Part& p : given)
    if (done.insert(p).second) flatten(p, flat, seen, 0);
  const std::optional<std::string> body = flat.empty ? std::nullopt : distribute(flat);
  if (!body) {
    rules_of_[parts] = std::nullopt;  // a recursive reference made meanwhile names no rule: compile_gbnf refuses it
    return std::nullopt;
  }
  define(name, *body);
  return name;
}

}  // namespace nf::grammar
