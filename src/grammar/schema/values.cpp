// The scalar alternatives of a conjunction's facts: enum / const literals, numbers in their
// ranges, strings of their lengths, patterns and formats (schema/schema_compiler.h).
#include <algorithm>
#include <cmath>
#include <map>

#include "grammar/schema/formats.h"
#include "grammar/schema/number_range.h"
#include "grammar/schema/pattern.h"
#include "grammar/schema/schema_compiler.h"
#include "nanoformer/core/error.h"
#include "nanoformer/grammar/grammar.h"
#include "nanoformer/grammar/regex.h"

namespace nf::grammar {
namespace {

using json = SchemaCompiler::json;

constexpr size_t kMaxEnumerated = 1000;  // multiples of an integer multipleOf written one by one
constexpr double kMaxDivisor = 1000;      // an integer multipleOf as a remainder automaton: one rule a remainder


uint8_t type_of(const json& v) {
  switch (v.type()) {
    case json::value_t::null: return kNull;
    case json::value_t::boolean: return kBoolean;
    case json::value_t::object: return kObject;
    case json::value_t::array: return kArray;
    case json::value_t::string: return kString;
    case json::value_t::number_integer:
    case json::value_t::number_unsigned: return kInteger;
    default: return std::floor(v.get<double>()) == v.get<double>() ? kInteger : kFraction;
  }
}

int64_t code_points(const std::string& s) {
  int64_t n = 0;
  for (const char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

bool is_multiple(double value, double of) {
  const double q = value / of;
  return std::fabs(q - std::round(q)) <= 1e-9 * std::max(1.0, std::fabs(q));
}

// k when m is 10^-k (k in 1..16); -1 otherwise
int decimal_places(double m) {
  for (int k = 1; k <= 16; ++k)
    if (std::fabs(m * std::pow(10.0, k) - 1.0) < 1e-9) return k;
  return -1;
}

}  // namespace

std::optional<Automaton> SchemaCompiler::string_automaton(const Facts& f) {
  std::optional<Automaton> a;
  const auto both = [&](const Automaton& b) { a = a ? a->intersect(b) : b; };
  for (const std::string& p : f.patterns) {
    try {
      both(pattern(p));
    } catch (const Error& e) {
      inexpressible(f.where, "pattern", e.what(), "the pattern /" + p + "/ is left out");
    }
  }
  for (const std::string& p : f.excluded_patterns) {
    try {
      both(pattern(p).complement());
    } catch (const Error& e) {  // `not` of what we cannot read: no string
      return Automaton::literal("").intersect(Automaton::length(1, 1));
    }
  }
  for (const std::string& format : f.formats)
    if (const auto source = format_pattern(format)) both(pattern(*source));
  for (const json* v : f.excluded_values)
    if (v->is_string()) both(Automaton::literal(v->get<std::string>()).complement());
  if (!a) return std::nullopt;
  const int64_t max = f.max_length < 0 ? -1 : f.max_length;
  const bool within = a->min_length() >= f.min_length && (max < 0 || (a->max_length() >= 0 && a->max_length() <= max));
  if (!within) {
    try {
      a = a->intersect(Automaton::length(f.min_length, max));
    } catch (const Error& e) {
      // over the state budget: a shorter maximum that fits it (fewer strings), else approximated
      const int64_t fits = static_cast<int64_t>(Automaton::kMaxStates / std::max<size_t>(a->states(), 1)) - 2;
      try {
        if (fits < f.min_length || (max >= 0 && fits >= max)) throw;
        a = a->intersect(Automaton::length(f.min_length, fits));
      } catch (const Error&) {
        inexpressible(f.where, "maxLength", e.what(), "the length bounds are left out of the pattern");
      }
    }
  }
  return a;
}

std::vector<const SchemaCompiler::json*> SchemaCompiler::allowed_values(const Facts& f) {
  std::vector<const json*> out;
  if (!f.values) return out;
  for (const json* v : *f.values) {
    const uint8_t t = type_of(*v);
    if (!(f.types & t)) continue;
    if (std::any_of(f.excluded_values.begin(), f.excluded_values.end(), [&](const json* e) { return *e == *v; })) continue;
    if (t == kString) {
      const std::string s = v->get<std::string>();
      const int64_t n = code_points(s);
      if (n < f.min_length || (f.max_length >= 0 && n > f.max_length)) continue;
      Facts rest = f;
      rest.min_length = 0, rest.max_length = -1;
      if (const auto a = string_automaton(rest); a && !a->matches(s)) continue;
    } else if (t & (kInteger | kFraction)) {
      const double x = v->get<double>();
      if (f.minimum && (x < *f.minimum || (f.exclusive_minimum && x == *f.minimum))) continue;
      if (f.maximum && (x > *f.maximum || (f.exclusive_maximum && x == *f.maximum))) continue;
      if (std::any_of(f.multiples.begin(), f.multiples.end(), [&](double m) { return !is_multiple(x, m); })) continue;
    } else if (t == kObject || t == kArray) {
      const bool constrained = t == kObject ? !f.objects.empty() || !f.required.empty() || f.min_properties > 0 ||
                                                  f.max_properties >= 0 || !f.property_names.empty()
                                            : !f.arrays.empty() || f.min_items > 0 || f.max_items >= 0 || f.unique_items ||
                                                  !f.contains.empty();
      if (constrained)
        inexpressible(f.where, "enum", "an object or array value under further assertions", "the value is written as given");
    }
    out.push_back(v);
  }
  return out;
}

std::optional<std::string> SchemaCompiler::literal_values(const Facts& f) {
  std::string out;
  if (!f.values) {  // null and booleans, less what `not` excludes
    const auto excluded = [&](const json& v) {
      return std::any_of(f.excluded_values.begin(), f.excluded_values.end(), [&](const json* e) { return *e == v; });
    };
    if ((f.types & kNull) && !excluded(json(nullptr))) out += "\"null\"";
    for (const bool b : {true, false})
      if ((f.types & kBoolean) && !excluded(json(b))) out += std::string(out.empty() ? "" : " | ") + (b ? "\"true\"" : "\"false\"");
  } else {
    for (const json* v : allowed_values(f)) out += (out.empty() ? "" : " | ") + gbnf_literal(v->dump());
  }
  if (out.empty()) return std::nullopt;
  return "( " + out + " )";
}

// The non-negative integers divisible by `step` (decimal digits read left to right, the remainder
// their state: r -> (10 r + d) mod step), without 0 when `positive`.
std::string SchemaCompiler::divisible_integers(int64_t step, bool positive) {
  std::vector<std::string> names(static_cast<size_t>(step));
  for (auto& n : names) n = rule_name();
  const auto digits_to = [&](int64_t r, int first_digit) {  // alternatives "[digits] R_t" grouped by target
    std::map<int64_t, std::string> by_target;
    for (int d = first_digit; d <= 9; ++d) by_target[(10 * r + d) % step] += static_cast<char>('0' + d);
    std::string out;
    for (const auto& [t, ds] : by_target) out += (out.empty() ? "" : " | ") + ("[" + ds + "] " + names[static_cast<size_t>(t)]);
    return out;
  };
  for (int64_t r = 0; r < step; ++r) define(names[static_cast<size_t>(r)], (r == 0 ? std::string("\"\" | ") : "") + digits_to(r, 0));
  const std::string nonzero = add_rule(digits_to(0, 1));  // a first digit 1-9, then the rest
  return positive ? nonzero : "( " + nonzero + " | \"0\" )";
}

// The multiples of `step` within the facts' bounds, the non-negative and the negative ones apart:
// a side bounded at both ends written out, a side open away from zero as a digit automaton.
// nullopt: a side neither (a bound far from zero and none beyond), or too many to write.
std::optional<std::optional<std::string>> SchemaCompiler::integer_multiples(int64_t step, const Facts& f) {
  const auto allowed = [&](double x) {
    return (!f.minimum || x > *f.minimum || (x == *f.minimum && !f.exclusive_minimum)) &&
           (!f.maximum || x < *f.maximum || (x == *f.maximum && !f.exclusive_maximum));
  };
  std::vector<std::string> sides;
  const auto s = static_cast<double>(step);
  for (const int sign : {1, -1}) {  // magnitudes from zero (the negative side: from -step)
    const std::optional<double> near = sign > 0 ? f.minimum : f.maximum, far = sign > 0 ? f.maximum : f.minimum;
    if (far && sign * *far < (sign > 0 ? 0 : s)) continue;  // nothing on this side
    const double start = sign > 0 ? 0 : s;                   // the smallest magnitude of this side
    const double from = near ? std::max(start, std::ceil(sign * *near / s) * s) : start;
    if (far) {
      const double to = std::floor(sign * *far / s) * s;
      if ((to - from) / s >= kMaxEnumerated) return std::nullopt;
      for (double m = from; m <= to; m += s)
        if (allowed(sign * m)) sides.push_back(gbnf_literal(json(static_cast<int64_t>(sign * m)).dump()));
      continue;
    }
    if (s > kMaxDivisor || from > s) return std::nullopt;  // open away from zero: all multiples from `from` on
    const bool zero = sign > 0 && from == 0 && allowed(0);
    const std::string digits = divisible_integers(step, !zero);
    sides.push_back(sign > 0 ? digits : "\"-\" " + divisible_integers(step, true));
  }
  if (sides.empty()) return std::optional<std::string>();
  std::string out;
  for (const std::string& side : sides) out += (out.empty() ? "" : " | ") + side;
  return std::optional<std::string>("( " + out + " )");
}

std::string SchemaCompiler::number_range(const NumberRange& range) {
  std::vector<std::string> helpers;
  const std::string expression = number_range_gbnf(range, rule_name(), helpers);
  for (const std::string& h : helpers) rules_.push_back(h);
  return expression;
}

// Numbers in `range` with a non-zero fraction, those whose whole part k has all of [k, k + 1]
// inside the range (fewer values near a bound that is not an integer): k "." digits ending in 1-9,
// and "-" m "." ... for the negative ones. Throws nf::Error when there are none.
std::string SchemaCompiler::non_integers(const NumberRange& range) {
  NF_CHECK(range.max_fraction_digits > 0, "json_schema: no fraction digits allowed");
  const std::string fraction = "\".\" [0-9]{0," + std::to_string(range.max_fraction_digits - 1) + "} [1-9]";
  std::vector<std::string> sides;
  const auto side = [&](std::optional<double> low, std::optional<double> high, const char* sign) {
    NumberRange whole{.minimum = low, .maximum = high, .integer = true, .max_fraction_digits = 0};
    if (whole.maximum && whole.minimum && *whole.maximum < *whole.minimum) return;
    try {
      sides.push_back(std::string(sign) + "( " + number_range(whole) + " ) " + fraction);
    } catch (const Error&) {
    }
  };
  // k >= 0 with lo <= k and k + 1 <= hi; magnitudes m >= 0 of negatives with -(m + 1) >= lo and -m <= hi
  side(std::max(0.0, range.minimum ? std::ceil(*range.minimum) : 0.0),
       range.maximum ? std::optional<double>(std::floor(*range.maximum) - 1) : std::nullopt, "");
  side(std::max(0.0, range.maximum ? std::ceil(-*range.maximum) : 0.0),
       range.minimum ? std::optional<double>(std::floor(-*range.minimum) - 1) : std::nullopt, "\"-\" ");
  NF_CHECK(!sides.empty(), "json_schema: no number with a fraction in the range");
  std::string out;
  for (const std::string& s : sides) out += (out.empty() ? "" : " | ") + s;
  return "( " + out + " )";
}

std::optional<std::string> SchemaCompiler::number_values(const Facts& f) {
  if (!(f.types & (kInteger | kFraction))) return std::nullopt;
  NumberRange range{.minimum = f.minimum, .maximum = f.maximum, .exclusive_minimum = f.exclusive_minimum,
                    .exclusive_maximum = f.exclusive_maximum, .integer = !(f.types & kFraction)};
  std::optional<double> step;  // an integer multipleOf above 1
  for (const double m : f.multiples) {
    if (m == 1) {
      range.integer = true;
    } else if (const int k = decimal_places(m); k > 0) {
      range.max_fraction_digits = std::min(range.max_fraction_digits, k);
    } else if (std::floor(m) == m && (!step || std::fmod(std::max(*step, m), std::min(*step, m)) == 0)) {
      step = std::max(step.value_or(m), m);
    } else {
      inexpressible(f.where, "multipleOf", "multiples of " + json(m).dump() + " are not a digit pattern", "left out");
    }
  }
  if (step) {
    if (const auto multiples = integer_multiples(static_cast<int64_t>(*step), f)) return *multiples;
    inexpressible(f.where, "multipleOf", "multiples of " + json(*step).dump() + " in this range", "left out");
  }
  if (range.integer) range.max_fraction_digits = 0;
  // values `not` excludes split the range around them
  std::vector<NumberRange> ranges{range};
  for (const json* e : f.excluded_values) {
    if (!e->is_number()) continue;
    const double x = e->get<double>();
    std::vector<NumberRange> split;
    for (const NumberRange& r : ranges) {
      const bool inside = (!r.minimum || x > *r.minimum || (x == *r.minimum && !r.exclusive_minimum)) &&
                          (!r.maximum || x < *r.maximum || (x == *r.maximum && !r.exclusive_maximum));
      if (!inside) {
        split.push_back(r);
        continue;
      }
      NumberRange below = r, above = r;
      below.maximum = x, below.exclusive_maximum = true;
      above.minimum = x, above.exclusive_minimum = true;
      split.push_back(below);
      split.push_back(above);
    }
    ranges = std::move(split);
  }
  const bool fractions_only = !(f.types & kInteger);  // numbers but not integers (from `not`, oneOf)
  std::string out;
  for (const NumberRange& r : ranges) {
    try {
      const std::string expression = fractions_only ? non_integers(r) : number_range(r);
      out += (out.empty() ? "" : " | ") + expression;
    } catch (const Error&) {  // no number of that form in this range
    }
  }
  if (out.empty()) return std::nullopt;
  return "( " + out + " )";
}

const Automaton& SchemaCompiler::pattern(const std::string& source) {
  if (const auto it = patterns_.find(source); it != patterns_.end()) return it->second;
  return patterns_.emplace(source, pattern_automaton(source)).first->second;
}

std::string SchemaCompiler::string_rule(const Automaton& strings) {
  const std::string name = rule_name();
  const std::string text = strings.json_string_rules(name);
  for (size_t start = 0; start < text.size();) {  // one helper rule a line
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    if (end > start) rules_.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return name;
}

std::optional<std::string> SchemaCompiler::string_values(const Facts& f) {
  if (!(f.types & kString)) return std::nullopt;
  NF_CHECK(f.min_length <= kMaxRepeat, "json_schema: 'minLength' ", f.min_length, " at ", f.where, " is above ", kMaxRepeat);
  if (f.max_length >= 0 && f.max_length < f.min_length) return std::nullopt;
  const std::optional<Automaton> a = string_automaton(f);
  if (a) {
    if (a->empty()) return std::nullopt;
    const std::string name = string_rule(*a);
    return "( \"\\\"\" " + name + " \"\\\"\" )";
  }
  if (f.min_length == 0 && f.max_length < 0) return "json-string";
  const int64_t max = f.max_length < 0 ? -1 : std::min(f.max_length, kMaxRepeat);  // longer: cut (fewer values)
  return "( \"\\\"\" json-char{" + std::to_string(f.min_length) + "," + (max < 0 ? "" : std::to_string(max)) + "} \"\\\"\" )";
}

}  // namespace nf::grammar
