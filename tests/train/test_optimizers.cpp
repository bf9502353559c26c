// Optimizers against torch.optim (tools/golden/fixtures_optimizers.py): SGD (plain, momentum with
// dampening and weight decay, Nesterov), Adam (with and without L2 decay) and AdamW, each over 10
// steps on sum(0.5 a p^2 + b p) with two parameter groups of their own lr and weight decay; every
// parameter after every step within 1e-6 of PyTorch's.
#include <memory>

#include "nanoformer/nanoformer.h"
#include "nanoformer/train/adam.h"
#include "nanoformer/train/sgd.h"
#include "support/golden.h"
#include "support/testing.h"

namespace nf::train {
namespace {

constexpr int kParams = 3, kSteps = 10;

// "p1", "a1", or "p1.step3" (k > 0): the fixture's roles.
std::string role(char what, int i, int k = 0) {
  std::string r(1, what);
  r += std::to_string(i);
  if (k > 0) r += ".step" + std::to_string(k);
  return r;
}

std::unique_ptr<Optimizer> make_optimizer(const nlohmann::json& c, std::vector<ParamGroup> groups) {
  const std::string kind = c.at("optimizer");
  if (kind == "SGD")
    return std::make_unique<SGD>(std::move(groups), SGDOptions{.momentum = c.value("momentum", 0.0),
                                                              .dampening = c.value("dampening", 0.0),
                                                              .nesterov = c.value("nesterov", false)});
  const AdamOptions options{.beta1 = c.at("betas")[0], .beta2 = c.at("betas")[1], .eps = c.at("eps")};
  if (kind == "Adam") return std::make_unique<Adam>(std::move(groups), options);
  return std::make_unique<AdamW>(std::move(groups), options);
}

void check_case(const std::string& name) {
  SCOPED_TRACE(name);
  const testing::Golden golden("optimizers");
  const nlohmann::json& c = golden.cases().at(name);
  std::vector<Tensor> p, a, b;
  for (int i = 0; i < kParams; ++i) {
    p.push_back(golden.input(name, role('p', i)));
    a.push_back(golden.get(name, role('a', i)));
    b.push_back(golden.get(name, role('b', i)));
  }
  std::vector<ParamGroup> groups = {{{p[0], p[1]}, c["groups"][0]["lr"], c["groups"][0]["weight_decay"]},
                                    {{p[2]}, c["groups"][1]["lr"], c["groups"][1]["weight_decay"]}};
  const auto optimizer = make_optimizer(c, std::move(groups));
  for (int k = 1; k <= kSteps; ++k) {
    optimizer->zero_grad();
    Tensor loss = sum(a[0] * p[0] * p[0] * 0.5 + b[0] * p[0]);  // gradient a p + b
    for (int i = 1; i < kParams; ++i) loss = loss + sum(a[i] * p[i] * p[i] * 0.5 + b[i] * p[i]);
    loss.backward();
    optimizer->step();
    for (int i = 0; i < kParams; ++i)
      EXPECT_TENSOR_CLOSE(p[i], golden.get(name, role('p', i, k)), 1e-6, 0.0)
          << "parameter " << i << " after step " << k;
  }
}

TEST(Optimizers, SgdMatchesTorch) { check_case("sgd"); }
TEST(Optimizers, SgdWithMomentumDampeningAndDecayMatchesTorch) { check_case("sgd_momentum_dampening_decay"); }
TEST(Optimizers, SgdNesterovMatchesTorch) { check_case("sgd_nesterov"); }
TEST(Optimizers, AdamMatchesTorch) { check_case("adam"); }
TEST(Optimizers, AdamWithL2DecayMatchesTorch) { check_case("adam_l2"); }
TEST(Optimizers, AdamWMatchesTorch) { check_case("adamw"); }

TEST(Optimizers, ParametersWithoutAGradientAreLeftAlone) {
  Tensor used = Tensor::of({1.0f, 2.0f}, {2}), unused = Tensor::of({3.0f}, {1});
  used.set_requires_grad(true);
  unused.set_requires_grad(true);
  AdamW optimizer({{{used, unused}, 0.1, 0.1}});
  sum(used * used).backward();
  optimizer.step();
  EXPECT_EQ(unused.to_vector<float>(), std::vector<float>{3.0f});
  EXPECT_NE(used.to_vector<float>(), (std::vector<float>{1.0f, 2.0f}));
}

TEST(Optimizers, BadOptionsAndParametersAreNamed) {
  Tensor p = Tensor::of({1.0f}, {1});
  p.set_requires_grad(true);
  EXPECT_THROW_WITH(SGD({{{p}, -0.1, 0.0}}), "group 0 has lr -0.1");
  EXPECT_THROW_WITH(SGD({{{p}, 0.1, 0.0}}, {.momentum = 0.0, .nesterov = true}), "nesterov needs momentum > 0");
  EXPECT_THROW_WITH(Adam({{{p}, 0.1, 0.0}}, {.beta1 = 1.0}), "beta1 1");
  EXPECT_THROW_WITH(Adam({{{Tensor::of({1.0}, {1}, DType::f64)}, 0.1, 0.0}}), "group 0 parameter 0",
                    "contiguous f32");
}

}  // namespace
}  // namespace nf::train
