// softmax and log_softmax against naive f64 loops along every dim (row and column kernels), their
// stability at extreme inputs, the f32 exp's accuracy, gradients, and errors.
#include <bit>
#include <cmath>
#include <limits>

#include "ops/cpu/simd/vector_math.h"  // the f32 exp the kernels use (internal, header-only)
#include "support/testing.h"

namespace nf {
namespace {

using testing::random_leaf;

// Reference along `dim` in f64: softmax, or log_softmax when `log`.
Tensor naive_softmax(const Tensor& x, int64_t dim, bool log) {
  const int64_t d = dim < 0 ? dim + x.dim() : dim;
  Tensor out = zeros(x.shape(), DType::f64);
  std::vector<int64_t> idx(static_cast<size_t>(x.dim()), 0);
  for (int64_t i = 0; i < x.numel(); ++i) {
    if (idx[d] == 0) {  // one slice per position with index 0 along d
      std::vector<int64_t> at = idx;
      double m = -std::numeric_limits<double>::infinity();
      for (at[d] = 0; at[d] < x.size(d); ++at[d]) m = std::max(m, x.at(at));
      double s = 0;
      for (at[d] = 0; at[d] < x.size(d); ++at[d]) s += std::exp(x.at(at) - m);
      for (at[d] = 0; at[d] < x.size(d); ++at[d]) {
        out.set(at, log ? x.at(at) - m - std::log(s) : std::exp(x.at(at) - m) / s);
      }
    }
    for (int64_t k = x.dim(); k-- > 0;) {
      if (++idx[k] < x.size(k)) break;
      idx[k] = 0;
    }
  }
  return out;
}

// Reference backward in f64 from x: softmax dx = y (dy - sum(dy y)); log dx = dy - softmax sum(dy).
Tensor naive_softmax_backward(const Tensor& x, const Tensor& dy, int64_t dim, bool log) {
  const Tensor p = naive_softmax(x, dim, false);
  const Tensor g = dy.to(DType::f64);
  const Tensor s = log ? sum(g, {dim}, true) : sum(g * p, {dim}, true);
  return log ? g - p * s : p * (g - s);
}

Tensor randn_f32(const Shape& shape, uint64_t seed, double scale = 1.0) {
  Generator gen(seed);
  return normal(shape, 0.0, scale, gen);
}

TEST(Softmax, EveryDimMatchesNaive) {
  Tensor x = randn_f32({3, 4, 5}, 1, 3.0);
  for (int64_t dim : {0, 1, 2, -1}) {
    EXPECT_TENSOR_CLOSE(softmax(x, dim), naive_softmax(x, dim, false), 1e-7, 1e-5);
    EXPECT_TENSOR_CLOSE(log_softmax(x, dim), naive_softmax(x, dim, true), 1e-5, 1e-5);
  }
}

TEST(Softmax, LongRowsAndWideColumnBlocks) {
  // rows longer than the lanes with a tail; columns wider than one block of the strided kernel
  Tensor rows = randn_f32({6, 5003}, 2, 4.0);
  EXPECT_TENSOR_CLOSE(softmax(rows, 1), naive_softmax(rows, 1, false), 1e-9, 1e-5);
  EXPECT_TENSOR_CLOSE(log_softmax(rows, 1), naive_softmax(rows, 1, true), 1e-5, 1e-5);
  Tensor cols = randn_f32({2, 7, 300}, 3, 4.0);
  EXPECT_TENSOR_CLOSE(softmax(cols, 1), naive_softmax(cols, 1, false), 1e-7, 1e-5);
  EXPECT_TENSOR_CLOSE(log_softmax(cols, 1), naive_softmax(cols, 1, true), 1e-5, 1e-5);
}

TEST(Softmax, NonContiguousInputs) {
  Tensor base = randn_f32({4, 5, 6}, 4, 2.0);
  Tensor t = base.transpose(0, 2);       // (6, 5, 4)
  Tensor s = base.slice(2, 0, 6, 2);     // (4, 5, 3)
  for (int64_t dim : {0, 2}) {
    EXPECT_TENSOR_CLOSE(softmax(t, dim), naive_softmax(t, dim, false), 1e-7, 1e-5);
    EXPECT_TENSOR_CLOSE(log_softmax(s, dim), naive_softmax(s, dim, true), 1e-5, 1e-5);
  }
}

TEST(Softmax, F64IsExact) {
  Generator gen(5);
  Tensor x = randn({3, 17}, gen, DType::f64);
  EXPECT_TENSOR_CLOSE(softmax(x, 1), naive_softmax(x, 1, false), 1e-15, 1e-13);
  EXPECT_TENSOR_CLOSE(log_softmax(x, 0), naive_softmax(x, 0, true), 1e-14, 1e-13);
}

TEST(Softmax, StableAtExtremeInputs) {
  const double inf = std::numeric_limits<double>::infinity();
  Tensor x = Tensor::of({1000, 1001, 999, -inf, -1e30, 5}, {2, 3});
  Tensor y = softmax(x, 1);
  EXPECT_TENSOR_CLOSE(y, naive_softmax(x, 1, false), 1e-7, 1e-5);
  EXPECT_EQ(y.at({1, 0}), 0.0);  // e^-inf is exactly 0
  EXPECT_EQ(y.at({1, 1}), 0.0);
  Tensor ly = log_softmax(x, 1);
  EXPECT_TENSOR_CLOSE(ly.select(0, 0), naive_softmax(x, 1, true).select(0, 0), 1e-5, 1e-6);
  EXPECT_EQ(ly.at({1, 0}), -inf);
  Tensor lcol = log_softmax(x.t(), 0);  // the column kernel
  EXPECT_TENSOR_CLOSE(lcol.select(1, 0), naive_softmax(x.t(), 0, true).select(1, 0), 1e-5, 1e-6);
  // a row holding NaN comes out NaN (as PyTorch); a column kernel too
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Tensor n = Tensor::of({1, nan, 2, 3}, {2, 2});
  EXPECT_TRUE(std::isnan(softmax(n, 1).at({0, 0})));
  EXPECT_FALSE(std::isnan(softmax(n, 1).at({1, 0})));
  EXPECT_TRUE(std::isnan(softmax(n, 0).at({1, 1})));
  EXPECT_FALSE(std::isnan(softmax(n, 0).at({1, 0})));
}

TEST(Softmax, F32ExpIsAccurateOverItsRange) {
  // e^x to 2 ulp where normal, to one subnormal step (2^-149) below; exact specials
  const float min_normal = std::numeric_limits<float>::min(), step = std::numeric_limits<float>::denorm_min();
  int64_t worst_ulps = 0;
  for (int i = 0; i <= 400000; ++i) {
    const float x = -110.0f + 200.0f * static_cast<float>(i) / 400000.0f;
    const float got = cpu::vmath::exp(x);
    const float want = static_cast<float>(std::exp(static_cast<double>(x)));
    if (want < min_normal) {
      ASSERT_LE(std::fabs(got - want), step) << "x = " << x;
    } else if (std::isinf(want)) {
      ASSERT_TRUE(std::isinf(got)) << "x = " << x;
    } else {
      const int64_t ulps = std::abs(static_cast<int64_t>(std::bit_cast<uint32_t>(got)) -
                                    static_cast<int64_t>(std::bit_cast<uint32_t>(want)));
      worst_ulps = std::max(worst_ulps, ulps);
    }
  }
  EXPECT_LE(worst_ulps, 2);
  EXPECT_EQ(cpu::vmath::exp(0.0f), 1.0f);
  EXPECT_EQ(cpu::vmath::exp(-std::numeric_limits<float>::infinity()), 0.0f);
  EXPECT_EQ(cpu::vmath::exp(std::numeric_limits<float>::infinity()), std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(cpu::vmath::exp(std::numeric_limits<float>::quiet_NaN())));
}

TEST(Softmax, RowSpanningTheF32ExpRange) {
  // softmax([0, a_1, ..., a_k]) with a_i down to -110: outputs down to subnormal and then 0
  std::vector<double> v{0.0};
  for (int i = 0; i < 4000; ++i) v.push_back(-110.0 * i / 3999.0);
  Tensor x = Tensor::of(v, {1, static_cast<int64_t>(v.size())});
  EXPECT_TENSOR_CLOSE(softmax(x, 1), naive_softmax(x, 1, false), 3e-45, 1e-6);
}

TEST(Softmax, GradientsAlongEveryDim) {
  Tensor x = random_leaf({3, 4, 5}, 6, -2.0, 2.0);
  for (int64_t dim : {0, 1, 2}) {
    EXPECT_GRAD_OK([dim](const std::vector<Tensor>& in) { return softmax(in[0], dim); }, {x});
    EXPECT_GRAD_OK([dim](const std::vector<Tensor>& in) { return log_softmax(in[0], dim); }, {x});
  }
  EXPECT_GRAD_OK([](const std::vector<Tensor>& in) { return softmax(in[0].transpose(0, 2), -1); }, {x});
  EXPECT_GRAD_OK([](const std::vector<Tensor>& in) { return log_softmax(in[0].slice(2, 1, 5, 2), 1); }, {x});
}

TEST(Softmax, F32BackwardMatchesNaive) {
  // the f32 kernels (with their own exp) against f64 references, row and column paths
  for (int64_t dim : {1, 0}) {
    for (bool log : {false, true}) {
      Tensor x = randn_f32({40, 300}, 7, 3.0).set_requires_grad(true);
      Tensor dy = randn_f32({40, 300}, 8);
      Tensor y = log ? log_softmax(x, dim) : softmax(x, dim);
      y.backward(dy);
      EXPECT_TENSOR_CLOSE(x.grad(), naive_softmax_backward(x.detach(), dy, dim, log), 1e-6, 1e-4);
    }
  }
}

TEST(Softmax, ZeroDimAndEmpty) {
  EXPECT_EQ(softmax(Tensor::scalar(3.0), 0).item(), 1.0);
  EXPECT_EQ(log_softmax(Tensor::scalar(3.0), -1).item(), 0.0);
  EXPECT_EQ(softmax(zeros({0, 4}), 1).shape(), (Shape{0, 4}));
  EXPECT_EQ(softmax(zeros({3, 0}), 1).shape(), (Shape{3, 0}));
}

TEST(Softmax, ErrorsNameOpDimAndShape) {
  EXPECT_THROW_WITH(softmax(zeros({2, 3}), 2), "softmax", "dim 2", "(2, 3)");
  EXPECT_THROW_WITH(log_softmax(zeros({2, 3}), -3), "log_softmax", "dim -3", "(2, 3)");
  EXPECT_THROW_WITH(softmax(zeros({2, 3}, DType::i64), 1), "softmax", "i64", "(2, 3)");
}

}  // namespace
}  // namespace nf
