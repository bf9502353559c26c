// The demo's generated addition task: the reversed, zero-padded format, correct sums, distinct
// problems with the held-out ones never in training, determinism for a seed, and its limits.
#include "nanoformer/data/addition_task.h"

#include <gtest/gtest.h>

#include <set>

#include "support/testing.h"

namespace nf::data {
namespace {

TEST(AdditionTask, ProblemsAreZeroPaddedWithTheSumReversed) {
  EXPECT_EQ(addition_problem(123, 989, 3).prompt, "123+989=");
  EXPECT_EQ(addition_problem(123, 989, 3).answer, "2111\n");  // 1112 reversed
  EXPECT_EQ(addition_problem(32, 596, 3).prompt, "032+596=");
  EXPECT_EQ(addition_problem(32, 596, 3).answer, "8260\n");  // 0628 reversed
  EXPECT_EQ(addition_problem(0, 0, 1).answer, "00\n");
}

TEST(AdditionTask, SumsAreRightAndHeldOutProblemsNeverTrain) {
  const AdditionTask task = make_addition_task({.digits = 2, .train_problems = 3000, .test_problems = 200, .seed = 7});
  ASSERT_EQ(task.train.size(), 3000u);
  ASSERT_EQ(task.test.size(), 200u);
  std::set<std::string> prompts;
  for (const auto* part : {&task.train, &task.test})
    for (const AdditionProblem& p : *part) {
      ASSERT_EQ(p.prompt.size(), 6u) << p.prompt;
      const int a = std::stoi(p.prompt.substr(0, 2)), b = std::stoi(p.prompt.substr(3, 2));
      const std::string reversed(p.answer.rbegin() + 1, p.answer.rend());
      EXPECT_EQ(std::stoi(reversed), a + b) << p.prompt << p.answer;
      EXPECT_TRUE(prompts.insert(p.prompt).second) << "repeated: " << p.prompt;
    }
  const AdditionTask again = make_addition_task({.digits = 2, .train_problems = 3000, .test_problems = 200, .seed = 7});
  EXPECT_EQ(again.train.front().prompt, task.train.front().prompt);
  EXPECT_EQ(again.test.back().prompt, task.test.back().prompt);
  const AdditionTask other = make_addition_task({.digits = 2, .train_problems = 3000, .test_problems = 200, .seed = 8});
  EXPECT_NE(other.test.front().prompt, task.test.front().prompt);
}

TEST(AdditionTask, RefusesImpossibleRequests) {
  EXPECT_THROW_WITH(make_addition_task({.digits = 0}), "digits must be in [1, 9], got 0");
  EXPECT_THROW_WITH(make_addition_task({.digits = 1, .train_problems = 60, .test_problems = 0}), "60 distinct problems",
                    "1-digit");
}

}  // namespace
}  // namespace nf::data
