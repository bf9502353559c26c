#pragma once
// JSON numbers within bounds as GBNF (grammar.h) expressions: the digit grammars of JSON Schema's
// minimum / maximum / exclusiveMinimum / exclusiveMaximum and of multipleOf a power of ten.
// Every number a grammar allows is inside its bounds (the grammar may allow fewer: see each
// function), is valid JSON, and parses as a double: integer parts of at most 16 digits (as the
// unbounded json-integer / json-number of json_schema.cpp), no leading zeros, no "-0".
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace nf::grammar {

struct NumberRange {
  std::optional<double> minimum, maximum;  // nullopt: no bound that side
  bool exclusive_minimum = false, exclusive_maximum = false;
  bool integer = false;          // only integers (JSON Schema's "integer": written without a fraction or exponent)
  int max_fraction_digits = 16;  // multipleOf 10^-k: at most k fraction digits (0 with integer)
};

// A GBNF expression of exactly the integers (integer) or numbers in `range`, helper rules appended
// to `rules` (named `name`-0, `name`-1, ...: each a whole "<name>-<i> ::= ..." line). Integers: all
// integers within the bounds that have at most 16 digits. Numbers: those integers, and
// decimals with 1..max_fraction_digits fraction digits, within the bounds; no exponent when a
// bound is given (unbounded: as json-number, exponents of 1-2 digits). A bound is the shortest
// decimal text of its double (0.1 is 0.1), compared digit by digit (a decimal just above an
// exclusive bound, in its 17th significant digit or later, may still read back as the bound's
// double). Bounds beyond 16 digits count as no bound (a minimum of 1e20 leaves nothing). Without
// bounds, integers and numbers of up to 16 fraction digits are exactly json-integer / json-number
// (which also allow "-0"). Throws nf::Error ("json_schema: no ... in the range <bounds>") when no
// number of that form is in the range.
std::string number_range_gbnf(const NumberRange& range, const std::string& name, std::vector<std::string>& rules);

}  // namespace nf::grammar
