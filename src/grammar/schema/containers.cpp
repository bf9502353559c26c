// Objects and arrays of a conjunction's facts (schema/schema_compiler.h). Properties come in the
// order the schemas declare them (then required names not declared), each optional unless
// required; properties not declared are written after them, only where the schema gives them a
// schema of their own (patternProperties, a schema-valued additionalProperties) or declares no
// property at all. Array items by position (prefixItems, or items as a list), then the rest.
#include <algorithm>
#include <bit>
#include <functional>
#include <map>

#include "grammar/schema/schema_compiler.h"
#include "nanoformer/core/error.h"
#include "nanoformer/grammar/grammar.h"
#include "nanoformer/grammar/regex.h"

namespace nf::grammar {
namespace {

using json = SchemaCompiler::json;

constexpr size_t kMaxCountStates = 20000;  // (property, count) states of one object
constexpr size_t kMaxPatternCells = 3;     // patternProperties split exactly by which patterns a name matches


std::string repeat(const std::string& item, int64_t min, int64_t max) {
  return "( " + item + " ){" + std::to_string(min) + "," + (max < 0 ? "" : std::to_string(max)) + "}";
}

Automaton one_of(const std::vector<std::string>& names) {  // union by De Morgan
  Automaton none = Automaton::any_string();
  for (const std::string& n : names) none = none.intersect(Automaton::literal(n).complement());
  return none.complement();
}

}  // namespace

std::optional<std::string> SchemaCompiler::object_values(const Facts& f) {
  if (!(f.types & kObject)) return std::nullopt;
  if (f.max_properties >= 0 && f.max_properties < f.min_properties) return std::nullopt;
  if (f.objects.empty() && f.required.empty() && f.min_properties == 0 && f.max_properties < 0 && f.property_names.empty())
    return "json-object";
  // the names: declared, then required ones not declared
  std::vector<std::string> names;
  const auto add = [&](const std::string& n) {
    if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
  };
  for (const json* o : f.objects)
    if (o->contains("properties"))
      for (const auto& [name, sub] : (*o)["properties"].items()) add(name);
  for (const std::string& r : f.required) add(r);
  // the names a key may have (propertyNames)
  const std::optional<Automaton> keys = f.property_names.empty() ? std::nullopt : names_automaton(f.property_names, 0);
  // a name's value: in each object schema, its property, else the patterns it matches, else additionalProperties
  const auto value_parts = [&](const std::string& n) {
    Conjunction parts;
    for (const json* o : f.objects) {
      const std::string& where = path_of(o);
      if (o->contains("properties") && (*o)["properties"].contains(n)) {
        parts.push_back(child(o, (*o)["properties"][n], "/properties/" + n));
        continue;
      }
      bool matched = false;
      if (o->contains("patternProperties"))
        for (const auto& [pattern, sub] : (*o)["patternProperties"].items()) {
          bool matches = false;
          try {
            matches = this->pattern(pattern).matches(n);
          } catch (const Error& e) {
            inexpressible(where, "patternProperties", e.what(), "the pattern /" + pattern + "/ is left out");
          }
          if (matches) parts.push_back(child(o, sub, "/patternProperties/" + pattern)), matched = true;
        }
      if (!matched && o->contains("additionalProperties")) parts.push_back(child(o, (*o)["additionalProperties"], "/additionalProperties"));
    }
    return parts;
  };
  std::vector<std::pair<std::string, bool>> properties;  // "name" ws ":" ws value, and whether required
  for (const std::string& n : names) {
    const bool required = std::find(f.required.begin(), f.required.end(), n) != f.required.end();
    std::optional<std::string> value;
    if (!keys || keys->matches(n)) {
      const Conjunction parts = value_parts(n);
      value = parts.empty() ? std::optional<std::string>("json-value") : rule_for(parts);
    }
    if (!value) {
      if (required) return std::nullopt;  // a required property no value satisfies
      continue;
    }
    properties.push_back({gbnf_literal(json(n).dump()) + " ws \":\" ws " + *value, required});
  }
  const std::string extra = undeclared_properties(f, names, keys);
  const int64_t counts = std::max<int64_t>(f.max_properties, std::max<int64_t>(f.min_properties, 1)) + 1;
  if ((properties.size() + 1) * static_cast<size_t>(counts) > kMaxCountStates) {
    inexpressible(f.where, "maxProperties", "too many (property, count) states", "the count bounds are left out");
    return counted_properties(properties, extra, 0, -1, f.where);
  }
  return counted_properties(properties, extra, f.min_properties, f.max_properties, f.where);
}

// The properties not declared: one "key": value alternative per cell of names (the names a set of
// patternProperties matches, or none of them: additionalProperties), written only where the
// schema gives them a schema of their own or declares nothing; "" when none are written.
std::string SchemaCompiler::undeclared_properties(const Facts& f, const std::vector<std::string>& names,
                                                  const std::optional<Automaton>& keys) {
  std::vector<std::string> cells;
  std::vector<const json*> extra_schemas;
  bool closed = f.unevaluated_properties;
  for (const json* o : f.objects) {
    const bool patterns = o->contains("patternProperties") && !(*o)["patternProperties"].empty();
    const bool additional = o->contains("additionalProperties");
    if (additional && (*o)["additionalProperties"] == false && !patterns) closed = true;
    if (patterns || (additional && (*o)["additionalProperties"].is_object())) extra_schemas.push_back(o);
  }
  const bool open_map = names.empty() && extra_schemas.empty() && !closed;  // nothing declared: any property
  if (!closed && (extra_schemas.size() == 1 || open_map)) {
    try {
      Automaton undeclared = keys ? *keys : Automaton::any_string();
      for (const std::string& n : names) undeclared = undeclared.intersect(Automaton::literal(n).complement());
      const auto cell = [&](const Automaton& key, const Conjunction& parts) {
        if (key.empty()) return;
        const std::optional<std::string> value = parts.empty() ? std::optional<std::string>("json-value") : rule_for(parts);
        if (!value) return;
        const std::string key_rule = string_rule(key);
        cells.push_back("\"\\\"\" " + key_rule + " \"\\\"\" ws \":\" ws " + *value);
      };
      if (open_map) {
        cell(undeclared, {});
      } else {
        const json* o = extra_schemas[0];
        std::vector<std::pair<Automaton, Part>> patterns;
        if (o->contains("patternProperties"))
          for (const auto& [pattern, sub] : (*o)["patternProperties"].items())
            patterns.emplace_back(this->pattern(pattern), child(o, sub, "/patternProperties/" + pattern));
        Automaton none = undeclared;  // names matching no pattern
        for (const auto& [a, part] : patterns) none = none.intersect(a.complement());
        if (patterns.size() <= kMaxPatternCells) {  // one cell per set of patterns a name matches
          for (size_t mask = 1; mask < (size_t{1} << patterns.size()); ++mask) {
            Automaton key = undeclared;
            Conjunction parts;
            for (size_t i = 0; i < patterns.size(); ++i) {
              key = key.intersect((mask >> i) & 1 ? patterns[i].first : patterns[i].first.complement());
              if ((mask >> i) & 1) parts.push_back(patterns[i].second);
            }
            cell(key, parts);
          }
        } else {  // names matching exactly one pattern (fewer names)
          for (size_t i = 0; i < patterns.size(); ++i) {
            Automaton key = undeclared.intersect(patterns[i].first);
            for (size_t j = 0; j < patterns.size(); ++j)
              if (j != i) key = key.intersect(patterns[j].first.complement());
            cell(key, {patterns[i].second});
          }
        }
        // the names no pattern matches: additionalProperties' schema; when it is absent or true, any
        // value, written only when nothing is declared
        const json* additional = o->contains("additionalProperties") ? &(*o)["additionalProperties"] : nullptr;
        if (additional && additional->is_object()) cell(none, {child(o, *additional, "/additionalProperties")});
        else if ((!additional || *additional == true) && names.empty()) cell(none, {});
      }
    } catch (const Error& e) {
      if (std::string_view(e.what()).rfind("regex:", 0) != 0) throw;
      inexpressible(f.where, "patternProperties", e.what(), "properties not declared are not written");
      cells.clear();
    }
  }
  if (cells.size() <= 1) return cells.empty() ? "" : cells[0];
  std::string body;
  for (const std::string& c : cells) body += (body.empty() ? "" : " | ") + c;
  return add_rule(body);
}

// The object's members: R(k, c) the declared properties from k on after c members, written in
// order, each optional unless required, then `extra` members (undeclared), so that lo <= c <= hi; c
// saturates at max(lo, 1) when there is no maximum.
std::optional<std::string> SchemaCompiler::counted_properties(const std::vector<std::pair<std::string, bool>>& properties,
                                                              const std::string& extra, int64_t lo, int64_t hi,
                                                              const std::string& where) {
  if (hi >= 0 && hi < lo) return std::nullopt;
  const int64_t n = static_cast<int64_t>(properties.size());
  const int64_t cap = hi >= 0 ? hi : std::max<int64_t>(lo, 1);
  std::map<std::pair<int64_t, int64_t>, std::optional<std::string>> states;
  for (int64_t k = n; k >= 0; --k)
    for (int64_t c = cap; c >= 0; --c) {
      const std::string comma = c > 0 ? "\",\" ws " : "";
      std::vector<std::string> options;
      if (k == n) {  // the undeclared properties: e of them with lo <= c + e <= hi
        if (c >= lo) options.push_back("");
        if (!extra.empty()) {
          const int64_t e_min = std::max<int64_t>(1, lo - c);
          const int64_t e_max = hi < 0 ? -1 : std::min<int64_t>(hi - c, kMaxRepeat);
          NF_CHECK(e_min <= kMaxRepeat, "json_schema: 'minProperties' ", lo, " at ", where, " is above ", kMaxRepeat);
          if (e_max < 0 || e_max >= e_min)
            options.push_back(comma + extra + " ws " + repeat("\",\" ws " + extra + " ws", e_min - 1, e_max < 0 ? -1 : e_max - 1));
        }
      } else {
        const int64_t next = hi < 0 ? std::min(c + 1, cap) : c + 1;
        if (next <= cap || hi < 0)
          if (const auto& rest = states[{k + 1, next}]; rest) options.push_back(comma + properties[static_cast<size_t>(k)].first + " ws " + *rest);
        if (!properties[static_cast<size_t>(k)].second)
          if (const auto& rest = states[{k + 1, c}]; rest) options.push_back(*rest);
      }
      if (options.empty()) {
        states[{k, c}] = std::nullopt;
        continue;
      }
      std::string body;
      for (const std::string& o : options) body += (body.empty() ? "" : " | ") + (o.empty() ? "\"\"" : o);
      states[{k, c}] = add_rule(body);
    }
  const auto& all = states[{0, 0}];
  if (!all) return std::nullopt;
  return "( \"{\" ws " + *all + " \"}\" )";
}

std::optional<std::string> SchemaCompiler::array_values(const Facts& f) {
  if (!(f.types & kArray)) return std::nullopt;
  if (f.arrays.empty() && f.min_items == 0 && f.max_items < 0 && !f.unique_items && f.contains.empty()) return "json-array";
  // each schema's items by position, and the rest
  struct Layout {
    const json* schema;
    std::vector<Part> positions;
    std::optional<Part> rest;
  };
  std::vector<Layout> layouts;
  size_t prefix = 0;
  for (const json* a : f.arrays) {
    Layout l{a, {}, std::nullopt};
    const json* tuple = nullptr;
    const char* tuple_key = nullptr;
    if (a->contains("prefixItems") && document_.asserts("prefixItems")) tuple = &(*a)["prefixItems"], tuple_key = "/prefixItems/";
    else if (a->contains("items") && (*a)["items"].is_array()) tuple = &(*a)["items"], tuple_key = "/items/";  // drafts 4 to 2019-09
    if (tuple) {
      NF_CHECK(tuple->is_array(), "json_schema: '", tuple_key, "' at ", path_of(a), " must be an array of schemas");
      for (size_t i = 0; i < tuple->size(); ++i) l.positions.push_back(child(a, (*tuple)[i], tuple_key + std::to_string(i)));
    }
    if (a->contains("items") && !(*a)["items"].is_array()) l.rest = child(a, (*a)["items"], "/items");
    else if (tuple && tuple_key == std::string("/items/") && a->contains("additionalItems")) l.rest = child(a, (*a)["additionalItems"], "/additionalItems");
    prefix = std::max(prefix, l.positions.size());
    layouts.push_back(std::move(l));
  }
  int64_t min = f.min_items, max = f.max_items;
  std::vector<Conjunction> positions(prefix);
  Conjunction rest;
  for (const Layout& l : layouts) {
    for (size_t i = 0; i < prefix; ++i) {
      if (i < l.positions.size()) positions[i].push_back(l.positions[i]);
      else if (l.rest) positions[i].push_back(*l.rest);
    }
    if (l.rest) rest.push_back(*l.rest);
  }
  if (f.unevaluated_items && rest.empty()) max = max < 0 ? static_cast<int64_t>(prefix) : std::min<int64_t>(max, static_cast<int64_t>(prefix));
  const bool contains = !f.contains.empty() && (f.min_contains > 0 || f.max_contains >= 0);
  if (contains && prefix == 0 && min == 0 && max < 0 && !f.unique_items && f.contains.size() == 1)
    return contains_anywhere(f, rest);
  if (contains) {  // the first minContains items satisfy `contains`; with maxContains, no other item does
    const int64_t n = std::min<int64_t>(f.min_contains, kMaxRepeat);
    while (static_cast<int64_t>(positions.size()) < n) positions.push_back(rest);
    prefix = positions.size();
    for (int64_t i = 0; i < n; ++i) positions[static_cast<size_t>(i)].insert(positions[static_cast<size_t>(i)].end(), f.contains.begin(), f.contains.end());
    if (f.max_contains >= 0) {
      if (n > f.max_contains) return std::nullopt;
      for (size_t i = static_cast<size_t>(n); i < prefix; ++i)
        for (const Part& c : f.contains) positions[i].push_back({negation(c.schema), false});
      for (const Part& c : f.contains) rest.push_back({negation(c.schema), false});
    }
    min = std::max(min, n);
  }
  if (f.unique_items && (max < 0 || max > 1)) {
    if (prefix == 0 && !contains)
      if (const auto distinct = distinct_items(rest, min, max)) return *distinct;
    if (min > 1) inexpressible(f.where, "uniqueItems", "distinct items of arbitrary values", "items may repeat");
    else max = 1;  // at most one item: always unique (fewer values)
  }
  if (max >= 0 && max < min) return std::nullopt;
  NF_CHECK(min <= kMaxRepeat, "json_schema: 'minItems' ", min, " at ", f.where, " is above ", kMaxRepeat);
  if (max > kMaxRepeat) max = kMaxRepeat;  // cut (fewer values)
  std::vector<std::optional<std::string>> items(prefix);
  for (size_t i = 0; i < prefix; ++i) items[i] = positions[i].empty() ? std::optional<std::string>("json-value") : rule_for(positions[i]);
  const std::optional<std::string> more = rest.empty() ? std::optional<std::string>("json-value") : rule_for(rest);
  // tail(k): the items from position k on, k >= 1 written already
  std::optional<std::string> tail;
  const auto rest_from = [&](int64_t k) -> std::optional<std::string> {
    if (max >= 0 && k >= max) return std::string("\"\"");
    if (!more) return k >= min ? std::optional<std::string>("\"\"") : std::nullopt;
    return repeat("\",\" ws " + *more + " ws", std::max<int64_t>(0, min - k), max < 0 ? -1 : max - k);
  };
  // from the last fixed position back: tail(k) = ( "," item_k tail(k+1) )? (optional when k >= min)
  tail = rest_from(static_cast<int64_t>(prefix));
  for (int64_t k = static_cast<int64_t>(prefix) - 1; k >= 1; --k) {
    std::vector<std::string> options;
    if (max < 0 || k < max)
      if (items[static_cast<size_t>(k)] && tail) options.push_back("\",\" ws " + *items[static_cast<size_t>(k)] + " ws " + *tail);
    if (k >= min) options.push_back("\"\"");
    if (options.empty()) {
      tail = std::nullopt;
      continue;
    }
    std::string body;
    for (const std::string& o : options) body += (body.empty() ? "" : " | ") + o;
    tail = add_rule(body);
  }
  std::optional<std::string> first;  // the first item and the rest
  if (max != 0) {
    if (prefix > 0) {
      if (items[0] && tail) first = *items[0] + " ws " + *tail;
    } else if (more) {
      first = *more + " ws " + repeat("\",\" ws " + *more + " ws", std::max<int64_t>(0, min - 1), max < 0 ? -1 : max - 1);
    }
  }
  if (!first) return min == 0 ? std::optional<std::string>("( \"[\" ws \"]\" )") : std::nullopt;
  return "( \"[\" ws " + (min > 0 ? *first : "( " + *first + " )?") + " \"]\" )";
}

// The strings a propertyNames conjunction allows (nullopt: any): its string keywords and enum as
// an automaton, the union of its alternatives' (at most 16 combinations, else strict).
std::optional<Automaton> SchemaCompiler::names_automaton(const Conjunction& parts, int depth) {
  constexpr size_t kMaxNameCombinations = 16;
  NF_CHECK(depth < 16, "json_schema: 'propertyNames' alternatives nested deeper than 16 at ", path_of(parts[0].schema));
  Flat flat;
  std::set<const json*> seen;
  for (const Part& p : parts) flatten(p, flat, seen, 0);
  const Automaton none = Automaton::any_string().complement();
  if (flat.empty) return none;
  if (flat.disjunctions.empty()) {
    const Facts f = merge(flat.leaves);
    if (!(f.types & kString)) return none;
    std::optional<Automaton> a = string_automaton(f);
    if (f.min_length > 0 || f.max_length >= 0) {
      const Automaton lengths = Automaton::length(f.min_length, f.max_length);
      a = a ? a->intersect(lengths) : lengths;
    }
    if (f.values) {
      std::vector<std::string> allowed;
      for (const json* v : allowed_values(f))
        if (v->is_string()) allowed.push_back(v->get<std::string>());
      a = a ? a->intersect(one_of(allowed)) : one_of(allowed);
    }
    return a;
  }
  size_t combinations = 1;
  for (const auto& d : flat.disjunctions) combinations *= std::min(d.size(), kMaxNameCombinations + 1);
  if (combinations > kMaxNameCombinations) {
    inexpressible(path_of(parts[0].schema), "propertyNames", "too many alternatives", "they are left out");
    return std::nullopt;
  }
  std::optional<Automaton> rejected = Automaton::any_string();  // names no combination allows (De Morgan)
  Conjunction chosen = flat.leaves;
  const std::function<void(size_t)> choose = [&](size_t k) {
    if (!rejected) return;
    if (k == flat.disjunctions.size()) {
      const std::optional<Automaton> allowed = names_automaton(chosen, depth + 1);
      rejected = allowed ? std::optional<Automaton>(rejected->intersect(allowed->complement())) : std::nullopt;
      return;
    }
    for (const Conjunction& option : flat.disjunctions[k]) {
      const size_t size = chosen.size();
      chosen.insert(chosen.end(), option.begin(), option.end());
      choose(k + 1);
      chosen.resize(size);
    }
  };
  choose(0);
  if (!rejected) return std::nullopt;
  return rejected->complement();
}

// Arrays with minContains (n) to maxContains (m) items satisfying `contains` (C) anywhere among the
// items (R): n times ( R-and-not-C "," )* C, then any items (no m), or items of which at most m - n
// more are C: T(j) ::= "" | "," R-and-not-C T(j) | "," C T(j + 1) (j < m).
std::optional<std::string> SchemaCompiler::contains_anywhere(const Facts& f, const Conjunction& rest) {
  Conjunction with = rest, without = rest;
  with.push_back(f.contains[0]);
  without.push_back({negation(f.contains[0].schema), false});
  const std::optional<std::string> c = rule_for(with), other = rule_for(without);
  const std::optional<std::string> any = rest.empty() ? std::optional<std::string>("json-value") : rule_for(rest);
  const int64_t n = std::min<int64_t>(f.min_contains, kMaxRepeat), m = std::min<int64_t>(f.max_contains, kMaxRepeat);
  if (m >= 0 && m < n) return std::nullopt;
  if (n == 0 || !c) {  // no C needed (maxContains 0 or no C possible): items that are not C
    if (n > 0) return std::nullopt;
    if (!other) return "( \"[\" ws \"]\" )";
    return "( \"[\" ws ( " + *other + " ws ( \",\" ws " + *other + " ws )* )? \"]\" )";
  }
  const std::string skip_first = other ? "( " + *other + " ws \",\" ws )* " : "";
  const std::string skip_next = other ? "( \",\" ws " + *other + " ws )* " : "";
  std::string body = skip_first + *c + " ws";
  for (int64_t k = 1; k < n; ++k) body += " " + skip_next + "\",\" ws " + *c + " ws";
  if (m < 0) {
    body += " ( \",\" ws " + *any + " ws )*";
  } else {
    std::string next;  // T(j + 1)
    for (int64_t j = m; j >= n; --j) {
      const std::string name = rule_name();
      std::string alternatives = "\"\"";
      if (other) alternatives += " | \",\" ws " + *other + " ws " + name;
      if (j < m) alternatives += " | \",\" ws " + *c + " ws " + next;
      define(name, alternatives);
      next = name;
    }
    body += " " + next;
  }
  return "( \"[\" ws " + body + " \"]\" )";
}

// Arrays of distinct items, min..max of them, when an item is one of a few values: D(used) ::=
// "" | "," v D(used + v) for each value v not used yet.
std::optional<std::string> SchemaCompiler::distinct_items(const Conjunction& rest, int64_t min, int64_t max) {
  constexpr size_t kMaxDistinctValues = 8;  // 2^8 rules at most
  const std::optional<Facts> facts = rest.empty() ? std::nullopt : exact_facts(rest);
  if (!facts || !facts->values) return std::nullopt;
  std::vector<std::string> values;
  for (const json* v : allowed_values(*facts)) values.push_back(gbnf_literal(v->dump()));
  if (values.size() > kMaxDistinctValues) return std::nullopt;
  const size_t k = values.size();
  std::vector<std::optional<std::string>> used(size_t{1} << k);  // D(mask)
  for (size_t mask = used.size(); mask-- > 0;) {
    const auto count = static_cast<int64_t>(std::popcount(mask));
    std::string body;
    if (count >= min) body = "\"\"";
    if (max < 0 || count < max)
      for (size_t i = 0; i < k; ++i)
        if (!((mask >> i) & 1) && used[mask | (size_t{1} << i)])
          body += (body.empty() ? "" : " | ") + std::string(mask ? "\",\" ws " : "") + values[i] + " ws " + *used[mask | (size_t{1} << i)];
    if (!body.empty()) used[mask] = add_rule(body);
  }
  if (!used[0]) return std::nullopt;
  return "( \"[\" ws " + *used[0] + " \"]\" )";
}

}  // namespace nf::grammar
