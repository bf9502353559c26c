// DynamicLossScaler against torch.amp.GradScaler (tools/golden/fixtures_loss_scaler.py): on runs
// with nan- and inf-poisoned steps the scale after every update equals GradScaler's exactly
// (halving on a poisoned step, doubling after growth_interval good ones; also GradScaler's defaults
// over 2003 steps and other factors), poisoned steps are skipped and the parameters follow torch's
// within 1e-6. A skipped step leaves parameters and optimizer state bit-identical; the scaler's
// state restores exactly.
#include <cstdio>
#include <limits>

#include "nanoformer/nanoformer.h"
#include "nanoformer/optim/loss_scaler.h"
#include "nanoformer/optim/optimizer_set.h"
#include "nanoformer/optim/sgd.h"
#include "support/golden.h"
#include "support/testing.h"

namespace nf::optim {
namespace {

bool equal_bits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() && a.to_vector<double>() == b.to_vector<double>();
}

void check_case(const std::string& name) {
  SCOPED_TRACE(name);
  const testing::Golden golden("loss_scaler");
  const nlohmann::json& c = golden.cases().at(name);
  Tensor p = golden.input(name, "p");
  const Tensor a = golden.get(name, "a"), b = golden.get(name, "b");
  const std::vector<int64_t> poison = golden.get(name, "poison").to_vector<int64_t>();
  const std::vector<float> scales = golden.get(name, "scale").to_vector<float>();
  SGD optimizer({{{p}, 0.1}});
  DynamicLossScaler scaler({.init_scale = c["init_scale"], .growth_factor = c["growth_factor"],
                            .backoff_factor = c["backoff_factor"], .growth_interval = c["growth_interval"]});
  const int64_t steps = c["steps"];
  for (int64_t k = 1; k <= steps; ++k) {
    optimizer.zero_grad();
    (sum(a * p * p * 0.5 + b * p) * scaler.scale()).backward();  // loss x scale
    if (const int64_t kind = poison[static_cast<size_t>(k - 1)]; kind != 0)
      p.grad().set({1}, kind == 1 ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity());
    const bool finite = scaler.unscale({p});
    EXPECT_EQ(finite, poison[static_cast<size_t>(k - 1)] == 0) << "step " << k;
    if (finite) optimizer.step();
    scaler.update(!finite);
    ASSERT_EQ(scaler.scale(), scales[static_cast<size_t>(k - 1)]) << "scale after step " << k;
    if (golden.has(name, "p.step" + std::to_string(k))) {
      EXPECT_TENSOR_CLOSE(p, golden.get(name, "p.step" + std::to_string(k)), 1e-6, 0.0) << "step " << k;
    }
  }
  EXPECT_TENSOR_CLOSE(p, golden.get(name, "p.final"), 1e-6, 0.0);
}

TEST(LossScaler, ScalesAndSkipsAsGradScaler) { check_case("interval3"); }
TEST(LossScaler, GradScalerDefaultsHalveThenDoubleAfter2000GoodSteps) { check_case("defaults"); }
TEST(LossScaler, OtherFactorsAsGradScaler) { check_case("factors"); }

TEST(LossScaler, APoisonedStepLeavesParametersAndOptimizerStateUntouched) {
  auto model = std::make_shared<nn::Linear>(4, 3, true);
  OptimizerSet optimizers({.name = "adamw", .weight_decay = 0.1}, *model);
  DynamicLossScaler scaler;
  const Tensor x = Tensor::of({1, 2, 3, 4, 5, 6, 7, 8}, {2, 4});
  auto train_step = [&](bool poisoned) {
    optimizers.zero_grad();
    (sum(model->forward(x)) * scaler.scale()).backward();
    if (poisoned) model->weight.grad().set({0, 0}, std::numeric_limits<double>::quiet_NaN());
    const bool finite = scaler.unscale(optimizers.parameters());
    if (finite) optimizers.step();
    scaler.update(!finite);
  };
  train_step(false);
  const nn::StateDict weights_before = model->state_dict(), state_before = optimizers.state_dict();
  std::map<std::string, Tensor> copies;
  for (const auto& [k, t] : weights_before) copies[k] = t.clone();
  for (const auto& [k, t] : state_before) copies["opt." + k] = t.clone();
  train_step(true);
  EXPECT_EQ(scaler.scale(), 32768.0);
  for (const auto& [k, t] : model->state_dict()) EXPECT_TRUE(equal_bits(t, copies.at(k))) << k;
  for (const auto& [k, t] : optimizers.state_dict()) EXPECT_TRUE(equal_bits(t, copies.at("opt." + k))) << k;
}

TEST(LossScaler, StateRestoresExactly) {
  DynamicLossScaler scaler({.init_scale = 1024.0, .growth_interval = 3});
  scaler.update(true);
  scaler.update(false);
  scaler.update(false);
  DynamicLossScaler restored;
  restored.load_state_dict(scaler.state_dict());
  EXPECT_EQ(restored.scale(), 512.0);
  EXPECT_EQ(restored.growth_tracker(), 2);
  DynamicLossScaler continued({.init_scale = 1.0, .growth_interval = 3});
  continued.load_state_dict(scaler.state_dict());
  continued.update(false);
  EXPECT_EQ(continued.scale(), 1024.0);  // the third good step in a row grows it
}

TEST(LossScaler, BadOptionsAndStateAreNamed) {
  EXPECT_THROW_WITH(DynamicLossScaler({.growth_factor = 1.0}), "growth_factor 1");
  EXPECT_THROW_WITH(DynamicLossScaler({.backoff_factor = 1.5}), "backoff_factor 1.5");
  EXPECT_THROW_WITH(DynamicLossScaler({.growth_interval = 0}), "growth_interval 0");
  EXPECT_THROW_WITH(DynamicLossScaler({.init_scale = 1e40}), "init_scale");
  DynamicLossScaler scaler;
  EXPECT_THROW_WITH(scaler.load_state_dict({{"loss_scaler.scale", Tensor::scalar(2.0, DType::f64)}}),
                    "loss_scaler.scale is f64", "loss_scaler.growth_tracker missing");
  EXPECT_THROW_WITH(scaler.load_state_dict({{"loss_scaler.scale", Tensor::scalar(-1.0)},
                                            {"loss_scaler.growth_tracker", Tensor::scalar(0, DType::i64)}}),
                    "loss_scaler.scale is -1");
  EXPECT_EQ(scaler.scale(), 65536.0);
}

}  // namespace
}  // namespace nf::optim
