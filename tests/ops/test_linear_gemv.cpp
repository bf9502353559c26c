// linear's few-rows path (ops/cpu/matmul/gemv.h, the decode-time matrix-vector kernel) against a naive
// f64 reference within the f32 error bound, against the sgemm path, across thread counts, with
// strided and transposed operands, and its gradients.
#include <cmath>

#include "nanoformer/autograd/grad_mode.h"
#include "nanoformer/core/parallel.h"
#include "ops/cpu/matmul/gemv.h"
#include "support/testing.h"
#include "support/threads.h"

namespace nf {
namespace {

// The reference y = x W^T + b in f64, and the worst-case error bound of an f32 dot product of K
// terms: |y32 - y| <= 1.01 K u sum_k |x_k w_k| (u = 2^-24), plus the rounding of the bias add.
struct Reference {
  std::vector<double> y, bound;
};

Reference naive_linear(const Tensor& x, const Tensor& w, const Tensor& b) {
  const int64_t R = x.size(0), K = x.size(1), N = w.size(0);
  Reference ref;
  const double u = std::ldexp(1.0, -24);
  for (int64_t r = 0; r < R; ++r)
    for (int64_t n = 0; n < N; ++n) {
      double s = b.defined() ? b.at({n}) : 0.0, magnitude = b.defined() ? std::abs(b.at({n})) : 0.0;
      for (int64_t k = 0; k < K; ++k) {
        s += x.at({r, k}) * w.at({n, k});
        magnitude += std::abs(x.at({r, k}) * w.at({n, k}));
      }
      ref.y.push_back(s);
      ref.bound.push_back(1.01 * static_cast<double>(K + 1) * u * magnitude + 1e-30);
    }
  return ref;
}

void expect_matches_reference(const Tensor& y, const Tensor& x, const Tensor& w, const Tensor& b) {
  const Reference ref = naive_linear(x, w, b);
  const Tensor flat = contiguous(y).reshape({-1});
  ASSERT_EQ(flat.numel(), static_cast<int64_t>(ref.y.size()));
  for (int64_t i = 0; i < flat.numel(); ++i)
    ASSERT_LE(std::abs(flat.at({i}) - ref.y[static_cast<size_t>(i)]), ref.bound[static_cast<size_t>(i)])
        << "element " << i << " of " << shape_str(y.shape()) << " (K " << x.size(1) << ")";
}

TEST(LinearGemv, MatchesNaiveAtOddSizesRowsAndBias) {
  Generator gen(1);
  const std::vector<std::pair<int64_t, int64_t>> sizes{{1, 1}, {3, 5}, {4, 16}, {7, 17}, {13, 31}, {66, 129}, {130, 515}};
  for (const auto& size : sizes)
    for (int64_t rows = 1; rows <= cpu::kGemvMaxRows; ++rows)
      for (bool with_bias : {false, true}) {
        const int64_t N = size.first, K = size.second;
        const Tensor x = randn({rows, K}, gen), w = randn({N, K}, gen), b = with_bias ? randn({N}, gen) : Tensor();
        ASSERT_TRUE(cpu::gemv_applies(x, w));
        SCOPED_TRACE("N " + std::to_string(N) + " K " + std::to_string(K) + " rows " + std::to_string(rows) +
                     (with_bias ? " with bias" : ""));
        expect_matches_reference(linear(x, w, b), x, w, b);
        // equals the sgemm path (one row more than kGemvMaxRows takes it) within f32 rounding
        const Tensor gemm = cat({x, randn({cpu::kGemvMaxRows + 1 - rows, K}, gen)}, 0);
        EXPECT_TENSOR_CLOSE(linear(x, w, b), narrow(linear(gemm, w, b), 0, 0, rows), 1e-4, 1e-5);
      }
}

TEST(LinearGemv, ThreadCountDoesNotChangeTheBits) {
  Generator gen(2);
  const Tensor x = randn({3, 300}, gen), w = randn({1001, 300}, gen), b = randn({1001}, gen);  // many blocks per thread
  const Tensor one = testing::at_threads(1, [&] { return linear(x, w, b); });
  const Tensor three = testing::at_threads(3, [&] { return linear(x, w, b); });
  EXPECT_TENSOR_CLOSE(one, three, 0.0, 0.0);
  expect_matches_reference(three, x, w, b);
}

TEST(LinearGemv, BatchedInputsAndStridedRows) {
  Generator gen(3);
  const Tensor w = randn({37, 70}, gen), b = randn({37}, gen);
  // (B, T, K) with B * T = 4 rows
  const Tensor x3 = randn({2, 2, 70}, gen);
  expect_matches_reference(linear(x3, w, b), x3.reshape({4, 70}), w, b);
  // rows of a wider matrix: row stride 90, unit stride along K
  const Tensor wide = randn({3, 90}, gen);
  const Tensor rows = narrow(wide, 1, 11, 70);
  ASSERT_FALSE(rows.is_contiguous());
  ASSERT_TRUE(cpu::gemv_applies(rows, w));
  expect_matches_reference(linear(rows, w, b), contiguous(rows), w, b);
  // W rows of a wider matrix too (a slice of a fused projection)
  const Tensor fused = randn({37, 100}, gen);
  const Tensor w_part = narrow(fused, 1, 30, 70);
  ASSERT_TRUE(cpu::gemv_applies(rows, w_part));
  expect_matches_reference(linear(rows, w_part), contiguous(rows), contiguous(w_part), Tensor());
}

TEST(LinearGemv, TransposedOperandsTakeTheGemmPath) {
  Generator gen(4);
  const Tensor xt = randn({33, 2}, gen), wt = randn({33, 9}, gen), b = randn({9}, gen);
  const Tensor x = xt.t(), w = wt.t();  // unit stride along rows, not along K
  EXPECT_FALSE(cpu::gemv_applies(x, contiguous(w)));
  EXPECT_FALSE(cpu::gemv_applies(contiguous(x), w));
  EXPECT_FALSE(cpu::gemv_applies(contiguous(x).to(DType::f64), contiguous(w).to(DType::f64)));
  EXPECT_FALSE(cpu::gemv_applies(randn({cpu::kGemvMaxRows + 1, 33}, gen), contiguous(w)));  // 17 rows: sgemm
  expect_matches_reference(linear(x, w, b), contiguous(x), contiguous(w), b);
}

TEST(LinearGemv, GradientsEqualThoseOfTheGemmPath) {
  Generator gen(5);
  const Tensor x0 = randn({2, 23}, gen), w0 = randn({19, 23}, gen), b0 = randn({19}, gen);
  const Tensor g = randn({2, 19}, gen);
  const auto grads = [&](const Tensor& x, const Tensor& w, const Tensor& b) {
    linear(x, w, b).backward(g);
    return std::vector<Tensor>{x.grad(), w.grad(), b.grad()};
  };
  const std::vector<Tensor> gemv = grads(clone(x0).set_requires_grad(), clone(w0).set_requires_grad(), clone(b0).set_requires_grad());
  // the same product through matmul (sgemm) and add
  const Tensor x = clone(x0).set_requires_grad(), w = clone(w0).set_requires_grad(), b = clone(b0).set_requires_grad();
  (matmul(x, w.t()) + b).backward(g);
  EXPECT_TENSOR_CLOSE(gemv[0], x.grad(), 1e-5, 1e-5);
  EXPECT_TENSOR_CLOSE(gemv[1], w.grad(), 1e-5, 1e-5);
  EXPECT_TENSOR_CLOSE(gemv[2], b.grad(), 1e-5, 1e-5);
}

// q, k and v (or gate and up) of one x in one hand-off: each output the bits linear gives alone, at
// any thread count; with a gradient to record, each is linear's own (and gets its gradient).
TEST(LinearGemv, TogetherEqualsEachAloneBitForBit) {
  Generator gen(9);
  const std::vector<Tensor> weights{randn({136, 96}, gen), randn({4, 96}, gen), randn({67, 96}, gen)};
  const std::vector<Tensor> biases{randn({136}, gen), Tensor(), randn({67}, gen)};
  for (int64_t m : {1, 3, 6, 17, 40}) {  // 17 and 40: past the matrix-vector kernel, each on the GEMM
    const Tensor x = randn({1, m, 96}, gen);
    for (int threads : {1, 2, 3}) {
      // (alone at the same thread count: the GEMM may split its work by the thread count)
      const auto [together, alone] = testing::at_threads(threads, [&] {
        NoGradGuard no_grad;
        std::vector<Tensor> each;
        for (size_t i = 0; i < 3; ++i) each.push_back(linear(x, weights[i], biases[i]));
        return std::pair(linear_together(x, weights, biases), each);
      });
      ASSERT_EQ(together.size(), 3u);
      for (size_t i = 0; i < 3; ++i) {
        EXPECT_EQ(together[i].shape(), (Shape{1, m, weights[i].size(0)}));
        EXPECT_TENSOR_CLOSE(together[i], alone[i], 0.0, 0.0) << "m " << m << " threads " << threads;
      }
    }
  }
  Tensor x = randn({1, 2, 96}, gen);
  x.set_requires_grad();
  const std::vector<Tensor> recorded = linear_together(x, weights, biases);
  sum(recorded[0]).backward();
  ASSERT_TRUE(x.grad().defined());
  EXPECT_TENSOR_CLOSE(x.grad(), sum(weights[0], {0}).reshape({1, 1, 96}).expand({1, 2, 96}), 1e-5, 1e-5);
}

}  // namespace
}  // namespace nf
