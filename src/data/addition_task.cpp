// The demo's generated addition task (data/addition_task.h).
#include "nanoformer/data/addition_task.h"

#include <algorithm>
#include <unordered_set>

#include "nanoformer/core/error.h"
#include "nanoformer/core/generator.h"

namespace nf::data {

namespace {

// n in exactly `width` digits, zero-padded on the left.
std::string padded(int64_t n, int width) {
  std::string s = std::to_string(n);
  return std::string(static_cast<size_t>(std::max(0, width - static_cast<int>(s.size()))), '0') + s;
}

}  // namespace

AdditionProblem addition_problem(int64_t a, int64_t b, int digits) {
  const std::string sum = padded(a + b, digits + 1);
  return {padded(a, digits) + "+" + padded(b, digits) + "=", std::string(sum.rbegin(), sum.rend()) + "\n"};
}

AdditionTask make_addition_task(const AdditionTaskOptions& o) {
  NF_CHECK(o.digits >= 1 && o.digits <= 9, "addition task: digits must be in [1, 9], got ", o.digits);
  int64_t range = 1;
  for (int i = 0; i < o.digits; ++i) range *= 10;
  NF_CHECK(o.train_problems >= 0 && o.test_problems >= 0 && o.train_problems + o.test_problems <= range * range / 2,
           "addition task: ", o.train_problems + o.test_problems, " distinct problems asked for, but ", o.digits,
           "-digit operands give too few");
  Generator gen(o.seed);
  std::unordered_set<int64_t> seen;  // a * range + b
  auto draw = [&] {
    for (;;) {
      const auto words = philox4x32(gen.reserve(1), 0, gen.seed());
      const int64_t a = static_cast<int64_t>(words[0] % static_cast<uint64_t>(range));
      const int64_t b = static_cast<int64_t>(words[1] % static_cast<uint64_t>(range));
      if (seen.insert(a * range + b).second) return addition_problem(a, b, o.digits);
    }
  };
  AdditionTask task;
  for (int64_t i = 0; i < o.test_problems; ++i) task.test.push_back(draw());
  for (int64_t i = 0; i < o.train_problems; ++i) task.train.push_back(draw());
  return task;
}

}  // namespace nf::data
