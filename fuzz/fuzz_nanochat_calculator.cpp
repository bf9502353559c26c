// nanochat's calculator tool (infer/nanochat_calculator.h), as a model's output reaches it between
// <|python_start|> and <|python_end|>: the input as the expression. It must answer or refuse without
// throwing, in bounded time and stack, and the same for what Python reads the same: with a trailing
// space, with a comma inserted (engine.py removes commas first), and, for an arithmetic input
// without parentheses, inside a pair of them.
#include <optional>
#include <string>

#include "fuzz_support.h"
#include "nanoformer/infer/nanochat_calculator.h"

using nf::infer::nanochat_calculator;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string expr(nf::fuzz::as_text(data, size));
  const std::optional<std::string> answer = nanochat_calculator(expr);
  if (expr.size() >= 16384) return 0;  // over the length limit: refused, and so is anything longer
  NF_FUZZ_CHECK(nanochat_calculator(expr + " ") == answer, "a trailing space changed the answer");
  NF_FUZZ_CHECK(nanochat_calculator("," + expr) == answer, "a comma changed the answer");
  if (answer && expr.size() + 2 <= 16384 && expr.find('(') == std::string::npos)  // (x) is x (for "()" too)
    NF_FUZZ_CHECK(nanochat_calculator("(" + expr + ")") == answer, "parentheses changed the answer ", *answer);
  return 0;
}
