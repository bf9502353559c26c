// Optimizers against torch.optim (tools/golden/fixtures_optimizers.py): SGD (plain, momentum with
// dampening and weight decay, Nesterov), Adam (with and without L2 decay) and AdamW, each over 10
// steps on sum(0.5 a p^2 + b p) with two parameter groups of their own lr and weight decay; every
// parameter after every step within 1e-6 of PyTorch's.
#include <memory>

#include "nanoformer/nanoformer.h"
#include "nanoformer/optim/adam.h"
#include "nanoformer/optim/sgd.h"
#include "optim/quadratic_problem.h"
#include "support/golden.h"
#include "support/testing.h"

namespace nf::optim {
namespace {

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
  const QuadraticProblem problem(golden, name);
  const auto optimizer = make_optimizer(c, problem.groups(c));
  for (int k = 1; k <= QuadraticProblem::kSteps; ++k) {
    optimizer->zero_grad();
    problem.backward();
    optimizer->step();
    for (int i = 0; i < QuadraticProblem::kParams; ++i)
      EXPECT_TENSOR_CLOSE(problem.p[i], golden.get(name, role('p', i, k)), 1e-6, 0.0)
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
}  // namespace nf::optim
