#pragma once
// A task the demo generates for itself, so that nothing is downloaded: multi-digit addition as
// prompt-completion pairs, operands zero-padded to `digits` digits and the sum to digits + 1,
// written least-significant digit first ("reversed"), the order in which a left-to-right model can
// carry (Lee et al. 2023, "Teaching Arithmetic to Small Transformers"):
//   "123+989=" -> "2111\n"   (123 + 989 = 1112)      "032+596=" -> "8260\n"   (32 + 596 = 628)
// Training and held-out test problems are distinct (a, b) pairs, drawn from a seed.
#include <cstdint>
#include <string>
#include <vector>

namespace nf::data {

struct AdditionTaskOptions {
  int digits = 3;                 // operands in [0, 10^digits)
  int64_t train_problems = 20000;
  int64_t test_problems = 200;
  uint64_t seed = 1;
};

struct AdditionProblem {
  std::string prompt;  // "123+989="
  std::string answer;  // "2111\n"
};

struct AdditionTask {
  std::vector<AdditionProblem> train;
  std::vector<AdditionProblem> test;  // held out: none of these pairs occurs in train
};

// a + b with `digits`-digit operands: prompt "a+b=", answer the digits of a + b reversed, then a newline.
AdditionProblem addition_problem(int64_t a, int64_t b, int digits);
// Throws nf::Error when digits is not in [1, 9] or more distinct problems are asked for than exist.
AdditionTask make_addition_task(const AdditionTaskOptions& options);

}  // namespace nf::data
