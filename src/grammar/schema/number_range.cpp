// JSON numbers within bounds as GBNF expressions (grammar/schema/number_range.h).
//
// A number is a sign, an integer part and a fraction. Its magnitude is at least a bound L = Li.Lf
// when its integer part is above Li, or equal to Li with a fraction (zero-padded) at least Lf; at
// most U likewise. So a range of magnitudes is: Li with the fractions >= Lf, the integers strictly
// between Li and Ui with any fraction, Ui with the fractions <= Uf. Integer ranges are spelled digit
// by digit (the decomposition of llama.cpp's common/json-schema-to-grammar.cpp
// `_generate_min_max_int` and of regex numeric-range generators): per length, a shared prefix, then
// the low end's digit followed by "anything above the rest", digits in between followed by any
// digits, the high end's digit followed by "anything below the rest". Fractions are compared the same
// way, digit by digit, so every bound is exact: no double is rounded.
#include "grammar/schema/number_range.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <initializer_list>
#include <cmath>
#include <map>
#include <sstream>
#include <string_view>
#include <utility>

#include "nanoformer/core/error.h"

namespace nf::grammar {
namespace {

constexpr size_t kMaxIntegerDigits = 16;  // as json-integer: every such integer parses as a double

// The unbounded forms, the languages of json_schema.cpp's json-integer and json-number.
constexpr const char* kAnyInteger = R"("-"? ( "0" | [1-9] [0-9]{0,15} ))";
constexpr const char* kAnyNumber =
    R"("-"? ( "0" | [1-9] [0-9]{0,15} ) ( "." [0-9]{1,16} )? ( [eE] [-+]? [0-9]{1,2} )?)";

// A finite double as exact decimal digits: the shortest text that reads back as it (to_chars).
struct Decimal {
  bool negative = false;
  std::string integer;   // no leading zeros ("0" for zero)
  std::string fraction;  // no trailing zeros
};

Decimal decimal_of(double value) {
  std::array<char, 1200> text{};  // the longest fixed form of a double is about 1080 characters
  const auto [end, error] = std::to_chars(text.data(), text.data() + text.size(), value, std::chars_format::fixed);
  NF_CHECK(error == std::errc(), "json_schema: cannot write the bound ", value);
  std::string_view s(text.data(), static_cast<size_t>(end - text.data()));
  Decimal d;
  if (!s.empty() && s.front() == '-') d.negative = true, s.remove_prefix(1);
  const size_t point = s.find('.');
  d.integer = std::string(s.substr(0, point));
  if (point != std::string_view::npos) d.fraction = std::string(s.substr(point + 1));
  while (!d.fraction.empty() && d.fraction.back() == '0') d.fraction.pop_back();
  if (d.integer == "0" && d.fraction.empty()) d.negative = false;  // -0 is 0
  return d;
}

// A bound on magnitudes: Integer.Fraction, and whether the bound itself is allowed.
struct Bound {
  std::string integer, fraction;
  bool inclusive = true;
};

// Canonical digit strings compared as integers.
int compare_integers(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return a.size() < b.size() ? -1 : 1;
  return a.compare(b) < 0 ? -1 : a == b ? 0 : 1;
}

// The parts joined (instead of "literal" + std::string temporaries, which GCC 12 warns about: -Wrestrict).
std::string cat(std::initializer_list<std::string_view> parts) {
  std::string out;
  for (const std::string_view part : parts) out += part;
  return out;
}

std::string plus_one(std::string s) {
  size_t i = s.size();
  while (i > 0 && s[i - 1] == '9') s[--i] = '0';
  if (i == 0) return cat({"1", s});
  ++s[i - 1];
  return s;
}

std::string minus_one(std::string s) {  // s > 0
  size_t i = s.size();
  while (s[i - 1] == '0') s[--i] = '9';
  --s[i - 1];
  if (s.size() > 1 && s.front() == '0') s.erase(0, 1);
  return s;
}

std::string digit_class(char first, char last) {
  return first == last ? std::string("\"") + first + "\"" : std::string("[") + first + "-" + last + "]";
}

std::string exactly_digits(size_t n) {
  if (n == 0) return "";
  return n == 1 ? " [0-9]" : " [0-9]{" + std::to_string(n) + "}";
}

std::string alternatives(const std::vector<std::string>& alts) {
  std::string out;
  for (const std::string& a : alts) out += (out.empty() ? "" : " | ") + a;
  return alts.size() == 1 ? out : "( " + out + " )";
}

// The strings a fraction (the digits after the point) may continue with: whether it may stop here,
// and the alternatives of one digit or more.
struct Continuations {
  bool may_stop = false;
  std::vector<std::string> more;
  bool empty() const { return !may_stop && more.empty(); }
  // As an expression: nothing, alternatives, or optional alternatives (prefixed by `lead`).
  std::string expression(const std::string& lead) const {
    if (more.empty()) return "";
    const std::string body = lead + alternatives(more);
    if (!may_stop) return " " + body;
    return lead.empty() && more.size() > 1 ? " " + body + "?" : " ( " + body + " )?";  // a group already
  }
};

class RangeWriter {
 public:
  RangeWriter(const std::string& name, std::vector<std::string>& rules, size_t fraction_digits)
      : name_(name), rules_(rules), fraction_digits_(fraction_digits) {}

  // The magnitudes from `low` to `high` (nullopt: up to the largest of 16 digits), as alternatives.
  std::vector<std::string> magnitudes(const Bound& low, const std::optional<Bound>& high) {
    std::vector<std::string> alts;
    if (low.integer.size() > kMaxIntegerDigits) return alts;
    const std::string high_integer = high ? high->integer : std::string(kMaxIntegerDigits, '9');
    const int order = compare_integers(low.integer, high_integer);
    if (order > 0) return alts;
    if (order == 0) {  // one integer part: its fraction between both bounds
      add(alts, low.integer, fractions(0, &low, high ? &*high : nullptr));
      return alts;
    }
    // Li with the fractions above Lf (folded into the integers when that is every fraction).
    const Continuations above_low = fractions(0, &low, nullptr);
    const bool low_whole = above_low.may_stop && low.fraction.empty() && low.inclusive;
    if (!low_whole) add(alts, low.integer, above_low);
    // Ui with the fractions below Uf (folded in too when only integers are written and Ui is allowed).
    const Continuations below_high = high ? fractions(0, nullptr, &*high) : Continuations{};
    const bool high_whole = !high || (fraction_digits_ == 0 && below_high.may_stop);
    // The integers between, any fraction.
    const std::string first = low_whole ? low.integer : plus_one(low.integer);
    const std::string last = high_whole ? high_integer : minus_one(high_integer);
    if (compare_integers(first, last) <= 0) {
      const std::string any_fraction = fractions(0, nullptr, nullptr).expression("\".\" ");
      for (const std::string& i : integers(first, last)) alts.push_back(i + any_fraction);
    }
    if (!high_whole) add(alts, high->integer, below_high);
    return alts;
  }

 private:
  // The integer part `integer` followed by the fractions `c` (none: nothing).
  void add(std::vector<std::string>& alts, const std::string& integer, const Continuations& c) {
    if (c.empty()) return;
    alts.push_back("\"" + integer + "\"" + c.expression("\".\" "));
  }

  // The fraction digits from position `at` on whose zero-padded value is at least low's (above it
  // when exclusive) and at most high's, while the digits so far equal theirs (a null bound: already
  // passed it; neither: any digits).
  Continuations fractions(size_t at, const Bound* low, const Bound* high) {
    Continuations c;
    const auto rest_is_zero = [&](const Bound* b) { return at >= b->fraction.size(); };
    // Stopping pads with zeros: at least low's rest when that is zero (and allowed), below high's unless zero.
    c.may_stop = (!low || (rest_is_zero(low) && low->inclusive)) && (!high || !rest_is_zero(high) || high->inclusive);
    if (at >= fraction_digits_) return c;
    if (!low && !high) {
      c.more.push_back("[0-9]" + up_to_digits(fraction_digits_ - at - 1));
      return c;
    }
    const auto digit = [&](const Bound* b) { return rest_is_zero(b) ? '0' : b->fraction[at]; };
    const char min_digit = low ? digit(low) : '0', max_digit = high ? digit(high) : '9';
    // Runs of digits that leave the same bounds tight: below/at/above each bound's digit.
    for (char first = min_digit; first <= max_digit;) {
      const bool low_tight = low && first == min_digit, high_tight = high && first == max_digit;
      char last = first;
      if (!low_tight && !high_tight) last = static_cast<char>(high ? max_digit - 1 : '9');
      const Continuations next = fractions(at + 1, low_tight ? low : nullptr, high_tight ? high : nullptr);
      if (!next.empty()) c.more.push_back(digit_class(first, last) + next.expression(""));
      first = static_cast<char>(last + 1);
    }
    return c;
  }

  // A rule of 0..n digits ("<name>-<i> ::= ( [0-9] <name>-<j> )?"), shared; empty for n = 0.
  std::string up_to_digits(size_t n) {
    if (n == 0) return "";
    const auto known = up_to_.find(n);
    if (known != up_to_.end()) return known->second;
    const std::string shorter = up_to_digits(n - 1);
    const std::string rule = name_ + "-" + std::to_string(up_to_.size());
    rules_.push_back(rule + " ::= ( [0-9]" + shorter + " )?");
    return up_to_[n] = " " + rule;
  }

  // Canonical integers from `first` to `last` (first <= last), as alternatives: one per length.
  std::vector<std::string> integers(const std::string& first, const std::string& last) {
    std::vector<std::string> alts;
    for (size_t n = first.size(); n <= last.size(); ++n) {
      const std::string low = n == first.size() ? first : cat({"1", std::string(n - 1, '0')});
      const std::string high = n == last.size() ? last : std::string(n, '9');
      same_length(low, high, alts);
    }
    return alts;
  }

  // Digit strings of equal length from low to high: a shared prefix, then low's digit with the
  // strings above low's rest, the digits in between with any rest, high's digit with those below.
  static void same_length(const std::string& low, const std::string& high, std::vector<std::string>& alts) {
    size_t p = 0;
    while (p < low.size() && low[p] == high[p]) ++p;
    const std::string prefix = p > 0 ? cat({"\"", low.substr(0, p), "\" "}) : "";
    if (p == low.size()) {
      alts.push_back("\"" + low + "\"");
      return;
    }
    const size_t rest = low.size() - p - 1;
    const bool low_rest_any = low.find_first_not_of('0', p + 1) == std::string::npos;
    const bool high_rest_any = high.find_first_not_of('9', p + 1) == std::string::npos;
    std::vector<std::string> parts;
    if (!low_rest_any) parts.push_back(digit_class(low[p], low[p]) + " " + at_least(low.substr(p + 1)));
    const char from = low_rest_any ? low[p] : static_cast<char>(low[p] + 1);
    const char to = high_rest_any ? high[p] : static_cast<char>(high[p] - 1);
    if (from <= to) parts.push_back(digit_class(from, to) + exactly_digits(rest));
    if (!high_rest_any) parts.push_back(digit_class(high[p], high[p]) + " " + at_most(high.substr(p + 1)));
    alts.push_back(prefix + alternatives(parts));
  }

  // Digit strings of s's length that are >= s (<= s).
  static std::string at_least(const std::string& s) {
    if (s.find_first_not_of('0') == std::string::npos) return exactly_digits(s.size()).substr(1);
    std::string same_first = digit_class(s[0], s[0]);
    if (s.size() > 1) same_first += " ", same_first += at_least(s.substr(1));
    std::vector<std::string> parts = {same_first};
    if (s[0] < '9') parts.push_back(digit_class(static_cast<char>(s[0] + 1), '9') + exactly_digits(s.size() - 1));
    return alternatives(parts);
  }
  static std::string at_most(const std::string& s) {
    if (s.find_first_not_of('9') == std::string::npos) return exactly_digits(s.size()).substr(1);
    std::string same_first = digit_class(s[0], s[0]);
    if (s.size() > 1) same_first += " ", same_first += at_most(s.substr(1));
    std::vector<std::string> parts = {same_first};
    if (s[0] > '0') parts.push_back(digit_class('0', static_cast<char>(s[0] - 1)) + exactly_digits(s.size() - 1));
    return alternatives(parts);
  }

  const std::string& name_;
  std::vector<std::string>& rules_;
  size_t fraction_digits_;
  std::map<size_t, std::string> up_to_;
};

}  // namespace

std::string number_range_gbnf(const NumberRange& range, const std::string& name, std::vector<std::string>& rules) {
  const bool bounded = range.minimum || range.maximum;
  if (!bounded && range.integer) return kAnyInteger;
  if (!bounded && range.max_fraction_digits >= 16) return kAnyNumber;
  NF_CHECK(range.max_fraction_digits >= 0, "json_schema: max_fraction_digits ", range.max_fraction_digits,
           " is negative");
  for (const std::optional<double>& b : {range.minimum, range.maximum})
    NF_CHECK(!b || !std::isnan(*b), "json_schema: a bound is NaN");
  // Infinite bounds bound nothing; bounds of more than 16 integer digits are treated alike below.
  std::optional<Decimal> low, high;
  if (range.minimum && std::isfinite(*range.minimum)) low = decimal_of(*range.minimum);
  if (range.maximum && std::isfinite(*range.maximum)) high = decimal_of(*range.maximum);
  const bool low_infinite = range.minimum && std::isinf(*range.minimum) && *range.minimum > 0;
  const bool high_infinite = range.maximum && std::isinf(*range.maximum) && *range.maximum < 0;
  // A bound beyond 16 digits is above or below every number of the form: no bound, or nothing left.
  const auto beyond = [](const std::optional<Decimal>& d) { return d && d->integer.size() > kMaxIntegerDigits; };
  const bool nothing =
      low_infinite || high_infinite || (beyond(low) && !low->negative) || (beyond(high) && high->negative);
  if (beyond(low)) low.reset();
  if (beyond(high)) high.reset();

  const int fraction_digits = range.integer ? 0 : std::min(range.max_fraction_digits, 16);
  RangeWriter writer(name, rules, static_cast<size_t>(fraction_digits));
  std::vector<std::string> alts;
  if (!nothing) {
    // Negative numbers: magnitudes above -maximum (above 0 when the maximum is not negative: no "-0")
    // up to -minimum.
    if (!low || low->negative) {
      const Bound from = high && high->negative ? Bound{high->integer, high->fraction, !range.exclusive_maximum}
                                                : Bound{"0", "", false};
      std::optional<Bound> to;
      if (low) to = Bound{low->integer, low->fraction, !range.exclusive_minimum};
      const std::vector<std::string> negative = writer.magnitudes(from, to);
      if (!negative.empty()) alts.push_back(cat({"\"-\" ", alternatives(negative)}));
    }
    // Zero and the positive numbers: magnitudes from the minimum (0 when it is negative) to the maximum.
    if (!high || !high->negative) {
      const Bound from = low && !low->negative ? Bound{low->integer, low->fraction, !range.exclusive_minimum}
                                               : Bound{"0", "", true};
      std::optional<Bound> to;
      if (high) to = Bound{high->integer, high->fraction, !range.exclusive_maximum};
      for (std::string& a : writer.magnitudes(from, to)) alts.push_back(std::move(a));
    }
  }
  if (alts.empty()) {
    std::ostringstream bounds;
    bounds.precision(17);
    if (range.minimum) bounds << (range.exclusive_minimum ? "exclusiveMinimum " : "minimum ") << *range.minimum;
    if (range.minimum && range.maximum) bounds << ", ";
    if (range.maximum) bounds << (range.exclusive_maximum ? "exclusiveMaximum " : "maximum ") << *range.maximum;
    NF_FAIL("json_schema: no ", range.integer ? "integer" : "number", " of at most 16 integer digits",
            range.integer ? "" : cat({" and ", std::to_string(fraction_digits), " fraction digits"}),
            " is in the range ", bounds.str());
  }
  return alternatives(alts);
}

}  // namespace nf::grammar
