#pragma once
// nanochat's calculator tool, as its engine defines it (karpathy/nanochat@92d63d4,
// nanochat/engine.py: use_calculator, and Engine.generate's str(result)): the model writes
// <|python_start|>expr<|python_end|>, the engine evaluates expr and forces
// <|output_start|>answer<|output_end|> into the sequence.
//
//   commas      removed first ("1,000" is 1000)
//   arithmetic  when every character is one of "0123456789*+-/.() " and there is no "**": Python's
//               + - * / // and unary + -, on Python's ints (any size) and floats; / of ints is
//               the correctly rounded float, // floors; the answer is Python's str() of the result
//               ("3.5", "2.0", "1e+16", "0.30000000000000004", "-0.0", "inf", "()")
//   .count()    otherwise, when every character is a letter, a digit or one of "'\"()._ ", the
//               expression contains ".count(" and none of engine.py's dangerous words (import,
//               eval, open, dir, ...: checked case-insensitively): string literals (quotes,
//               prefixes r u f b, implicit concatenation) and their methods count(sub), upper(),
//               lower(), strip(), lstrip(), rstrip()
//   nothing     for anything else, and wherever Python's eval raises (a syntax error, division by
//               zero, an int to float conversion that overflows, a name, another method): no
//               answer is forced
//
// Not a Python interpreter and never calls one: a parser of that grammar with Python's results
// (tests/infer/test_calculator.cpp checks every answer against engine.py's own, run by
// tools/golden/nanochat_calculator_fixtures.py). Where it differs, it refuses: the string methods
// other than those above (nanochat evaluates any method of a str, such as .find(), though every
// answer it may force must contain ".count("); and CPython's limits, kept as numbers: literals and
// answers of more than 4,300 digits (Python's int digit limit; an answer that long makes
// nanochat's str() raise), more than 200 nested parentheses (Python's parser refuses the 201st),
// expressions nested more than 2,900 deep (CPython 3.11's compiler stops near 2,990) or longer
// than 16,384 bytes. Iterative over operators, recursive only per parenthesis, so an expression
// costs a bounded stack.
#include <optional>
#include <string>
#include <string_view>

namespace nf::infer {

// The answer nanochat's engine forces for `expr` (the text between <|python_start|> and
// <|python_end|>), or nothing.
std::optional<std::string> nanochat_calculator(std::string_view expr);

}  // namespace nf::infer
