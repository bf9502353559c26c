// matmul and linear against a naive triple loop, their gradients against finite differences, and
// their errors.
#include "support/testing.h"

namespace nf {
namespace {

using testing::random_leaf;

// out[..., i, j] = sum_k a[..., i, k] b[..., k, j] for 2-D or same-batch 3-D operands, in f64
Tensor naive_matmul(const Tensor& a, const Tensor& b) {
  const bool batched = a.dim() == 3;
  const int64_t B = batched ? a.size(0) : 1, M = a.size(-2), K = a.size(-1), N = b.size(-1);
  Tensor out = zeros(batched ? Shape{B, M, N} : Shape{M, N}, DType::f64);
  for (int64_t z = 0; z < B; ++z)
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double s = 0;
        for (int64_t k = 0; k < K; ++k) s += batched ? a.at({z, i, k}) * b.at({z, k, j}) : a.at({i, k}) * b.at({k, j});
        batched ? out.set({z, i, j}, s) : out.set({i, j}, s);
      }
  return out;
}

TEST(Matmul, TwoDMatchesNaive) {
  Generator gen(1);
  Tensor a = randn({7, 5}, gen), b = randn({5, 3}, gen);
  EXPECT_TENSOR_CLOSE(matmul(a, b), naive_matmul(a, b).to(DType::f32), 1e-5, 1e-5);
}

TEST(Matmul, TransposedOperandsWithoutCopies) {
  Generator gen(2);
  Tensor at = randn({5, 7}, gen), bt = randn({3, 5}, gen);
  Tensor a = at.t(), b = bt.t();
  ASSERT_FALSE(a.is_contiguous());
  EXPECT_TENSOR_CLOSE(matmul(a, b), naive_matmul(a, b).to(DType::f32), 1e-5, 1e-5);
}

TEST(Matmul, BatchBroadcasting) {
  Generator gen(3);
  Tensor a = randn({2, 1, 4, 3}, gen, DType::f64), b = randn({5, 3, 2}, gen, DType::f64);
  Tensor c = matmul(a, b);
  ASSERT_EQ(c.shape(), (Shape{2, 5, 4, 2}));
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 5; ++j) {
      EXPECT_TENSOR_CLOSE(c.select(0, i).select(0, j), naive_matmul(a.select(0, i).select(0, 0), b.select(0, j)), 1e-12, 1e-12);
    }
}

TEST(Matmul, VectorPromotion) {
  Generator gen(4);
  Tensor m = randn({3, 4}, gen, DType::f64), v = randn({4}, gen, DType::f64), w = randn({3}, gen, DType::f64);
  EXPECT_EQ(matmul(m, v).shape(), (Shape{3}));
  EXPECT_EQ(matmul(w, m).shape(), (Shape{4}));
  EXPECT_EQ(matmul(v, v).shape(), (Shape{}));
  double dot = 0;
  for (int64_t i = 0; i < 4; ++i) dot += v.at({i}) * v.at({i});
  EXPECT_NEAR(matmul(v, v).item(), dot, 1e-12);
}

TEST(Matmul, GradientsOfBatchedBroadcastProduct) {
  Tensor a = random_leaf({2, 3, 4}, 5), b = random_leaf({4, 2}, 6);
  EXPECT_GRAD_OK([](const std::vector<Tensor>& in) { return matmul(in[0], in[1]); }, {a, b});
  Tensor c = random_leaf({1, 3, 4}, 7), d = random_leaf({2, 4, 2}, 8);
  EXPECT_GRAD_OK([](const std::vector<Tensor>& in) { return matmul(in[0], in[1]); }, {c, d});
  Tensor v = random_leaf({4}, 9);
  EXPECT_GRAD_OK([](const std::vector<Tensor>& in) { return matmul(in[0], in[1]); }, {v, d});
}

TEST(Linear, MatchesMatmulPlusBias) {
  Generator gen(10);
  Tensor x = randn({2, 3, 4}, gen), w = randn({5, 4}, gen), b = randn({5}, gen);
  EXPECT_TENSOR_CLOSE(linear(x, w, b), matmul(x, w.t()) + b, 1e-5, 1e-5);
  EXPECT_TENSOR_CLOSE(linear(x, w), matmul(x, w.t()), 1e-5, 1e-5);
}

TEST(Linear, Gradients) {
  Tensor x = random_leaf({2, 3, 4}, 11), w = random_leaf({5, 4}, 12), b = random_leaf({5}, 13);
  EXPECT_GRAD_OK([](const std::vector<Tensor>& in) { return linear(in[0], in[1], in[2]); }, {x, w, b});
}

TEST(Matmul, ShapeMismatchNamesOpAndShapes) {
  EXPECT_THROW_WITH(matmul(zeros({2, 3}), zeros({4, 5})), "matmul", "(2, 3)", "(4, 5)");
  EXPECT_THROW_WITH(matmul(zeros({2, 2, 3}), zeros({3, 3, 5})), "matmul", "(2)", "(3)");
  EXPECT_THROW_WITH(linear(zeros({2, 3}), zeros({4, 5})), "linear", "(2, 3)", "(4, 5)");
  EXPECT_THROW_WITH(matmul(zeros({2, 3}), zeros({3, 2}, DType::f64)), "matmul", "f32", "f64");
}

}  // namespace
}  // namespace nf
