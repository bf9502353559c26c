// dropout: identity in eval, seeded masks independent of the thread count, the share of zeros
// within a binomial bound, the survivors' scale, gradients through the same mask, and errors.
#include <cmath>

#include "support/testing.h"

namespace nf {
namespace {

using testing::random_leaf;

TEST(Dropout, EvalAndZeroProbabilityReturnTheInputItself) {
  Tensor x = ones({4, 5});
  Generator gen(1);
  EXPECT_EQ(dropout(x, 0.5, false, gen).impl(), x.impl());
  EXPECT_EQ(dropout(x, 0.0, true, gen).impl(), x.impl());
  EXPECT_EQ(gen.offset(), 0u);  // nothing drawn
}

TEST(Dropout, ProbabilityOneZeroesEverythingAndItsGradient) {
  Tensor x = random_leaf({3, 4}, 2);
  Generator gen(2);
  Tensor y = dropout(x, 1.0, true, gen);
  EXPECT_TENSOR_CLOSE(y, zeros({3, 4}, DType::f64), 0, 0);
  y.backward(ones({3, 4}, DType::f64));
  EXPECT_TENSOR_CLOSE(x.grad(), zeros({3, 4}, DType::f64), 0, 0);
}

TEST(Dropout, SeededAndAdvancesTheGenerator) {
  Tensor x = ones({1000});
  Generator a(7), b(7), c(8);
  Tensor ya = dropout(x, 0.5, true, a), yb = dropout(x, 0.5, true, b), yc = dropout(x, 0.5, true, c);
  EXPECT_TENSOR_CLOSE(ya, yb, 0, 0);
  EXPECT_FALSE(testing::tensors_close(ya, yc, 0, 0));
  EXPECT_EQ(a.offset(), 1000u);
  EXPECT_FALSE(testing::tensors_close(dropout(x, 0.5, true, a), ya, 0, 0));  // the next draw differs
}

TEST(Dropout, MaskIsBernoulliOfTheKeepProbability) {
  // the mask equals bernoulli(1 - p) drawn from the same generator state, for f32 and f64
  for (DType dtype : {DType::f32, DType::f64}) {
    Generator g1(11), g2(11);
    Tensor y = dropout(ones({3000}, dtype), 0.3, true, g1);
    Tensor keep = bernoulli({3000}, 0.7, g2, dtype);
    EXPECT_TENSOR_CLOSE(y, keep / 0.7, 0, 1e-7);
  }
}

TEST(Dropout, IndependentOfThreadCount) {
  const int before = num_threads();
  Generator gen(3);
  Tensor x = randn({300, 700}, gen);  // 210000 elements: split across threads when there are several
  set_num_threads(1);
  Generator g1(4);
  Tensor one = dropout(x, 0.25, true, g1);
  set_num_threads(2);
  Generator g2(4);
  Tensor two = dropout(x, 0.25, true, g2);
  set_num_threads(before);
  EXPECT_TENSOR_CLOSE(one, two, 0, 0);
}

TEST(Dropout, ShareOfZerosWithinBinomialBound) {
  // zeros ~ Binomial(n, p): mean n p, sd sqrt(n p (1 - p)). Six sd (a false alarm under 2e-9 for
  // a fair generator) for n = 200000 and p = 0.3 is 1230 elements, 0.6% of n.
  const int64_t n = 200000;
  const double p = 0.3;
  Generator gen(5);
  Tensor x = uniform({n}, 1.0, 2.0, gen);  // never 0 itself
  Generator mask_gen(6);
  Tensor y = dropout(x, p, true, mask_gen);
  const std::vector<float> xs = x.to_vector<float>(), ys = y.to_vector<float>();
  int64_t dropped = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (ys[i] == 0.0f) {
      ++dropped;
    } else {
      ASSERT_EQ(ys[i], xs[i] * static_cast<float>(1.0 / 0.7)) << "element " << i;  // survivors scaled by 1 / (1 - p)
    }
  }
  const double sd = std::sqrt(n * p * (1 - p));
  EXPECT_LT(std::fabs(static_cast<double>(dropped) - n * p), 6 * sd) << dropped << " of " << n << " dropped";
}

TEST(Dropout, GradientUsesTheSameMask) {
  Tensor x = random_leaf({50, 40}, 7, 0.5, 1.5);
  Generator gen(8);
  Tensor y = dropout(x, 0.4, true, gen);
  Tensor g = random_leaf({50, 40}, 9).detach();
  y.backward(g);
  // dx = g y / x: g / (1 - p) where kept, 0 where dropped
  EXPECT_TENSOR_CLOSE(x.grad(), g * y.detach() / x.detach(), 1e-15, 1e-12);
  // finite differences, each call with a fresh generator in the same state, contiguous or not
  Tensor z = random_leaf({6, 5}, 10);
  EXPECT_GRAD_OK([](const std::vector<Tensor>& in) {
    Generator same(12);
    return dropout(in[0], 0.5, true, same);
  }, {z});
  EXPECT_GRAD_OK([](const std::vector<Tensor>& in) {
    Generator same(13);
    return dropout(in[0].t(), 0.2, true, same);
  }, {z});
}

TEST(Dropout, DefaultGeneratorFollowsManualSeed) {
  Tensor x = ones({500});
  manual_seed(21);
  Tensor a = dropout(x, 0.5, true);
  manual_seed(21);
  Tensor b = dropout(x, 0.5, true);
  EXPECT_TENSOR_CLOSE(a, b, 0, 0);
}

TEST(Dropout, Errors) {
  Generator gen(1);
  EXPECT_THROW_WITH(dropout(ones({2, 3}), 1.5, true, gen), "dropout", "1.5", "(2, 3)");
  EXPECT_THROW_WITH(dropout(ones({2, 3}), -0.1, true, gen), "dropout", "-0.1", "(2, 3)");
  EXPECT_THROW_WITH(dropout(ones({2, 3}, DType::i64), 0.5, true, gen), "dropout", "i64", "(2, 3)");
}

}  // namespace
}  // namespace nf
