// DPO's pieces in the trainer (train/dpo.h): the masked sum of response log-probs equals
// log_softmax summed by hand; the logged means equal TRL's metrics (tests/golden/dpo_trl.json);
// with LoRA the reference is the base model exactly (adapters off), and the adapters come back on.
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "infer/tiny_lm.h"
#include "nanoformer/autograd/grad_mode.h"
#include "nanoformer/models/lora.h"
#include "nanoformer/ops/factory.h"
#include "nanoformer/ops/softmax.h"
#include "nanoformer/train/dpo.h"
#include "support/testing.h"

namespace nf::train {
namespace {

// Two pairs over 6 positions; targets kIgnoreIndex outside each row's response.
data::Batch pair_batch() {
  data::Batch b;
  b.inputs = Tensor::from_vector(std::vector<int64_t>{1, 5, 9, 2, 7, 3,   1, 5, 9, 4, 4, 0,  //
                                                      2, 8, 8, 6, 1, 1,   2, 8, 8, 3, 0, 0},
                                 {4, 6});
  const int64_t x = data::kIgnoreIndex;
  b.targets = Tensor::from_vector(std::vector<int64_t>{x, x, 2, 7, 3, 11,  x, x, 4, 4, 13, x,  //
                                                       x, x, x, 1, 1, 12,  x, x, x, 3, x, x},
                                  {4, 6});
  return b;
}

TEST(Dpo, SequenceLogProbsAreTheMaskedSumOfLogSoftmax) {
  const auto model = testing::tiny_lm();
  const data::Batch b = pair_batch();
  NoGradGuard no_grad;
  const Tensor logits = model->forward(b.inputs).logits;
  const std::vector<double> got = sequence_log_probs(logits, b.targets).to(DType::f64).to_vector<double>();
  const Tensor log_p = log_softmax(logits.to(DType::f64), -1);
  for (int64_t r = 0; r < 4; ++r) {
    double expected = 0;
    for (int64_t t = 0; t < 6; ++t) {
      const auto target = static_cast<int64_t>(b.targets.at({r, t}));
      if (target != data::kIgnoreIndex) expected += log_p.at({r, t, target});
    }
    EXPECT_NEAR(got[static_cast<size_t>(r)], expected, 1e-4 * std::fabs(expected)) << "row " << r;
  }
}

TEST(Dpo, LoggedMeansEqualTRLsMetrics) {
  std::ifstream in(std::string(NF_GOLDEN_DIR) + "/dpo_trl.json");
  const nlohmann::json doc = nlohmann::json::parse(in);
  auto vec = [&](const char* key, int64_t begin, int64_t n) {
    const auto all = doc[key].get<std::vector<double>>();
    return Tensor::from_vector(std::vector<double>(all.begin() + begin, all.begin() + begin + n), {n});
  };
  for (const nlohmann::json& c : doc["cases"]) {
    SCOPED_TRACE(c["loss_type"].get<std::string>() + " beta " + std::to_string(c["beta"].get<double>()));
    PreferenceMetrics metrics;  // the 7 pairs as micro-batches of 4 and 3
    for (const auto& [begin, n] : {std::pair<int64_t, int64_t>{0, 4}, {4, 3}})
      metrics.add(dpo_loss(vec("pi_chosen", begin, n), vec("pi_rejected", begin, n), vec("ref_chosen", begin, n),
                           vec("ref_rejected", begin, n), c["beta"].get<double>(),
                           preference_loss_from_name(c["loss_type"].get<std::string>())));
    const nlohmann::json& trl = c["metrics"];
    EXPECT_EQ(metrics.pairs, 7);
    EXPECT_NEAR(metrics.chosen_reward, trl["rewards/chosen"].get<double>(), 1e-6);
    EXPECT_NEAR(metrics.rejected_reward, trl["rewards/rejected"].get<double>(), 1e-6);
    EXPECT_NEAR(metrics.margin(), trl["rewards/margins"].get<double>(), 1e-6);
    EXPECT_NEAR(metrics.accuracy, trl["rewards/accuracies"].get<double>(), 1e-6);
  }
}

TEST(Dpo, WithLoRATheReferenceIsTheBaseAndTheAdaptersComeBack) {
  const auto base = testing::tiny_lm(), policy = testing::tiny_lm();  // the same weights
  Generator gen(7);
  models::apply_lora(*policy, {.rank = 2, .alpha = 4, .targets = {"q", "v"}}, gen);
  {
    NoGradGuard no_grad;
    for (const auto& [name, t] : models::lora_parameters(*policy))
      if (name.find("lora_B") != std::string::npos) normal_(t, 0.0, 0.5, gen);  // adapters that change the output
  }
  const data::Batch b = pair_batch();
  base->eval();
  const std::vector<float> base_lp = [&] {
    NoGradGuard no_grad;
    return sequence_log_probs(base->forward(b.inputs).logits, b.targets).to_vector<float>();
  }();
  const DpoLoss out = dpo_batch_loss(*policy, nullptr, b, {.beta = 0.5});
  EXPECT_TRUE(policy->is_training());  // the policy's mode is kept
  NoGradGuard no_grad;
  const std::vector<float> policy_lp = sequence_log_probs(policy->forward(b.inputs).logits, b.targets).to_vector<float>();
  const auto chosen = out.chosen_rewards.to_vector<float>(), rejected = out.rejected_rewards.to_vector<float>();
  for (size_t p = 0; p < 2; ++p) {  // rewards = beta (policy - base): the reference was the base exactly
    EXPECT_NEAR(chosen[p], 0.5 * (policy_lp[2 * p] - base_lp[2 * p]), 1e-4) << "pair " << p;
    EXPECT_NEAR(rejected[p], 0.5 * (policy_lp[2 * p + 1] - base_lp[2 * p + 1]), 1e-4) << "pair " << p;
    EXPECT_GT(std::fabs(chosen[p]), 1e-3) << "the adapters change the policy";
  }
}

}  // namespace
}  // namespace nf::train
