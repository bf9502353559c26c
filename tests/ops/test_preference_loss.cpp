// dpo_loss (sigmoid and IPO) against TRL's DPOTrainer on the same float64 log-probs: the loss, the
// per-pair rewards and the gradients w.r.t. all four log-prob vectors within 1e-6
// (tests/golden/dpo_trl.json, written by tools/golden/dpo_trl_fixtures.py); gradcheck; errors.
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "nanoformer/ops/preference_loss.h"
#include "support/testing.h"

namespace nf {
namespace {

using nlohmann::json;

json trl_fixture() {
  std::ifstream in(std::string(NF_GOLDEN_DIR) + "/dpo_trl.json");
  EXPECT_TRUE(in.good()) << NF_GOLDEN_DIR << "/dpo_trl.json";
  return json::parse(in);
}

Tensor leaf(const json& values) {
  Tensor t = Tensor::from_vector(values.get<std::vector<double>>(), {static_cast<int64_t>(values.size())});
  t.set_requires_grad(true);
  return t;
}

void expect_near_all(const Tensor& actual, const json& expected, const char* what) {
  const std::vector<double> a = actual.to_vector<double>(), e = expected.get<std::vector<double>>();
  ASSERT_EQ(a.size(), e.size()) << what;
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], e[i], 1e-6) << what << "[" << i << "]";
}

TEST(PreferenceLoss, EqualsTRLsLossRewardsAndGradients) {
  const json doc = trl_fixture();
  ASSERT_EQ(doc["cases"].size(), 4u);
  for (const json& c : doc["cases"]) {
    const std::string kind = c["loss_type"].get<std::string>();
    const double beta = c["beta"].get<double>();
    SCOPED_TRACE(kind + " beta " + std::to_string(beta));
    const Tensor pc = leaf(doc["pi_chosen"]), pr = leaf(doc["pi_rejected"]);
    const Tensor rc = leaf(doc["ref_chosen"]), rr = leaf(doc["ref_rejected"]);
    const DpoLoss out = dpo_loss(pc, pr, rc, rr, beta, preference_loss_from_name(kind));
    EXPECT_NEAR(out.loss.item(), c["loss"].get<double>(), 1e-6);
    expect_near_all(out.chosen_rewards, c["chosen_rewards"], "chosen_rewards");
    expect_near_all(out.rejected_rewards, c["rejected_rewards"], "rejected_rewards");
    EXPECT_FALSE(out.chosen_rewards.requires_grad());
    out.loss.backward();
    expect_near_all(pc.grad(), c["grad_pi_chosen"], "grad pi_chosen");
    expect_near_all(pr.grad(), c["grad_pi_rejected"], "grad pi_rejected");
    expect_near_all(rc.grad(), c["grad_ref_chosen"], "grad ref_chosen");
    expect_near_all(rr.grad(), c["grad_ref_rejected"], "grad ref_rejected");
  }
}

TEST(PreferenceLoss, GradcheckBothLosses) {
  for (const PreferenceLossKind kind : {PreferenceLossKind::sigmoid, PreferenceLossKind::ipo}) {
    SCOPED_TRACE(preference_loss_name(kind));
    std::vector<Tensor> inputs;
    for (uint64_t i = 0; i < 4; ++i) inputs.push_back(testing::random_leaf({5}, 100 + i, -30.0, -1.0));
    EXPECT_GRAD_OK([kind](const std::vector<Tensor>& x) { return dpo_loss(x[0], x[1], x[2], x[3], 0.3, kind).loss; },
                   inputs);
  }
}

TEST(PreferenceLoss, ErrorsNameTheInputAndValue) {
  const Tensor a = Tensor::from_vector(std::vector<double>{-1, -2}, {2});
  const Tensor b = Tensor::from_vector(std::vector<double>{-1, -2, -3}, {3});
  EXPECT_THROW_WITH(dpo_loss(a, a, b, a, 0.1), "dpo_loss: ref_chosen (3) f64 differs from pi_chosen (2) f64");
  EXPECT_THROW_WITH(dpo_loss(a, a, a, a, 0.0), "dpo_loss: beta must be > 0, got 0");
  EXPECT_THROW_WITH(preference_loss_from_name("hinge"), "unknown DPO loss \"hinge\" (known: sigmoid, ipo)");
}

}  // namespace
}  // namespace nf
