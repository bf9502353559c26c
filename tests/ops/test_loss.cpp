// cross_entropy and mse_loss against naive f64 loops for every reduction, ignore_index, the
// all-ignored mean, gradients, and errors.
#include <cmath>
#include <limits>

#include "support/testing.h"

namespace nf {
namespace {

using testing::random_leaf;

// Per-row loss in f64: logsumexp(x_r) - x_r[t_r], 0 where t_r == ignore_index.
std::vector<double> naive_row_losses(const Tensor& logits, const std::vector<int64_t>& target, int64_t ignore_index) {
  std::vector<double> out;
  for (int64_t r = 0; r < logits.size(0); ++r) {
    if (target[static_cast<size_t>(r)] == ignore_index) {
      out.push_back(0.0);
      continue;
    }
    double m = -std::numeric_limits<double>::infinity();
    for (int64_t c = 0; c < logits.size(1); ++c) m = std::max(m, logits.at({r, c}));
    double s = 0;
    for (int64_t c = 0; c < logits.size(1); ++c) s += std::exp(logits.at({r, c}) - m);
    out.push_back(m + std::log(s) - logits.at({r, target[static_cast<size_t>(r)]}));
  }
  return out;
}

Tensor naive_cross_entropy(const Tensor& logits, const std::vector<int64_t>& target, int64_t ignore_index,
                           Reduction reduction) {
  const std::vector<double> rows = naive_row_losses(logits, target, ignore_index);
  if (reduction == Reduction::none) return Tensor::from_vector(rows, {static_cast<int64_t>(rows.size())});
  double total = 0;
  int64_t kept = 0;
  for (size_t r = 0; r < rows.size(); ++r) {
    total += rows[r];
    kept += target[r] != ignore_index ? 1 : 0;
  }
  return Tensor::scalar(reduction == Reduction::sum ? total : total / static_cast<double>(kept), DType::f64);
}

// dlogits in f64 for reduction mean with upstream 1: (softmax - onehot) / kept, 0 on ignored rows.
Tensor naive_cross_entropy_mean_grad(const Tensor& logits, const std::vector<int64_t>& target, int64_t ignore_index) {
  const int64_t n = logits.size(0), c = logits.size(1);
  int64_t kept = 0;
  for (int64_t t : target) kept += t != ignore_index ? 1 : 0;
  Tensor g = zeros({n, c}, DType::f64);
  for (int64_t r = 0; r < n; ++r) {
    const int64_t t = target[static_cast<size_t>(r)];
    if (t == ignore_index) continue;
    double m = -std::numeric_limits<double>::infinity(), s = 0;
    for (int64_t k = 0; k < c; ++k) m = std::max(m, logits.at({r, k}));
    for (int64_t k = 0; k < c; ++k) s += std::exp(logits.at({r, k}) - m);
    for (int64_t k = 0; k < c; ++k) {
      g.set({r, k}, (std::exp(logits.at({r, k}) - m) / s - (k == t ? 1.0 : 0.0)) / static_cast<double>(kept));
    }
  }
  return g;
}

Tensor targets(const std::vector<int64_t>& t, DType dtype = DType::i64) {
  std::vector<double> v(t.begin(), t.end());
  return Tensor::of(v, {static_cast<int64_t>(t.size())}, dtype);
}

TEST(CrossEntropy, EveryReductionMatchesNaive) {
  Generator gen(1);
  Tensor logits = normal({6, 5}, 0.0, 3.0, gen);
  const std::vector<int64_t> t{0, 4, -100, 2, 1, -100};
  for (DType index : {DType::i64, DType::i32}) {
    for (Reduction red : {Reduction::none, Reduction::mean, Reduction::sum}) {
      EXPECT_TENSOR_CLOSE(cross_entropy(logits, targets(t, index), -100, red), naive_cross_entropy(logits, t, -100, red),
                          1e-5, 1e-5);
    }
  }
  EXPECT_EQ(cross_entropy(logits, targets(t)).shape(), Shape{});
  EXPECT_EQ(cross_entropy(logits, targets(t), -100, Reduction::none).shape(), Shape{6});
}

TEST(CrossEntropy, IgnoreIndexMayBeAValidClass) {
  Generator gen(2);
  Tensor logits = randn({4, 3}, gen, DType::f64);
  const std::vector<int64_t> t{2, 0, 2, 1};
  EXPECT_TENSOR_CLOSE(cross_entropy(logits, targets(t), 2), naive_cross_entropy(logits, t, 2, Reduction::mean), 1e-12,
                      1e-12);
}

TEST(CrossEntropy, LargeVocabularyAndLargeLogits) {
  Generator gen(3);
  Tensor logits = normal({8, 3001}, 0.0, 4.0, gen) + 500.0;  // far from 0: logsumexp must stay precise
  Tensor idx = randint(0, 3001, {8}, gen);
  const std::vector<int64_t> t = idx.to_vector<int64_t>();
  EXPECT_TENSOR_CLOSE(cross_entropy(logits, idx, -100, Reduction::none),
                      naive_cross_entropy(logits, t, -100, Reduction::none), 1e-5, 1e-5);
  Tensor x = logits.detach().set_requires_grad(true);
  cross_entropy(x, idx).backward();
  EXPECT_TENSOR_CLOSE(x.grad(), naive_cross_entropy_mean_grad(logits, t, -100), 1e-8, 1e-4);
}

TEST(CrossEntropy, F32GradientMatchesNaive) {
  Generator gen(4);
  Tensor logits = normal({7, 40}, 0.0, 3.0, gen);
  const std::vector<int64_t> t{3, -100, 39, 0, 17, 17, -100};
  Tensor x = logits.detach().set_requires_grad(true);
  cross_entropy(x, targets(t)).backward();
  EXPECT_TENSOR_CLOSE(x.grad(), naive_cross_entropy_mean_grad(logits, t, -100), 1e-8, 1e-5);
}

TEST(CrossEntropy, AllIgnoredMeanIsNaNWithZeroGradient) {
  // as PyTorch: the mean over no targets is 0 / 0; the gradient is 0
  Tensor x = random_leaf({3, 4}, 5);
  Tensor loss = cross_entropy(x, targets({-100, -100, -100}));
  EXPECT_TRUE(std::isnan(loss.item()));
  loss.backward();
  EXPECT_TENSOR_CLOSE(x.grad(), zeros({3, 4}, DType::f64), 0, 0);
  EXPECT_EQ(cross_entropy(x.detach(), targets({-100, -100, -100}), -100, Reduction::sum).item(), 0.0);
}

TEST(CrossEntropy, Gradients) {
  Tensor x = random_leaf({5, 4}, 6, -2.0, 2.0);
  const Tensor t = targets({1, -100, 3, 0, 3});
  for (Reduction red : {Reduction::none, Reduction::mean, Reduction::sum}) {
    EXPECT_GRAD_OK([&](const std::vector<Tensor>& in) { return cross_entropy(in[0], t, -100, red); }, {x});
  }
  // non-contiguous logits: the transpose of (C, N)
  Tensor xt = random_leaf({4, 5}, 7, -2.0, 2.0);
  EXPECT_GRAD_OK([&](const std::vector<Tensor>& in) { return cross_entropy(in[0].t(), t, -100, Reduction::none); }, {xt});
  EXPECT_GRAD_OK([&](const std::vector<Tensor>& in) { return cross_entropy(in[0].t(), t.to(DType::i32)); }, {xt});
}

TEST(CrossEntropy, TargetOutOfRangeNamesRowValueAndC) {
  Tensor logits = zeros({3, 5});
  EXPECT_THROW_WITH(cross_entropy(logits, targets({0, 7, 1})), "cross_entropy", "row 1", "target 7", "C = 5");
  EXPECT_THROW_WITH(cross_entropy(logits, targets({0, 1, -1}, DType::i32)), "cross_entropy", "row 2", "target -1");
  EXPECT_THROW_WITH(cross_entropy(logits, targets({5, 0, 0}), -100, Reduction::none), "cross_entropy", "row 0", "5");
}

TEST(CrossEntropy, ShapeAndDtypeErrors) {
  EXPECT_THROW_WITH(cross_entropy(zeros({4, 5}), targets({0, 1, 2})), "cross_entropy", "(3)", "(4, 5)");
  EXPECT_THROW_WITH(cross_entropy(zeros({2, 4, 5}), targets({0, 1})), "cross_entropy", "(2, 4, 5)");
  EXPECT_THROW_WITH(cross_entropy(zeros({2, 5}), zeros({2})), "cross_entropy", "f32", "(2)");
  EXPECT_THROW_WITH(cross_entropy(zeros({2, 5}, DType::i64), targets({0, 1})), "cross_entropy", "i64", "(2, 5)");
}

// ---- mse_loss ----

TEST(MseLoss, EveryReductionMatchesNaive) {
  Generator gen(8);
  Tensor a = randn({3, 4}, gen), b = randn({3, 4}, gen);
  std::vector<double> sq;
  double total = 0;
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 4; ++j) {
      const double d = a.at({i, j}) - b.at({i, j});
      sq.push_back(d * d);
      total += d * d;
    }
  EXPECT_TENSOR_CLOSE(mse_loss(a, b, Reduction::none), Tensor::from_vector(sq, {3, 4}), 1e-6, 1e-5);
  EXPECT_NEAR(mse_loss(a, b, Reduction::sum).item(), total, 1e-5);
  EXPECT_NEAR(mse_loss(a, b).item(), total / 12, 1e-6);
  EXPECT_EQ(mse_loss(a, b).shape(), Shape{});
}

TEST(MseLoss, Gradients) {
  Tensor a = random_leaf({3, 4}, 9), b = random_leaf({4, 3}, 10);
  for (Reduction red : {Reduction::none, Reduction::mean, Reduction::sum}) {
    EXPECT_GRAD_OK([red](const std::vector<Tensor>& in) { return mse_loss(in[0], in[1].t(), red); }, {a, b});
  }
}

TEST(MseLoss, Errors) {
  EXPECT_THROW_WITH(mse_loss(zeros({2, 3}), zeros({3, 2})), "mse_loss", "(2, 3)", "(3, 2)");
  EXPECT_THROW_WITH(mse_loss(zeros({2, 3}), zeros({2, 3}, DType::f64)), "mse_loss", "f32", "f64");
  EXPECT_THROW_WITH(mse_loss(zeros({2}, DType::i32), zeros({2}, DType::i32)), "mse_loss", "i32", "(2)");
}

}  // namespace
}  // namespace nf
