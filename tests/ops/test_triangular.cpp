// triu and tril against a naive mask over every diagonal, batched and non-contiguous inputs, their
// gradients, and errors.
#include <limits>

#include "support/testing.h"

namespace nf {
namespace {

using testing::random_leaf;

// out[.., i, j] = x[.., i, j] where (upper ? j - i >= diagonal : j - i <= diagonal), else 0; in f64
Tensor naive_triangular(const Tensor& x, int64_t diagonal, bool upper) {
  Tensor out = x.to(DType::f64).clone();
  const int64_t R = x.size(-2), C = x.size(-1), batch = x.numel() / std::max<int64_t>(R * C, 1);
  Tensor m = out.reshape({batch, R, C});
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < R; ++i)
      for (int64_t j = 0; j < C; ++j) {
        const bool keep = upper ? j - i >= diagonal : j - i <= diagonal;
        if (!keep) m.set({b, i, j}, 0.0);
      }
  return out;
}

TEST(Triangular, MatchesNaiveForEveryDiagonal) {
  Generator gen(1);
  for (const Shape& shape : {Shape{4, 6}, Shape{6, 4}, Shape{2, 3, 5, 5}}) {
    Tensor x = randn(shape, gen, DType::f64);
    for (int64_t diagonal = -7; diagonal <= 7; ++diagonal) {
      EXPECT_TENSOR_CLOSE(triu(x, diagonal), naive_triangular(x, diagonal, true), 0, 0)
          << shape_str(shape) << " diagonal " << diagonal;
      EXPECT_TENSOR_CLOSE(tril(x, diagonal), naive_triangular(x, diagonal, false), 0, 0)
          << shape_str(shape) << " diagonal " << diagonal;
    }
  }
}

TEST(Triangular, ExtremeDiagonalsKeepAllOrNothing) {
  Tensor x = ones({3, 4});
  constexpr int64_t big = std::numeric_limits<int64_t>::max(), small = std::numeric_limits<int64_t>::min();
  EXPECT_TENSOR_CLOSE(triu(x, small), x, 0, 0);
  EXPECT_TENSOR_CLOSE(triu(x, big), zeros({3, 4}), 0, 0);
  EXPECT_TENSOR_CLOSE(tril(x, big), x, 0, 0);
  EXPECT_TENSOR_CLOSE(tril(x, small), zeros({3, 4}), 0, 0);
}

TEST(Triangular, NonContiguousBatchedAndOtherDtypes) {
  Generator gen(2);
  Tensor x = randn({5, 2, 4, 3}, gen, DType::f64).permute({1, 3, 2, 0});  // (2, 3, 4, 5)
  ASSERT_FALSE(x.is_contiguous());
  EXPECT_TENSOR_CLOSE(triu(x, 1), naive_triangular(x, 1, true), 0, 0);
  EXPECT_TENSOR_CLOSE(tril(x, -1), naive_triangular(x, -1, false), 0, 0);
  Tensor big = randn({4, 130, 130}, gen);  // large enough to run threaded
  EXPECT_TENSOR_CLOSE(tril(big), naive_triangular(big, 0, false).to(DType::f32), 0, 0);
  // the causal mask of attention: bool lower triangle
  Tensor causal = tril(ones({3, 3}, DType::boolean));
  EXPECT_EQ(causal.dtype(), DType::boolean);
  EXPECT_EQ(causal.to_vector<int>(), (std::vector<int>{1, 0, 0, 1, 1, 0, 1, 1, 1}));
  EXPECT_EQ(triu(Tensor::of({1, 2, 3, 4}, {2, 2}, DType::i64), 1).to_vector<int64_t>(),
            (std::vector<int64_t>{0, 2, 0, 0}));
  EXPECT_EQ(triu(zeros({2, 0, 3})).shape(), (Shape{2, 0, 3}));
}

TEST(Triangular, GradientIsMaskedTheSameWay) {
  Tensor x = random_leaf({2, 3, 4}, 3);
  EXPECT_GRAD_OK([](const std::vector<Tensor>& in) { return triu(in[0], 1); }, {x});
  EXPECT_GRAD_OK([](const std::vector<Tensor>& in) { return tril(in[0], -1); }, {x});
  EXPECT_GRAD_OK([](const std::vector<Tensor>& in) { return tril(in[0].transpose(0, 2)); }, {x});
  Tensor y = zeros({3, 3}, DType::f64).set_requires_grad(true);
  sum(triu(y)).backward();
  EXPECT_TENSOR_CLOSE(y.grad(), naive_triangular(ones({3, 3}, DType::f64), 0, true), 0, 0);
}

TEST(Triangular, ErrorsNameOpAndShape) {
  EXPECT_THROW_WITH(triu(zeros({5})), "triu", "2 dims", "(5)");
  EXPECT_THROW_WITH(tril(zeros({})), "tril", "2 dims", "()");
}

}  // namespace
}  // namespace nf
