// policy_loss (GRPO's clipped ratio, CISPO, the k3 KL) against TRL's GRPOTrainer._compute_loss
// (loss_type grpo, bnpo, dr_grpo, dapo, cispo; beta 0 and 0.04; on-policy) and MiniMind's
// train_grpo.py (cispo, grpo) on the same float64 per-token log-probs: the loss, its gradient
// w.r.t. the log-probs and TRL's kl and clip metrics within 1e-6 (tests/golden/grpo_trl.json,
// written by tools/golden/grpo_trl_fixtures.py); gradcheck; errors.
#include <fstream>
#include <nlohmann/json.hpp>

#include "nanoformer/ops/policy_loss.h"
#include "support/testing.h"

namespace nf {
namespace {

using nlohmann::json;

json fixture() {
  std::ifstream in(std::string(NF_GOLDEN_DIR) + "/grpo_trl.json");
  EXPECT_TRUE(in.good()) << NF_GOLDEN_DIR << "/grpo_trl.json";
  return json::parse(in);
}

Tensor matrix(const json& rows) {
  std::vector<double> values;
  for (const json& row : rows)
    for (const json& v : row) values.push_back(v.get<double>());
  return Tensor::from_vector(values, {static_cast<int64_t>(rows.size()), static_cast<int64_t>(rows[0].size())});
}

PolicyLossOptions options_of(const json& c, int64_t max_completion_length) {
  PolicyLossOptions o;
  const std::string kind = c["loss_type"].get<std::string>();
  o.type = policy_loss_type_from_name(kind);
  if (c["source"] == "minimind") o.type.aggregation = PolicyAggregation::sequence;  // MiniMind's mean of sequence means
  o.beta = c["beta"].get<double>();
  o.epsilon_low = c["epsilon_low"].get<double>();
  o.epsilon_high = c["epsilon_high"].get<double>();
  o.max_completion_length = max_completion_length;
  return o;
}

TEST(PolicyLoss, EqualsTRLsAndMiniMindsLossGradientAndMetrics) {
  const json doc = fixture();
  ASSERT_EQ(doc["cases"].size(), 17u);
  const Tensor old = matrix(doc["old_logps"]), ref = matrix(doc["ref_logps"]), mask = matrix(doc["mask"]);
  const std::vector<double> adv = doc["advantages"].get<std::vector<double>>();
  const Tensor advantages = Tensor::from_vector(adv, {static_cast<int64_t>(adv.size())});
  for (const json& c : doc["cases"]) {
    SCOPED_TRACE(c["source"].get<std::string>() + " " + c["loss_type"].get<std::string>() + " beta " +
                 std::to_string(c["beta"].get<double>()) + (c["on_policy"].get<bool>() ? " on-policy" : ""));
    Tensor logps = matrix(doc["logps"]);
    logps.set_requires_grad(true);
    const PolicyLoss out = policy_loss(logps, c["on_policy"].get<bool>() ? Tensor() : old, ref, advantages, mask,
                                       options_of(c, doc["max_completion_length"].get<int64_t>()));
    EXPECT_NEAR(out.loss.item(), c["loss"].get<double>(), 1e-6);
    out.loss.backward();
    const std::vector<double> grad = logps.grad().to_vector<double>();
    std::vector<double> expected;
    for (const json& row : c["grad"])
      for (const json& v : row) expected.push_back(v.get<double>());
    ASSERT_EQ(grad.size(), expected.size());
    for (size_t i = 0; i < grad.size(); ++i) EXPECT_NEAR(grad[i], expected[i], 1e-6) << "grad[" << i << "]";
    const json& m = c["metrics"];
    if (m.contains("kl")) {
      EXPECT_NEAR(out.kl, m["kl"].get<double>(), 1e-6);
    }
    if (m.contains("clip_ratio/low_mean")) {
      EXPECT_NEAR(out.clip_low, m["clip_ratio/low_mean"].get<double>(), 1e-6);
      EXPECT_NEAR(out.clip_high, m["clip_ratio/high_mean"].get<double>(), 1e-6);
      EXPECT_NEAR(out.clip_fraction(), m["clip_ratio/region_mean"].get<double>(), 1e-6);
    }
    if (m.contains("cispo_clip_ratio")) {
      EXPECT_NEAR(out.clip_high, m["cispo_clip_ratio"].get<double>(), 1e-6);
    }
  }
}

TEST(PolicyLoss, FixtureClipsOnBothSides) {  // the comparison above covers both clipping branches
  const json doc = fixture();
  EXPECT_GT(doc["cases"][0]["metrics"]["clip_ratio/low_mean"].get<double>(), 0.0);
  EXPECT_GT(doc["cases"][0]["metrics"]["clip_ratio/high_mean"].get<double>(), 0.0);
}

// CISPO is left out: its stop-gradient weight makes its gradient differ from its loss's by design.
TEST(PolicyLoss, GradcheckEachTypeWithKL) {
  const Tensor old = testing::random_leaf({4, 3}, 7, -2.0, -0.5).detach();
  const Tensor ref = testing::random_leaf({4, 3}, 8, -2.0, -0.5).detach();
  const Tensor mask = Tensor::from_vector(std::vector<double>{1, 1, 1, 1, 1, 0, 1, 0, 0, 1, 1, 1}, {4, 3});
  const Tensor adv = Tensor::from_vector(std::vector<double>{0.9, -0.7, 0.3, -0.5}, {4});
  for (const char* name : {"grpo", "bnpo", "dr_grpo"}) {
    SCOPED_TRACE(name);
    PolicyLossOptions o;
    o.type = policy_loss_type_from_name(name);
    o.beta = 0.05;
    o.epsilon_high = 10.0;  // no clipping: a smooth function
    o.epsilon_low = 0.99;
    o.max_completion_length = 3;
    EXPECT_GRAD_OK([&](const std::vector<Tensor>& x) { return policy_loss(x[0], old, ref, adv, mask, o).loss; },
                   {testing::random_leaf({4, 3}, 9, -2.0, -0.5)});
  }
}

TEST(PolicyLoss, ErrorsNameTheInputAndValue) {
  const Tensor a = Tensor::from_vector(std::vector<double>{-1, -2}, {1, 2});
  const Tensor b = Tensor::from_vector(std::vector<double>{-1, -2, -3}, {1, 3});
  const Tensor adv = Tensor::from_vector(std::vector<double>{1}, {1});
  PolicyLossOptions o;
  EXPECT_THROW_WITH(policy_loss(a, Tensor(), Tensor(), adv, b, o),
                    "policy_loss: mask (1, 3) f64 differs from logps (1, 2) f64");
  o.beta = 0.1;
  EXPECT_THROW_WITH(policy_loss(a, Tensor(), Tensor(), adv, a, o), "policy_loss: beta 0.1 needs ref_logps");
  EXPECT_THROW_WITH(policy_loss(a, Tensor(), Tensor(), Tensor::from_vector(std::vector<double>{1, 2, 3}, {3}), a,
                                PolicyLossOptions{}),
                    "policy_loss: advantages (3) is neither (B) = (1) nor (B, T) = (1, 2)");
  EXPECT_THROW_WITH(policy_loss_type_from_name("ppo"),
                    "unknown GRPO loss \"ppo\" (known: grpo, bnpo, dr_grpo, dapo, cispo)");
}

}  // namespace
}  // namespace nf
