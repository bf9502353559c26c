// number_range_gbnf (grammar/schema/number_range.h): for many ranges, the compiled grammar accepts a
// string exactly when it is JSON number text of the allowed form whose value is in the range. The
// expectation is computed here on decimal digit strings (no double), from the bounds as written.
#include <gtest/gtest.h>

#include <charconv>
#include <cstdlib>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "grammar/schema/number_range.h"
#include "nanoformer/core/error.h"
#include "nanoformer/grammar/grammar.h"
#include "nanoformer/grammar/matcher.h"

namespace nf::grammar {
namespace {

// A range as a schema writes it: bounds as decimal text, each the shortest text of its double (so
// that the double number_range_gbnf sees is the decimal compared with here).
struct TextRange {
  std::optional<std::string> minimum, maximum;
  bool exclusive_minimum = false, exclusive_maximum = false;
  bool integer = false;
  int max_fraction_digits = 16;

  NumberRange parsed() const {
    NumberRange r;
    if (minimum) r.minimum = std::strtod(minimum->c_str(), nullptr);
    if (maximum) r.maximum = std::strtod(maximum->c_str(), nullptr);
    r.exclusive_minimum = exclusive_minimum, r.exclusive_maximum = exclusive_maximum;
    r.integer = integer, r.max_fraction_digits = max_fraction_digits;
    return r;
  }
  std::string shown() const {
    return std::string(integer ? "integer " : "number ") + (exclusive_minimum ? "(" : "[") + minimum.value_or("-inf") +
           ", " + maximum.value_or("inf") + (exclusive_maximum ? ")" : "]") + " digits " +
           std::to_string(max_fraction_digits);
  }
};

// A decimal's sign and digits, zeros trimmed: integer without leading zeros, fraction without trailing ones.
struct Digits {
  bool negative = false;
  std::string integer, fraction;
};

Digits digits_of(const std::string& text) {  // text: -?[0-9]+(.[0-9]+)?
  Digits d;
  std::string s = text;
  if (s[0] == '-') d.negative = true, s.erase(0, 1);
  const size_t point = s.find('.');
  d.integer = s.substr(0, point);
  if (point != std::string::npos) d.fraction = s.substr(point + 1);
  d.integer.erase(0, std::min(d.integer.find_first_not_of('0'), d.integer.size()));
  while (!d.fraction.empty() && d.fraction.back() == '0') d.fraction.pop_back();
  if (d.integer.empty() && d.fraction.empty()) d.negative = false;
  return d;
}

// -1, 0, 1 as a < b, a == b, a > b, exactly.
int compare(const std::string& a_text, const std::string& b_text) {
  const Digits a = digits_of(a_text), b = digits_of(b_text);
  if (a.negative != b.negative) return a.negative ? -1 : 1;
  int magnitude = 0;
  if (a.integer.size() != b.integer.size()) {
    magnitude = a.integer.size() < b.integer.size() ? -1 : 1;
  } else if (a.integer != b.integer) {
    magnitude = a.integer < b.integer ? -1 : 1;
  } else {
    std::string fa = a.fraction, fb = b.fraction;
    fa.resize(std::max(fa.size(), fb.size()), '0');
    fb.resize(fa.size(), '0');
    magnitude = fa == fb ? 0 : fa < fb ? -1 : 1;
  }
  return a.negative ? -magnitude : magnitude;
}

bool all_digits(const std::string& s, size_t min, size_t max) {
  return s.size() >= min && s.size() <= max && s.find_first_not_of("0123456789") == std::string::npos;
}

// Whether `s` is what the range's grammar should accept: the header's form, then the value.
bool expected(const TextRange& r, const std::string& s) {
  const bool bounded = r.minimum || r.maximum;
  const int fraction_digits = r.integer ? 0 : std::min(r.max_fraction_digits, 16);
  const bool json_form = !bounded && (r.integer || r.max_fraction_digits >= 16);  // json-integer / json-number
  std::string body = s, exponent;
  const size_t e = body.find_first_of("eE");
  if (e != std::string::npos) exponent = body.substr(e + 1), body.resize(e);
  if (!exponent.empty() || e != std::string::npos) {
    if (!json_form || r.integer) return false;
    if (!exponent.empty() && (exponent[0] == '+' || exponent[0] == '-')) exponent.erase(0, 1);
    if (!all_digits(exponent, 1, 2)) return false;
  }
  const bool negative = !body.empty() && body[0] == '-';
  if (negative) body.erase(0, 1);
  const size_t point = body.find('.');
  const std::string integer = body.substr(0, point);
  if (!all_digits(integer, 1, 16) || (integer.size() > 1 && integer[0] == '0')) return false;
  if (point != std::string::npos && !all_digits(body.substr(point + 1), 1, static_cast<size_t>(fraction_digits)))
    return false;
  if (negative && digits_of(body).integer.empty() && digits_of(body).fraction.empty() && !json_form) return false;
  if (e != std::string::npos) return true;  // unbounded
  const std::string value = (negative ? "-" : "") + body;
  if (r.minimum) {
    const int c = compare(value, *r.minimum);
    if (c < 0 || (c == 0 && r.exclusive_minimum)) return false;
  }
  if (r.maximum) {
    const int c = compare(value, *r.maximum);
    if (c > 0 || (c == 0 && r.exclusive_maximum)) return false;
  }
  return true;
}

// Strings to try: integers around zero, the bounds and the ends of 16 digits; decimals of 1-3
// fraction digits near them; the bounds themselves nudged by a last digit; malformed numbers.
std::vector<std::string> candidates(const TextRange& r, std::mt19937& rng) {
  std::set<std::string> out = {"0",   "-0",  "-0.0", "00",  "01",  "-01", "1.",  ".5",  "+1",   "-",
                               "",    "1e5", "1E+05", "-2e-3", "1.5e3", "1e123", "0.0", "1.00", "-1.50",
                               "12345678901234567", "9999999999999999", "-9999999999999999", "0.0000000000000001",
                               "0.00000000000000001", "1.5x", "1-"};
  std::vector<long long> anchors = {0, 9999999999999999LL, -9999999999999999LL};
  for (const std::optional<std::string>& b : {r.minimum, r.maximum}) {
    if (!b) continue;
    const Digits d = digits_of(*b);
    if (d.integer.size() <= 16) anchors.push_back((d.negative ? -1 : 1) * std::atoll(("0" + d.integer).c_str()));
    const std::string point = b->find('.') == std::string::npos ? "." : "";
    for (const char* tail : {"0", "1", "5", "9", "01", "99", "001"}) out.insert(*b + point + tail);
    out.insert(*b);
    std::string nudged = *b;
    for (const int delta : {-1, 1}) {
      nudged.back() = static_cast<char>(b->back() + delta);
      if (nudged.back() >= '0' && nudged.back() <= '9') out.insert(nudged);
    }
  }
  std::uniform_int_distribution<int> thousand(0, 999);
  for (const long long a : anchors) {
    for (long long v = a - 12; v <= a + 12; ++v) out.insert(std::to_string(v));
    for (long long v = a - 2; v <= a + 2; ++v) {
      for (const std::string& sign : {std::string(""), std::string("-")}) {
        const std::string i = sign + std::to_string(v < 0 ? -v : v);
        for (int f = 0; f < 100; ++f) {  // every 1 and 2 digit fraction at the anchor, some near it
          out.insert(i + "." + std::to_string(f % 10));
          if (v == a || f % 3 == 0) out.insert(i + "." + std::to_string(f / 10) + std::to_string(f % 10));
        }
        for (int k = 0; k < 15; ++k) {
          const int f = thousand(rng);
          out.insert(i + "." + std::to_string(f / 100) + std::to_string(f / 10 % 10) + std::to_string(f % 10));
        }
      }
    }
  }
  return {out.begin(), out.end()};
}

std::shared_ptr<const Grammar> compile(const TextRange& r) {
  std::vector<std::string> rules;
  std::string text = "root ::= " + number_range_gbnf(r.parsed(), "num", rules) + "\n";
  for (const std::string& rule : rules) text += rule + "\n";
  return std::make_shared<const Grammar>(compile_gbnf(text));
}

bool accepts(const std::shared_ptr<const Grammar>& g, const std::string& s) {
  GrammarMatcher m(g);
  return m.accept(s) && GrammarMatcher::can_end(m.state());
}

// Every candidate is accepted exactly when expected; a range that throws must expect none.
void check(const TextRange& r, std::mt19937& rng) {
  SCOPED_TRACE(r.shown());
  const std::vector<std::string> strings = candidates(r, rng);
  std::shared_ptr<const Grammar> g;
  try {
    g = compile(r);
  } catch (const Error& e) {
    for (const std::string& s : strings)
      EXPECT_FALSE(expected(r, s)) << "the range threw (" << e.what() << ") but '" << s << "' is in it";
    return;
  }
  for (const std::string& s : strings) EXPECT_EQ(accepts(g, s), expected(r, s)) << "'" << s << "'";
}

TextRange integers(std::optional<std::string> lo, std::optional<std::string> hi) {
  TextRange r;
  r.minimum = std::move(lo), r.maximum = std::move(hi), r.integer = true;
  return r;
}

TextRange numbers(std::optional<std::string> lo, std::optional<std::string> hi, int digits) {
  TextRange r;
  r.minimum = std::move(lo), r.maximum = std::move(hi), r.max_fraction_digits = digits;
  return r;
}

TEST(NumberRange, EdgeCases) {
  std::mt19937 rng(7);
  const std::string e300 = "1" + std::string(300, '0');
  std::vector<TextRange> ranges = {
      integers("0", "0"), integers("-1", "1"), integers("-10", "-3"), integers("7", "1234567"),
      integers("0", std::nullopt), integers(std::nullopt, "0"), integers("-5", std::nullopt),
      integers(std::nullopt, "-5"), integers(std::nullopt, std::nullopt), integers("0.5", "99.99"),
      integers("-0.5", "0.5"), integers("-9007199254740991", "9007199254740991"), integers(std::nullopt, e300),
      integers("-" + e300, "3"), integers("9223372036854775808", std::nullopt), integers("99", "1000"),
      integers("100", "999"), integers("109", "190"), integers("1999", "2001"), integers("0", "9999999999999998"),
      numbers("0.5", "99.99", 16), numbers("0.5", "99.99", 2), numbers("0.5", "99.99", 1), numbers("0", "1", 3),
      numbers("-1", "1", 2), numbers("-0.25", "-0.125", 3), numbers("0.125", "0.25", 3), numbers("0.125", "0.25", 2),
      numbers("-99.99", "-0.5", 3), numbers(std::nullopt, std::nullopt, 16), numbers(std::nullopt, std::nullopt, 2),
      numbers(std::nullopt, std::nullopt, 0), numbers("3.14159", std::nullopt, 16), numbers(std::nullopt, "-2.5", 1),
      numbers("1.05", "1.5", 3), numbers("-" + e300, e300, 3), numbers("0.001", "0.002", 3),
      numbers("12.3456", "12.3457", 16), numbers("-7", "7", 0)};
  for (TextRange r : std::vector<TextRange>(ranges)) {  // the exclusive forms of each
    r.exclusive_minimum = true;
    ranges.push_back(r);
    r.exclusive_maximum = true;
    ranges.push_back(r);
    r.exclusive_minimum = false;
    ranges.push_back(r);
  }
  for (const TextRange& r : ranges) check(r, rng);
}

// A random decimal of up to `max_integer` integer digits and `max_fraction` fraction digits.
std::string random_decimal(std::mt19937& rng, int max_integer, int max_fraction) {
  std::uniform_int_distribution<int> digit(0, 9), coin(0, 1);
  const int n = std::uniform_int_distribution<int>(1, max_integer)(rng);
  const int f = std::uniform_int_distribution<int>(0, max_fraction)(rng);
  std::string s = coin(rng) ? "-" : "";
  for (int i = 0; i < n; ++i) s += static_cast<char>('0' + digit(rng));
  if (f > 0) s += ".";
  for (int i = 0; i < f; ++i) s += static_cast<char>('0' + digit(rng));
  const Digits d = digits_of(s);  // canonical text: no leading zeros, no trailing fraction zeros, no -0
  return (d.negative ? "-" : "") + (d.integer.empty() ? "0" : d.integer) + (d.fraction.empty() ? "" : "." + d.fraction);
}

// The shortest decimal text of the double nearest `text` (what number_range_gbnf compares with).
std::string shortest(const std::string& text) {
  char buffer[400];
  const double value = std::strtod(text.c_str(), nullptr);
  const auto end = std::to_chars(buffer, buffer + sizeof buffer, value, std::chars_format::fixed).ptr;
  const Digits d = digits_of(std::string(buffer, end));
  return (d.negative ? "-" : "") + (d.integer.empty() ? "0" : d.integer) + (d.fraction.empty() ? "" : "." + d.fraction);
}

TEST(NumberRange, RandomRanges) {
  std::mt19937 rng(2024);
  std::uniform_int_distribution<int> coin(0, 1), side(0, 4);
  const int digit_choices[] = {0, 1, 2, 3, 16};
  for (int i = 0; i < 150; ++i) {
    const int integer_digits = std::uniform_int_distribution<int>(1, i % 3 == 0 ? 16 : 4)(rng);
    TextRange r;
    r.integer = coin(rng);
    r.max_fraction_digits = digit_choices[std::uniform_int_distribution<int>(0, 4)(rng)];
    std::string a = shortest(random_decimal(rng, integer_digits, 3));
    std::string b = shortest(random_decimal(rng, integer_digits, 3));
    if (compare(a, b) > 0) std::swap(a, b);
    const int sides = side(rng);  // 0: only a minimum, 1: only a maximum, else both
    if (sides != 1) r.minimum = a;
    if (sides != 0) r.maximum = b;
    r.exclusive_minimum = coin(rng), r.exclusive_maximum = coin(rng);
    check(r, rng);
  }
}

TEST(NumberRange, EmptyRangesThrowNamingTheBounds) {
  const std::vector<TextRange> empty = {integers("0.2", "0.8"), integers("5", "4"), numbers("5", "4", 16),
                                        numbers("0.001", "0.009", 2), integers("9223372036854775808", std::nullopt),
                                        integers(std::nullopt, "-1" + std::string(300, '0'))};
  for (const TextRange& r : empty) {
    std::vector<std::string> rules;
    try {
      number_range_gbnf(r.parsed(), "num", rules);
      ADD_FAILURE() << r.shown() << " did not throw";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("json_schema: no "), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("in the range m"), std::string::npos) << e.what();
    }
  }
  TextRange exclusive = integers("3", "3");
  exclusive.exclusive_maximum = true;
  std::vector<std::string> rules;
  EXPECT_THROW(number_range_gbnf(exclusive.parsed(), "num", rules), Error);
}

// Without bounds, the language is json_schema.cpp's json-integer / json-number (the rules callers use then).
TEST(NumberRange, UnboundedIsTheSharedJsonRules) {
  const std::string integer = R"(json-integer ::= "-"? ( "0" | [1-9] [0-9]{0,15} ))";
  const auto shared_integer = std::make_shared<const Grammar>(compile_gbnf("root ::= json-integer\n" + integer + "\n"));
  const auto shared_number = std::make_shared<const Grammar>(compile_gbnf(
      "root ::= json-number\n" + integer + "\n" +
      R"(json-number ::= json-integer ( "." [0-9]{1,16} )? ( [eE] [-+]? [0-9]{1,2} )?)" + "\n"));
  std::mt19937 rng(3);
  const TextRange any_integer = integers(std::nullopt, std::nullopt);
  const TextRange any_number = numbers(std::nullopt, std::nullopt, 16);
  const auto ours_integer = compile(any_integer), ours_number = compile(any_number);
  for (const std::string& s : candidates(any_number, rng)) {
    EXPECT_EQ(accepts(ours_integer, s), accepts(shared_integer, s)) << s;
    EXPECT_EQ(accepts(ours_number, s), accepts(shared_number, s)) << s;
  }
}

TEST(NumberRange, GrammarIsSmall) {
  std::vector<std::string> rules;
  NumberRange r;
  r.minimum = -123456789012.125, r.maximum = 987654321098.5;
  const std::string expression = number_range_gbnf(r, "num", rules);
  EXPECT_LE(rules.size(), 16u);
  EXPECT_LT(expression.size(), 3000u) << expression;
}

}  // namespace
}  // namespace nf::grammar
