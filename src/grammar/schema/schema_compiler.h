#pragma once
// JSON Schema to GBNF rules (grammar/json_schema.h), the compiler's state. A value must satisfy a
// conjunction of schemas (a schema and the allOf / $ref / branches it was combined with): each
// distinct conjunction becomes one rule, named before it is built so that recursive references
// find it. Compiling a conjunction:
//   1. flatten: $ref, allOf and `not` (rewritten as the schemas of what it excludes, negation.cpp)
//      add parts; anyOf, oneOf, if/then/else and dependencies add disjunctions (lists of options);
//   2. distribute: one alternative per combination of options (oneOf's options exclude the
//      others, where they may overlap, by their negations), each compiled as a conjunction;
//   3. merge the parts' own keywords into Facts (facts.cpp) and write each type the facts allow
//      (values.cpp: literals, numbers, strings; containers.cpp: objects, arrays).
// A negation is only ever written as values it surely excludes (a subset), and what the grammar
// cannot express goes through `inexpressible()`: refused when strict, else approximated and noted.
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "grammar/schema/number_range.h"
#include "grammar/schema/schema_document.h"
#include "nanoformer/grammar/json_schema.h"
#include "nanoformer/grammar/regex.h"

namespace nf::grammar {


// JSON's types as bits; numbers split into integers and the rest, as JSON Schema's "integer" needs.
enum TypeBits : uint8_t { kNull = 1, kBoolean = 2, kObject = 4, kArray = 8, kString = 16, kInteger = 32, kFraction = 64 };
constexpr uint8_t kAllTypes = 127;
constexpr int64_t kMaxRepeat = 1000;  // GBNF's repetition bound: longer strings / lists are cut to it (fewer values)
constexpr int kMaxDepth = 256;        // conjunctions (and quick facts) computed inside one another

class SchemaCompiler {
 public:
  using json = nlohmann::ordered_json;
  // One schema of a conjunction: `leaf` when its applicators (allOf, anyOf, oneOf, not, if,
  // $ref, dependencies) were taken apart already and only its own keywords remain to merge.
  struct Part {
    const json* schema;
    bool leaf;
    auto operator<=>(const Part&) const = default;
  };
  using Conjunction = std::vector<Part>;

  // The merged keywords of a conjunction's leaves.
  struct Facts {
    uint8_t types = kAllTypes;
    std::optional<std::vector<const json*>> values;  // enum / const: only these
    std::vector<const json*> excluded_values;        // from not enum / not const
    int64_t min_length = 0, max_length = -1;
    std::vector<std::string> patterns, excluded_patterns, formats;
    std::optional<double> minimum, maximum;
    bool exclusive_minimum = false, exclusive_maximum = false;
    std::vector<double> multiples;
    std::vector<const json*> objects;  // leaves with properties / patternProperties / additionalProperties
    std::vector<std::string> required;
    int64_t min_properties = 0, max_properties = -1;
    Conjunction property_names;
    std::vector<const json*> arrays;  // leaves with items / prefixItems / additionalItems
    int64_t min_items = 0, max_items = -1;
    bool unique_items = false, unevaluated_properties = false, unevaluated_items = false;
    Conjunction contains;
    int64_t min_contains = 1, max_contains = -1;
    bool partial = false;  // quick_facts: alternatives (anyOf, oneOf, ...) were left out, so this allows more
    std::string where;     // the first leaf's path, for errors
  };

  SchemaCompiler(const json& root, std::string name, const SchemaOptions& options);
  // The rules: `name` ::= the root schema's values, then the helpers. Throws nf::Error.
  std::string compile();
  const std::vector<std::string>& approximations() const { return approximations_; }

  // --- used by the parts in facts.cpp, negation.cpp, values.cpp, containers.cpp ---
  const SchemaDocument& document() const { return document_; }
  const std::string& path_of(const json* schema) const;
  Part child(const json* parent, const json& schema, const std::string& suffix);  // a full part, its path recorded
  // A conjunction's rule (its name); nullopt when no value satisfies it.
  std::optional<std::string> rule_for(Conjunction parts);  // (parts in the order their properties are to come)
  std::string add_rule(const std::string& body);  // a helper rule; its name
  std::string rule_name();                        // a fresh name (its body added with define())
  void define(const std::string& name, const std::string& body);
  // What a grammar cannot express: throws when strict, else notes "<where>: <keyword>: <instead>".
  void inexpressible(const std::string& where, const std::string& keyword, const std::string& why, const std::string& instead);
  // Internal keywords (x-nf-*) count only in schemas the compiler wrote itself.
  bool synthesized(const json* schema) const { return synthesized_.count(schema) > 0; }
  const json* synthesize(json schema, const std::string& where);  // owned by the compiler; its path recorded
  const json* negation(const json* schema);                       // the schema of values `schema` rejects (a subset)
  const json* by_id(int64_t id) const;                            // an x-nf-* keyword's schema
  int64_t id_of(const json* schema);
  Facts merge(const Conjunction& leaves);  // facts.cpp
  // values.cpp / containers.cpp: each type's alternatives; nullopt when there is none
  std::optional<std::string> literal_values(const Facts& facts);
  std::optional<std::string> number_values(const Facts& facts);
  std::string divisible_integers(int64_t step, bool positive);
  std::string number_range(const NumberRange& range);  // number_range_gbnf's expression, its helpers added
  std::string non_integers(const NumberRange& range);
  std::optional<std::optional<std::string>> integer_multiples(int64_t step, const Facts& facts);
  std::optional<std::string> string_values(const Facts& facts);
  std::optional<std::string> object_values(const Facts& facts);
  std::optional<std::string> array_values(const Facts& facts);
  std::optional<Automaton> names_automaton(const Conjunction& names, int depth);
  std::string undeclared_properties(const Facts& facts, const std::vector<std::string>& names, const std::optional<Automaton>& keys);
  std::optional<std::string> counted_properties(const std::vector<std::pair<std::string, bool>>& properties,
                                                const std::string& extra, int64_t lo, int64_t hi, const std::string& where);
  std::optional<std::string> contains_anywhere(const Facts& facts, const Conjunction& items);
  std::optional<std::string> distinct_items(const Conjunction& items, int64_t min, int64_t max);
  // The strings a string conjunction allows, as an automaton; nullopt: any string of the length bounds.
  std::optional<Automaton> string_automaton(const Facts& facts);
  std::string string_rule(const Automaton& strings);
  // pattern_automaton(source) (pattern.h), built once per compiler: a pattern is matched against
  // every declared property name, and a format's automaton serves every string of that format.
  const Automaton& pattern(const std::string& source);  // the rules of JSON string contents it matches; the start rule's name
  Facts quick_facts(const json* schema);  // a superset's facts (disjunctions ignored: `partial`)
  // The facts of a conjunction without alternatives (nullopt: it has some, or allows nothing).
  std::optional<Facts> exact_facts(const Conjunction& parts);
  // The values of `facts.values` the other facts allow.
  std::vector<const json*> allowed_values(const Facts& facts);
  bool disjoint(const json* a, const json* b);  // disjointness.cpp
  std::optional<json> separation(const json* a, const json* b);  // disjointness.cpp

 private:
  struct Flat {
    Conjunction leaves;
    std::vector<std::vector<Conjunction>> disjunctions;  // each: its options
    bool empty = false;                                  // a false schema among the parts
  };
  // What a part surely says about objects, to prune combinations of options that contradict each other.
  struct Outline {
    uint8_t types = kAllTypes;
    std::set<std::string> required, forbidden;
    void add(const Outline& o) {
      types &= o.types;
      required.insert(o.required.begin(), o.required.end());
      forbidden.insert(o.forbidden.begin(), o.forbidden.end());
    }
    bool contradictory() const {
      if (types == 0) return true;
      if (types != kObject) return false;  // a non-object value satisfies required and properties
      for (const std::string& r : required)
        if (forbidden.count(r)) return true;
      return false;
    }
  };
  Outline outline_of(const Part& part);
  void flatten(const Part& part, Flat& flat, std::set<const json*>& seen, int depth);
  std::optional<std::string> distribute(const Flat& flat);

  const json& root_;
  SchemaDocument document_;
  std::string name_;
  SchemaOptions options_;
  std::vector<std::string> rules_, approximations_;
  std::vector<std::string> unwritten_;  // negations written as fewer values, for the error when none is left
  std::map<Conjunction, std::optional<std::string>> rules_of_;
  std::map<const json*, std::string> paths_;
  std::deque<json> arena_;
  std::set<const json*> synthesized_;
  std::map<const json*, const json*> negations_;
  std::vector<const json*> ids_;
  std::map<const json*, int64_t> id_of_;
  std::map<const json*, Facts> quick_facts_of_;
  std::map<std::string, Automaton> patterns_;
  size_t next_rule_ = 0, conjunctions_ = 0;
  int depth_ = 0, quick_depth_ = 0;
};

}  // namespace nf::grammar
