// PPO's pieces (train/ppo.h, ops/value_loss.h, train/critic.h) against TRL's PPOTrainer (trl v0.29.1)
// and MiniMind's train_ppo.py (d65ef2c) on the same float64 responses (tests/golden/ppo.json,
// written by tools/golden/ppo_fixtures.py): the masks, per-token rewards, GAE advantages (whitened)
// and returns, the policy and value losses, the total loss's gradient w.r.t. the log-probs and the
// values, and the logged KL and clip fractions; GAE by hand; gradcheck of the value loss; errors;
// the critic's values and its file.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "infer/tiny_lm.h"
#include "nanoformer/ops/factory.h"
#include "nanoformer/ops/reduce.h"
#include "nanoformer/ops/value_loss.h"
#include "nanoformer/train/critic.h"
#include "nanoformer/train/ppo.h"
#include "support/testing.h"

namespace nf::train {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

json fixture() {
  std::ifstream in(std::string(NF_GOLDEN_DIR) + "/ppo.json");
  EXPECT_TRUE(in.good()) << NF_GOLDEN_DIR << "/ppo.json";
  return json::parse(in);
}

Tensor matrix(const json& rows) {
  std::vector<double> values;
  for (const json& row : rows)
    for (const json& v : row) values.push_back(v.get<double>());
  return Tensor::from_vector(values, {static_cast<int64_t>(rows.size()), static_cast<int64_t>(rows[0].size())});
}

void expect_rows_near(const Tensor& actual, const json& expected, double tol, const char* what) {
  const std::vector<double> a = actual.to_vector<double>();
  const std::vector<double> e = matrix(expected).to_vector<double>();
  ASSERT_EQ(a.size(), e.size()) << what;
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], e[i], tol) << what << "[" << i << "]";
}

// A response's tokens: through its first eos, else all of them (what the rollout's decode keeps).
std::vector<int64_t> response_lengths(const json& responses, int64_t eos) {
  std::vector<int64_t> out;
  for (const json& row : responses) {
    int64_t n = 0;
    for (const json& id : row) {
      ++n;
      if (id.get<int64_t>() == eos) break;
    }
    out.push_back(n);
  }
  return out;
}

TEST(Ppo, EqualsTRLsAndMiniMindsTargetsLossAndGradients) {
  const json doc = fixture();
  ASSERT_EQ(doc["cases"].size(), 5u);
  const Tensor old = matrix(doc["old_logps"]), ref = matrix(doc["ref_logps"]), old_values = matrix(doc["old_values"]);
  const std::vector<double> scores = doc["scores"].get<std::vector<double>>();
  const std::vector<int64_t> lengths = response_lengths(doc["responses"], doc["eos"].get<int64_t>());
  EXPECT_EQ(lengths, (std::vector<int64_t>{3, 6, 1, 5, 6}));
  const std::vector<int64_t> starts(lengths.size(), 0);
  for (const json& c : doc["cases"]) {
    SCOPED_TRACE(c["source"].get<std::string>() + " gamma " + std::to_string(c["gamma"].get<double>()) + " kl_coef " +
                 std::to_string(c["kl_coef"].get<double>()));
    PpoOptions o;
    o.style = c["style"].get<std::string>();
    o.kl_coef = c["kl_coef"].get<double>();
    o.gamma = c["gamma"].get<double>();
    o.lam = c["lam"].get<double>();
    o.cliprange_value = c["cliprange_value"].get<double>();
    o.vf_coef = c["vf_coef"].get<double>();
    const PpoTargets t = ppo_targets(old, ref, old_values, scores, starts, lengths,
                                     doc["max_new_tokens"].get<int64_t>(), o);
    expect_rows_near(t.policy_mask, c["policy_mask"], 0, "policy_mask");
    expect_rows_near(t.value_mask, c["value_mask"], 0, "value_mask");
    expect_rows_near(t.rewards, c["rewards"], 1e-12, "rewards");
    // TRL's masked_var takes Bessel's factor mask_sum / (mask_sum - 1) from integer sums, which torch
    // divides in float32 (relative error up to 6e-8): its whitened advantages, and what follows from
    // them, carry that error; MiniMind's are float64 throughout
    const double tol = c["source"] == "trl" ? 1e-7 : 1e-9;
    expect_rows_near(t.advantages, c["advantages"], tol, "advantages");
    expect_rows_near(t.returns, c["returns"], 1e-12, "returns");

    Tensor logps = matrix(doc["logps"]), values = matrix(doc["values"]);
    logps.set_requires_grad(true);
    values.set_requires_grad(true);
    const double eps = c["cliprange"].get<double>();
    const PpoLoss out = ppo_loss(logps, values, old, ref, t, o, eps, eps);
    EXPECT_NEAR(out.policy.loss.item(), c["policy_loss"].get<double>(), tol);
    EXPECT_NEAR(out.value.loss.item(), c["value_loss"].get<double>(), 1e-9);
    EXPECT_NEAR(out.loss.item(), c["loss"].get<double>(), tol);
    out.loss.backward();
    expect_rows_near(logps.grad(), c["grad_logps"], tol, "grad_logps");
    expect_rows_near(values.grad(), c["grad_values"], 1e-9, "grad_values");
    if (c["source"] == "trl") {  // float32 in TRL
      EXPECT_NEAR(out.policy.clip_fraction(), c["clip_fraction"].get<double>(), 1e-6);
      EXPECT_NEAR(out.value.clip_fraction, c["value_clip_fraction"].get<double>(), 1e-6);
    } else {
      EXPECT_NEAR(out.approx_kl, c["approx_kl"].get<double>(), 1e-12);
      EXPECT_NEAR(out.policy.kl, c["kl_ref"].get<double>(), 1e-12);
    }
  }
}

TEST(Ppo, FixtureClipsBothLossesAndMasksDiffer) {  // the comparison above reaches every branch
  const json doc = fixture();
  const json& trl = doc["cases"][0];
  EXPECT_GT(trl["clip_fraction"].get<double>(), 0.0);
  EXPECT_GT(trl["value_clip_fraction"].get<double>(), 0.0);
  EXPECT_NE(trl["value_mask"], trl["policy_mask"]);  // TRL's one past the end
  EXPECT_EQ(doc["cases"][3]["value_mask"], doc["cases"][3]["policy_mask"]);
}

TEST(Ppo, RowsAndMasksOfARolloutByHand) {
  // GRPO's rows (train/grpo.h): prompt 1 2 3 + response 10 11; prompt 4 5 + response 12 13 14
  const Tensor inputs = Tensor::from_vector(std::vector<int64_t>{1, 2, 3, 10, 4, 5, 12, 13}, {2, 4});
  const Tensor targets = Tensor::from_vector(std::vector<int64_t>{-100, -100, 10, 11, -100, 12, 13, 14}, {2, 4});
  const Tensor mask = Tensor::from_vector(std::vector<float>{0, 0, 1, 1, 0, 1, 1, 1}, {2, 4});
  const PpoRows rows = ppo_rows(inputs, targets, mask);
  EXPECT_EQ(rows.inputs.to_vector<int64_t>(), (std::vector<int64_t>{1, 2, 3, 10, 11, 4, 5, 12, 13, 14}));
  EXPECT_EQ(rows.targets.to_vector<int64_t>(), (std::vector<int64_t>{-100, -100, 10, 11, -100, -100, 12, 13, 14, -100}));
  EXPECT_EQ(rows.starts, (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(rows.lengths, (std::vector<int64_t>{2, 3}));
  // at most 3 new tokens: the first response stopped early (TRL scores one past it), the second did not
  const Tensor none = zeros({2, 5}, DType::f64);
  PpoOptions o;
  o.kl_coef = 0;
  for (const char* style : {"minimind", "trl"}) {
    SCOPED_TRACE(style);
    o.style = style;
    const PpoTargets t = ppo_targets(none, Tensor(), none, {1.0, 2.0}, rows.starts, rows.lengths, 3, o);
    EXPECT_EQ(t.policy_mask.to_vector<double>(), (std::vector<double>{0, 0, 1, 1, 0, 0, 1, 1, 1, 0}));
    const bool trl = o.style == "trl";
    EXPECT_EQ(t.value_mask.to_vector<double>(), (std::vector<double>{0, 0, 1, 1, trl ? 1.0 : 0.0, 0, 1, 1, 1, 0}));
    EXPECT_EQ(t.rewards.to_vector<double>(),
              (std::vector<double>{0, 0, 0, trl ? 0.0 : 1.0, trl ? 1.0 : 0.0, 0, 0, 0, 2, 0}));
  }
  EXPECT_THROW_WITH(ppo_rows(inputs, targets, zeros({2, 4})), "ppo_rows: response 0 of the rollout is empty");
}

// A response that called a tool: prompt 1 2, then 10 sampled, 20 21 forced (the tool's answer), 11
// sampled. Its columns are those with a target; the forced ones are out of both masks and of trl's
// KL penalty, and GAE passes over them. At most 4 new tokens: it ended by its length, and a score
// that would sit on a forced token sits on the last sampled one.
TEST(Ppo, RowsAndMasksOfAResponseThatCalledATool) {
  const Tensor inputs = Tensor::from_vector(std::vector<int64_t>{1, 2, 10, 20, 21}, {1, 5});
  const Tensor targets = Tensor::from_vector(std::vector<int64_t>{-100, 10, 20, 21, 11}, {1, 5});
  const Tensor mask = Tensor::from_vector(std::vector<float>{0, 1, 0, 0, 1}, {1, 5});
  const PpoRows rows = ppo_rows(inputs, targets, mask);
  EXPECT_EQ(rows.inputs.to_vector<int64_t>(), (std::vector<int64_t>{1, 2, 10, 20, 21, 11}));
  EXPECT_EQ(rows.sampled.to_vector<double>(), (std::vector<double>{0, 1, 0, 0, 1, 0}));
  EXPECT_EQ(rows.starts, std::vector<int64_t>{1});
  EXPECT_EQ(rows.lengths, std::vector<int64_t>{4});
  const Tensor old = Tensor::from_vector(std::vector<double>{0, -1, -2, -3, -4, 0}, {1, 6});
  const Tensor ref = Tensor::from_vector(std::vector<double>{0, -1.5, -1, -1, -3, 0}, {1, 6});
  const Tensor values = Tensor::from_vector(std::vector<double>{7, 1, 5, 6, 2, 4}, {1, 6});
  PpoOptions o;
  o.kl_coef = 0.1, o.gamma = 0.5, o.lam = 0.5;
  for (const char* style : {"minimind", "trl"}) {
    SCOPED_TRACE(style);
    o.style = style;
    const bool trl = o.style == "trl";
    const PpoTargets t = ppo_targets(old, ref, values, {1.0}, rows.starts, rows.lengths, 8, o, rows.sampled);
    EXPECT_EQ(t.policy_mask.to_vector<double>(), (std::vector<double>{0, 1, 0, 0, 1, 0}));
    EXPECT_EQ(t.value_mask.to_vector<double>(), (std::vector<double>{0, 1, 0, 0, 1, trl ? 1.0 : 0.0}));
    // trl: -0.1 (old - ref) on the sampled tokens, the score one past the end; minimind: the score at the end
    const std::vector<double> r = t.rewards.to_vector<double>();
    const std::vector<double> want = trl ? std::vector<double>{0, -0.05, 0, 0, 0.1, 1} : std::vector<double>{0, 0, 0, 0, 1, 0};
    for (size_t k = 0; k < r.size(); ++k) EXPECT_NEAR(r[k], want[k], 1e-12) << k;
    // GAE over columns 1, 4 (and trl's 5) as if 2 and 3 were not there: values 1, 2 (, 4)
    const double a5 = trl ? 1 - 4.0 : 0, a4 = (trl ? 0.1 + 0.5 * 4 : 1.0) - 2 + 0.25 * a5;
    const double a1 = -0.05 * trl + 0.5 * 2 - 1 + 0.25 * a4;
    EXPECT_NEAR(t.returns.to_vector<double>()[1], a1 + 1, 1e-12);
    EXPECT_NEAR(t.returns.to_vector<double>()[4], a4 + 2, 1e-12);
  }
  // ended on a forced token at max_new_tokens 4 (10 20 21, no 11): the score on 10
  const Tensor cut = Tensor::from_vector(std::vector<float>{0, 1, 0, 0, 0}, {1, 5});
  const Tensor cut_targets = Tensor::from_vector(std::vector<int64_t>{-100, 10, 20, 21, -100}, {1, 5});
  const PpoRows short_rows = ppo_rows(inputs, cut_targets, cut);
  EXPECT_EQ(short_rows.lengths, std::vector<int64_t>{3});
  o.style = "minimind";
  const PpoTargets t = ppo_targets(old, ref, values, {1.0}, short_rows.starts, short_rows.lengths, 3, o, short_rows.sampled);
  EXPECT_EQ(t.rewards.to_vector<double>(), (std::vector<double>{0, 1, 0, 0, 0, 0}));
  EXPECT_THROW_WITH(ppo_rows(inputs, cut_targets, Tensor::from_vector(std::vector<float>{0, 1, 0, 0, 1}, {1, 5})),
                    "ppo_rows: row 0 column 4 is masked in without a target");
}

TEST(Ppo, GaeByHand) {
  // one row, values (1, 2, 0), rewards (0, 0, 3), gamma 0.5, lambda 0.5:
  // delta = (0 + 0.5 * 2 - 1, 0 + 0 - 2, 3 - 0) = (0, -2, 3); A_2 = 3, A_1 = -2 + 0.25 * 3 = -1.25,
  // A_0 = 0 + 0.25 * -1.25 = -0.3125
  const Tensor v = Tensor::from_vector(std::vector<double>{1, 2, 0}, {1, 3});
  const Tensor r = Tensor::from_vector(std::vector<double>{0, 0, 3}, {1, 3});
  EXPECT_TENSOR_CLOSE(gae_advantages(v, r, 0.5, 0.5), Tensor::from_vector(std::vector<double>{-0.3125, -1.25, 3}, {1, 3}),
                      1e-12, 0);
  // a skipped column (a tool's forced token) between: the same, its value and reward unread, its A the carried one
  const Tensor v4 = Tensor::from_vector(std::vector<double>{1, 2, 5, 0}, {1, 4});
  const Tensor r4 = Tensor::from_vector(std::vector<double>{0, 0, 9, 3}, {1, 4});
  const Tensor skip = Tensor::from_vector(std::vector<double>{0, 0, 1, 0}, {1, 4});
  EXPECT_TENSOR_CLOSE(gae_advantages(v4, r4, 0.5, 0.5, skip),
                      Tensor::from_vector(std::vector<double>{-0.3125, -1.25, 3, 3}, {1, 4}), 1e-12, 0);
  // whitening over the mask (1, 1, 0): mean 1.5 of (1, 2), biased var 0.25, unbiased 0.5
  const Tensor m = Tensor::from_vector(std::vector<double>{1, 1, 0}, {1, 3});
  const Tensor x = Tensor::from_vector(std::vector<double>{1, 2, 7}, {1, 3});
  const double b = 0.5 / std::sqrt(0.25 + 1e-8), u = 0.5 / std::sqrt(0.5 + 1e-8);
  EXPECT_TENSOR_CLOSE(masked_whiten(x, m, false), Tensor::from_vector(std::vector<double>{-b, b, 0}, {1, 3}), 1e-12, 0);
  EXPECT_TENSOR_CLOSE(masked_whiten(x, m, true), Tensor::from_vector(std::vector<double>{-u, u, 0}, {1, 3}), 1e-12, 0);
}

TEST(Ppo, ValueLossGradcheck) {
  const Tensor old = testing::random_leaf({3, 4}, 11).detach();
  const Tensor returns = testing::random_leaf({3, 4}, 12, -2.0, 2.0).detach();
  const Tensor mask = Tensor::from_vector(std::vector<double>{1, 1, 1, 1, 1, 1, 0, 0, 1, 0, 0, 0}, {3, 4});
  for (double c : {10.0, 0.05}) {  // no clipping; clipping (away from the kinks, almost surely)
    SCOPED_TRACE(c);
    EXPECT_GRAD_OK([&](const std::vector<Tensor>& x) { return value_loss(x[0], old, returns, mask, c).loss; },
                   {testing::random_leaf({3, 4}, 13)});
  }
}

TEST(Ppo, ErrorsNameTheInputAndValue) {
  const Tensor a = Tensor::from_vector(std::vector<double>{-1, -2}, {1, 2});
  const Tensor b = Tensor::from_vector(std::vector<double>{-1, -2, -3}, {1, 3});
  EXPECT_THROW_WITH(value_loss(a, a, b, a, 0.2), "value_loss: returns (1, 3) f64 differs from values (1, 2) f64");
  EXPECT_THROW_WITH(value_loss(a, a, a, a, -1), "value_loss: cliprange must be >= 0, got -1");
  PpoOptions o;
  o.kl_coef = 0;
  EXPECT_THROW_WITH(ppo_targets(a, Tensor(), a, {1.0}, {0}, {3}, 4, o),
                    "ppo_targets: response 0 of 3 tokens from column 0 (its score at 2) does not fit 2 columns");
  o.style = "openai";
  EXPECT_THROW_WITH(ppo_targets(a, Tensor(), a, {1.0}, {0}, {1}, 4, o), "ppo_targets: unknown style 'openai'");
  EXPECT_THROW_WITH(masked_whiten(a, Tensor::from_vector(std::vector<double>{1, 0}, {1, 2}), true),
                    "masked_whiten: the mask selects 1 entries (needs at least 2)");
}

TEST(Critic, ValuesAreTheValueHeadOverTheFinalNorm) {
  const auto policy = testing::tiny_lm();
  Generator gen(5);
  Critic critic(*policy, gen);
  const Tensor ids = Tensor::from_vector(std::vector<int64_t>{1, 2, 3, 4, 5, 6}, {2, 3});
  const Tensor values = critic.values(ids);
  ASSERT_EQ(values.shape(), (Shape{2, 3}));
  // by hand: the policy's own final norm output (the critic starts as its copy), times the head
  const Tensor h = policy->final_hidden(ids).to(DType::f64);
  const std::vector<double> w = critic.value_head->weight.to_vector<double>();
  const double bias = critic.value_head->bias.to_vector<double>()[0];
  const std::vector<double> hv = h.contiguous().to_vector<double>();
  const int64_t dim = policy->config().dim;
  for (int64_t i = 0; i < 6; ++i) {
    double expected = bias;
    for (int64_t k = 0; k < dim; ++k) expected += hv[static_cast<size_t>(i * dim + k)] * w[static_cast<size_t>(k)];
    EXPECT_NEAR(values.to_vector<double>()[static_cast<size_t>(i)], expected, 1e-5) << i;
  }
}

TEST(Critic, FileRoundTripsAndIsStrict) {
  const auto policy = testing::tiny_lm();
  Generator gen(5);
  Critic critic(*policy, gen);
  optim::OptimizerConfig oc;
  optim::OptimizerSet optimizer(oc, critic);
  sum(critic.values(Tensor::from_vector(std::vector<int64_t>{1, 2, 3}, {1, 3}))).backward();
  optimizer.step();
  const fs::path dir = fs::temp_directory_path() / ("nf_critic_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string ckpt = (dir / "ckpt_00000004.safetensors").string(), path = critic_path(ckpt);
  EXPECT_EQ(path, (dir / "ckpt_00000004.critic.safetensors").string());
  save_critic(path, critic, optimizer, 4);
  Generator other(6);
  Critic loaded(*policy, other);
  optim::OptimizerSet loaded_optimizer(oc, loaded);
  load_critic(path, loaded, loaded_optimizer, 4);
  for (const auto& [name, t] : critic.state_dict()) EXPECT_TENSOR_CLOSE(loaded.state_dict().at(name), t, 0, 0);
  EXPECT_EQ(loaded_optimizer.state_dict().size(), optimizer.state_dict().size());
  EXPECT_THROW_WITH(load_critic(path, loaded, loaded_optimizer, 5), path, "the critic of step 4, not of the checkpoint's step 5");
  EXPECT_THROW_WITH(load_critic(critic_path((dir / "ckpt_00000009.safetensors").string()), loaded, loaded_optimizer, 9),
                    "ckpt_00000009.critic.safetensors is missing");
  {  // a flipped byte in the last tensor's data
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-2, std::ios::end);
    f.put('\x7f');
  }
  EXPECT_THROW_WITH(load_critic(path, loaded, loaded_optimizer, 4), "does not match its checksum");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace nf::train
