// The tape: accumulation, explicit upstream gradients, graph release, NoGradGuard, detach, and the
// gradient checker itself (it must catch a wrong backward).
#include <algorithm>

#include "support/testing.h"

namespace nf {
namespace {

Tensor leaf(std::vector<double> values, Shape shape) {
  Tensor t = Tensor::of(values, shape, DType::f64);
  t.set_requires_grad(true);
  return t;
}

TEST(Autograd, ScalarBackwardComputesLeafGradients) {
  Tensor a = leaf({1, 2, 3}, {3}), b = leaf({4, 5, 6}, {3});
  Tensor loss = sum(a * b + a);  // dL/da = b + 1, dL/db = a
  loss.backward();
  EXPECT_EQ(a.grad().to_vector<double>(), (std::vector<double>{5, 6, 7}));
  EXPECT_EQ(b.grad().to_vector<double>(), (std::vector<double>{1, 2, 3}));
}

TEST(Autograd, GradientsAccumulateAcrossBackwardCallsUntilZeroed) {
  Tensor a = leaf({1, 2}, {2});
  sum(a * 3.0).backward();
  sum(a * 3.0).backward();
  EXPECT_EQ(a.grad().to_vector<double>(), (std::vector<double>{6, 6}));
  a.zero_grad();
  EXPECT_FALSE(a.grad().defined());
  sum(a).backward();
  EXPECT_EQ(a.grad().to_vector<double>(), (std::vector<double>{1, 1}));
}

TEST(Autograd, DiamondGraphSumsBothPaths) {
  Tensor x = leaf({2}, {1});
  Tensor y = x * x;          // reused twice below
  Tensor z = sum(y * 3.0 + y * y);  // dz/dx = (3 + 2y) * 2x = (3 + 8) * 4 = 44
  z.backward();
  EXPECT_DOUBLE_EQ(x.grad().item(), 44.0);
}

TEST(Autograd, GradientSumsNeverWriteIntoAGradientAnotherNodeHolds) {
  // out = sum((h1 + h2) w) + sum(h1 v) + sum(h2 u), h1 = 1 x, h2 = 3 x:  dx = (w + v) + 3 (w + u).
  // add's backward hands the same g to h1 and h2; a second gradient of either must not be added
  // into that shared g in place, or the other would see it too. Every order of the three terms.
  const Tensor x = leaf({1, 2, 3}, {3});
  const Tensor w = Tensor::of({1, 10, 100}, {3}, DType::f64), v = Tensor::of({4, 5, 6}, {3}, DType::f64),
               u = Tensor::of({7, 8, 9}, {3}, DType::f64);
  std::vector<int> order{0, 1, 2};
  do {
    x.zero_grad();
    const Tensor h1 = x * 1.0, h2 = x * 3.0;
    const Tensor terms[] = {sum((h1 + h2) * w), sum(h1 * v), sum(h2 * u)};
    (terms[order[0]] + terms[order[1]] + terms[order[2]]).backward();
    EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{29, 69, 433}));
  } while (std::next_permutation(order.begin(), order.end()));
  // many paths into one node: summed in place into the first gradient, which only the sum holds
  const Tensor y = leaf({1, 2}, {2});
  const Tensor h = y * 2.0;
  (sum(h * 1.0) + sum(h * 2.0) + sum(h * 3.0) + sum(h * 4.0)).backward();
  EXPECT_EQ(y.grad().to_vector<double>(), (std::vector<double>{20, 20}));
}

TEST(Autograd, ExplicitUpstreamGradient) {
  Tensor x = leaf({1, 2, 3, 4}, {2, 2});
  Tensor y = x * 2.0;
  y.backward(Tensor::of({1, 0, 0, 10}, {2, 2}, DType::f64));
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{2, 0, 0, 20}));
}

TEST(Autograd, BackwardErrorsNameTheProblem) {
  Tensor x = leaf({1, 2}, {2});
  Tensor y = x * 2.0;
  EXPECT_THROW_WITH(y.backward(), "one-element", "(2)");
  EXPECT_THROW_WITH(y.backward(Tensor::of({1, 2, 3}, {3}, DType::f64)), "backward", "(3)", "(2)");
  EXPECT_THROW_WITH(zeros({1}).backward(), "does not require grad");
}

TEST(Autograd, GraphIsFreedAfterBackwardUnlessRetained) {
  Tensor x = leaf({3}, {1});
  Tensor y = sum(x * x);
  y.backward({}, /*retain_graph=*/true);
  y.backward();
  EXPECT_DOUBLE_EQ(x.grad().item(), 12.0);
  EXPECT_THROW_WITH(y.backward(), "second time", "retain_graph");
}

TEST(Autograd, SavedTensorsAreReleasedAfterBackward) {
  Tensor x = leaf({1, 2, 3}, {3});
  Tensor loss;
  {
    Tensor big = expand(unsqueeze(x, 0), {1000, 3}).contiguous();  // 24000 bytes
    loss = sum(big * big);  // after this scope only mul's saved operands hold `big`
  }
  const size_t before = memory::current_bytes();
  loss.backward();
  // the saved 24000-byte operand is gone; only x.grad (24 bytes) was added
  EXPECT_LE(memory::current_bytes() + 24000, before + 24);
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{2000, 4000, 6000}));
}

TEST(Autograd, NoGradGuardStopsRecording) {
  Tensor x = leaf({1, 2}, {2});
  {
    NoGradGuard guard;
    Tensor y = x * 2.0;
    EXPECT_FALSE(y.requires_grad());
    EXPECT_EQ(y.grad_fn(), nullptr);
  }
  Tensor z = x * 2.0;
  EXPECT_TRUE(z.requires_grad());
  EXPECT_EQ(z.grad_fn()->name(), "mul");
}

TEST(Autograd, DetachCutsHistoryButSharesData) {
  Tensor x = leaf({1, 2}, {2});
  Tensor y = x * 2.0;
  Tensor d = y.detach();
  EXPECT_FALSE(d.requires_grad());
  EXPECT_TRUE(d.shares_storage_with(y));
  sum(d * x).backward();  // d is a constant: dL/dx = d
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{2, 4}));
}

TEST(Autograd, GradThroughViewsReachesTheBase) {
  Tensor x = leaf({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor y = x.t().narrow(0, 1, 2).reshape({4});  // x[:, 1:3] transposed, flattened
  y.backward(Tensor::of({1, 2, 3, 4}, {4}, DType::f64));
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{0, 1, 3, 0, 2, 4}));
}

TEST(Autograd, InPlaceOnGraphTensorsIsRefused) {
  Tensor x = leaf({1, 2}, {2});
  EXPECT_THROW_WITH(add_(x, ones({2}, DType::f64)), "add_", "requires grad");
  NoGradGuard guard;
  add_(x, ones({2}, DType::f64));  // optimiser-style update
  EXPECT_EQ(x.to_vector<double>(), (std::vector<double>{2, 3}));
}

TEST(Gradcheck, PassesForCorrectBackward) {
  Tensor a = testing::random_leaf({3, 4}, 1), b = testing::random_leaf({4}, 2);
  EXPECT_GRAD_OK([](const std::vector<Tensor>& in) { return in[0] * in[1] - in[1] / (in[0] * in[0] + 2.0); }, {a, b});
}

TEST(Gradcheck, CatchesAWrongBackward) {
  // y = x^2 with a backward that claims dy/dx = x (missing the factor 2)
  auto wrong_square = [](const std::vector<Tensor>& in) {
    const Tensor& x = in[0];
    Tensor out;
    {
      NoGradGuard guard;
      out = x * x;
    }
    autograd::record("wrong_square", out, {x}, [xd = x.detach()](const Tensor& g, const autograd::Node&) {
      return std::vector<Tensor>{g * xd};
    });
    return out;
  };
  Tensor x = testing::random_leaf({3}, 3);
  const autograd::GradcheckResult r = autograd::gradcheck(wrong_square, {x});
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.message.find("analytic"), std::string::npos) << r.message;
}

TEST(Gradcheck, RejectsNonF64Inputs) {
  Tensor x = zeros({2});
  x.set_requires_grad(true);
  const autograd::GradcheckResult r = autograd::gradcheck([](const std::vector<Tensor>& in) { return in[0] * 2.0; }, {x});
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.message.find("f64"), std::string::npos);
}

TEST(Autograd, BackwardShapeBugIsReported) {
  Tensor x = leaf({1, 2}, {2});
  Tensor out;
  {
    NoGradGuard guard;
    out = x * 1.0;
  }
  autograd::record("broken", out, {x}, [](const Tensor&, const autograd::Node&) {
    return std::vector<Tensor>{zeros({3}, DType::f64)};
  });
  EXPECT_THROW_WITH(sum(out).backward(), "broken", "(3)", "(2)");
}

}  // namespace
}  // namespace nf
