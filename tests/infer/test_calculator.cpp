// nanochat's calculator tool (infer/nanochat_calculator.h) against nanochat's own: every answer
// engine.py's use_calculator and str() give (karpathy/nanochat@92d63d4, run by
// tools/golden/nanochat_calculator_fixtures.py) for integers of any size, Python's float division
// and formatting, .count() on strings, the expressions it refuses and CPython's limits.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "nanoformer/infer/nanochat_calculator.h"

namespace nf::infer {
namespace {

TEST(NanochatCalculator, AnswersAsNanochatsEngine) {
  std::ifstream in(NF_TEST_DATA_DIR "/nanochat/calculator_92d63d4.json");
  ASSERT_TRUE(in) << "tests/fixtures/nanochat/calculator_92d63d4.json";
  const nlohmann::json fixture = nlohmann::json::parse(in);
  int answered = 0, refused = 0;
  for (const nlohmann::json& c : fixture["cases"]) {
    const std::string expr = c["expr"];
    const std::optional<std::string> got = nanochat_calculator(expr);
    const std::string shown = expr.size() > 60 ? expr.substr(0, 60) + "... (" + std::to_string(expr.size()) + " bytes)" : expr;
    if (c.contains("engine_raises")) {  // nanochat's str() raises: we force nothing
      EXPECT_FALSE(got.has_value()) << shown;
    } else if (c["result"].is_null()) {
      EXPECT_FALSE(got.has_value()) << shown << " gave " << got.value_or("");
      ++refused;
    } else {
      EXPECT_EQ(got.value_or("(nothing)"), c["result"].get<std::string>()) << shown;
      ++answered;
    }
  }
  EXPECT_GT(answered, 90);
  EXPECT_GT(refused, 50);
}

TEST(NanochatCalculator, RefusesWhatNoPythonWouldEvaluateWithoutCost) {
  // deep nesting is refused by counting, never by the stack
  EXPECT_FALSE(nanochat_calculator(std::string(100000, '(') + "1" + std::string(100000, ')')).has_value());
  EXPECT_FALSE(nanochat_calculator(std::string(16000, '-') + "1").has_value());
  EXPECT_FALSE(nanochat_calculator(std::string(20000, '1')).has_value());  // longer than 16,384 bytes
  EXPECT_EQ(nanochat_calculator("2 * (3 + 4)").value_or(""), "14");
}

}  // namespace
}  // namespace nf::infer
