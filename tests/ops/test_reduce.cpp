// sum, mean, var, max/min, argmax/argmin and sum_to against naive f64 loops, their gradients
// against finite differences, tie and NaN rules, and their errors.
#include <cmath>
#include <functional>
#include <limits>

#include "support/testing.h"

namespace nf {
namespace {

using testing::random_leaf;
using Slices = std::vector<std::vector<double>>;

// For each output of reducing x over `dims` (empty = all), in the kept dims' row-major order:
// the slice's values in the reduced dims' row-major order.
Slices slices_of(const Tensor& x, const std::vector<int64_t>& dims, Shape& kept, Shape& keepdim) {
  std::vector<bool> reduced(static_cast<size_t>(x.dim()), dims.empty());
  for (int64_t d : dims) reduced[static_cast<size_t>(d < 0 ? d + x.dim() : d)] = true;
  kept.clear();
  keepdim.clear();
  for (int64_t d = 0; d < x.dim(); ++d) {
    keepdim.push_back(reduced[d] ? 1 : x.size(d));
    if (!reduced[d]) kept.push_back(x.size(d));
  }
  Slices out(static_cast<size_t>(shape_numel(kept)));
  std::vector<int64_t> idx(static_cast<size_t>(x.dim()), 0);
  for (int64_t i = 0; i < x.numel(); ++i) {
    int64_t o = 0;
    for (int64_t d = 0; d < x.dim(); ++d) {
      if (!reduced[d]) o = o * x.size(d) + idx[d];
    }
    out[static_cast<size_t>(o)].push_back(x.at(idx));
    for (int64_t d = x.dim(); d-- > 0;) {
      if (++idx[d] < x.size(d)) break;
      idx[d] = 0;
    }
  }
  return out;
}

// Reference reduction in f64: fold(slice) for every output.
Tensor naive_reduce(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim,
                    const std::function<double(const std::vector<double>&)>& fold) {
  Shape kept, kd;
  const Slices s = slices_of(x, dims, kept, kd);
  std::vector<double> values;
  for (const auto& slice : s) values.push_back(fold(slice));
  return Tensor::from_vector(values, keepdim ? kd : kept);
}

double naive_sum(const std::vector<double>& v) {
  double s = 0;
  for (double a : v) s += a;
  return s;
}
double naive_mean(const std::vector<double>& v) { return naive_sum(v) / static_cast<double>(v.size()); }
std::function<double(const std::vector<double>&)> naive_var(int64_t correction) {
  return [correction](const std::vector<double>& v) {
    const double m = naive_mean(v);
    double ss = 0;
    for (double a : v) ss += (a - m) * (a - m);
    return ss / static_cast<double>(static_cast<int64_t>(v.size()) - correction);
  };
}
// index of the first maximum (or minimum) of v
double naive_arg(const std::vector<double>& v, bool is_max) {
  size_t best = 0;
  for (size_t i = 1; i < v.size(); ++i) {
    if (is_max ? v[i] > v[best] : v[i] < v[best]) best = i;
  }
  return static_cast<double>(best);
}

Tensor randn_f32(const Shape& shape, uint64_t seed) {
  Generator gen(seed);
  return randn(shape, gen);
}

// ---- sum ----

TEST(Sum, DimsKeepdimAndAllMatchNaive) {
  Tensor x = randn_f32({3, 4, 5}, 1);
  for (const std::vector<int64_t>& dims : {std::vector<int64_t>{1}, {0, 2}, {-1}, {0}, {}}) {
    for (bool keepdim : {false, true}) {
      EXPECT_TENSOR_CLOSE(sum(x, dims, keepdim), naive_reduce(x, dims, keepdim, naive_sum), 1e-5, 1e-5);
    }
  }
  EXPECT_EQ(sum(x).shape(), Shape{});
  EXPECT_NEAR(sum(x).item(), naive_reduce(x, {}, false, naive_sum).item(), 1e-4);
}

TEST(Sum, BothLoopOrdersOnLargeInputs) {
  // (64, 1024): dim 1 is innermost (each output folds a contiguous run), dim 0 keeps the innermost
  // dim (outputs folded together); both large enough to run on several threads.
  Tensor x = randn_f32({64, 1024}, 2);
  EXPECT_TENSOR_CLOSE(sum(x, {1}), naive_reduce(x, {1}, false, naive_sum), 1e-4, 1e-5);
  EXPECT_TENSOR_CLOSE(sum(x, {0}), naive_reduce(x, {0}, false, naive_sum), 1e-4, 1e-5);
  EXPECT_TENSOR_CLOSE(sum(x, {0}, true), naive_reduce(x, {0}, true, naive_sum), 1e-4, 1e-5);
}

TEST(Sum, NonContiguousInputs) {
  Tensor base = randn_f32({4, 6, 5}, 3);
  Tensor permuted = base.permute({2, 0, 1});  // (5, 4, 6), innermost stride 5
  Tensor sliced = base.slice(1, 1, 6, 2);     // (4, 3, 5), stepped
  ASSERT_FALSE(permuted.is_contiguous());
  ASSERT_FALSE(sliced.is_contiguous());
  for (const std::vector<int64_t>& dims : {std::vector<int64_t>{2}, {0}, {0, 2}, {}}) {
    EXPECT_TENSOR_CLOSE(sum(permuted, dims), naive_reduce(permuted, dims, false, naive_sum), 1e-5, 1e-5);
    EXPECT_TENSOR_CLOSE(sum(sliced, dims, true), naive_reduce(sliced, dims, true, naive_sum), 1e-5, 1e-5);
  }
  // a broadcast view (stride 0) folds each repeated element
  Tensor row = Tensor::of({1, 2, 3}, {1, 3}).expand({4, 3});
  EXPECT_TENSOR_CLOSE(sum(row, {0}), Tensor::of({4, 8, 12}, {3}));
}

TEST(Sum, IntegersAccumulateExactly) {
  Tensor x = Tensor::of({1, 2, 3, 4, 5, 6}, {2, 3}, DType::i64);
  Tensor s = sum(x, {1});
  EXPECT_EQ(s.dtype(), DType::i64);
  EXPECT_EQ(s.to_vector<int64_t>(), (std::vector<int64_t>{6, 15}));
  EXPECT_EQ(sum(Tensor::of({2e9, 2e9}, {2}, DType::i64)).item(), 4e9);
}

TEST(Sum, ZeroDimAndEmpty) {
  Tensor s = Tensor::scalar(3.5);
  EXPECT_EQ(sum(s, {0}).item(), 3.5);
  EXPECT_EQ(sum(s, {-1}, true).shape(), Shape{});
  EXPECT_EQ(sum(zeros({0, 3}), {0}).to_vector<double>(), (std::vector<double>{0, 0, 0}));
  // reducing the non-empty dim of an empty tensor visits nothing (UBSan once caught a division by
  // the zero-size dim while the kernel located its first element)
  EXPECT_EQ(sum(zeros({0, 8}), {1}).shape(), Shape{0});
  EXPECT_EQ(sum(zeros({4, 0, 8}), {0, 2}).shape(), Shape{0});
  EXPECT_EQ(sum(zeros({0, 8})).item(), 0.0);
}

TEST(Sum, Gradients) {
  Tensor x = random_leaf({3, 4, 5}, 4);
  EXPECT_GRAD_OK([](const std::vector<Tensor>& in) { return sum(in[0], {1}); }, {x});
  EXPECT_GRAD_OK([](const std::vector<Tensor>& in) { return sum(in[0], {0, 2}, true); }, {x});
  EXPECT_GRAD_OK([](const std::vector<Tensor>& in) { return sum(in[0].transpose(0, 2), {0}); }, {x});
  EXPECT_GRAD_OK([](const std::vector<Tensor>& in) { return sum(in[0]); }, {x});
}

TEST(SumTo, ReducesBroadcastDims) {
  Tensor x = randn_f32({2, 3, 4}, 5);
  EXPECT_TENSOR_CLOSE(sum_to(x, {3, 1}), naive_reduce(x, {0, 2}, true, naive_sum).reshape({3, 1}), 1e-5, 1e-5);
  EXPECT_TENSOR_CLOSE(sum_to(x, {4}), naive_reduce(x, {0, 1}, false, naive_sum), 1e-5, 1e-5);
  EXPECT_TENSOR_CLOSE(sum_to(x, {1, 1, 1}), naive_reduce(x, {}, true, naive_sum), 1e-5, 1e-5);
  EXPECT_TRUE(sum_to(x, {2, 3, 4}).shares_storage_with(x));
  Tensor g = random_leaf({2, 3, 4}, 6);
  EXPECT_GRAD_OK([](const std::vector<Tensor>& in) { return sum_to(in[0], {3, 1}); }, {g});
  EXPECT_GRAD_OK([](const std::vector<Tensor>& in) { return sum_to(in[0].transpose(1, 2), {1, 3}); }, {g});
}

// ---- mean ----

TEST(Mean, MatchesNaive) {
  Tensor x = randn_f32({3, 4, 5}, 7);
  for (const std::vector<int64_t>& dims : {std::vector<int64_t>{1}, {0, 2}, {2}, {}}) {
    for (bool keepdim : {false, true}) {
      EXPECT_TENSOR_CLOSE(mean(x, dims, keepdim), naive_reduce(x, dims, keepdim, naive_mean), 1e-6, 1e-5);
    }
  }
  Tensor t = x.permute({1, 2, 0});
  EXPECT_TENSOR_CLOSE(mean(t, {2}), naive_reduce(t, {2}, false, naive_mean), 1e-6, 1e-5);
  EXPECT_NEAR(mean(x).item(), naive_reduce(x, {}, false, naive_mean).item(), 1e-6);
  Tensor big = randn_f32({48, 1000}, 8);
  EXPECT_TENSOR_CLOSE(mean(big, {0}), naive_reduce(big, {0}, false, naive_mean), 1e-6, 1e-5);
}

TEST(Mean, OfNothingIsNaN) {
  EXPECT_TRUE(std::isnan(mean(zeros({0})).item()));
  EXPECT_TRUE(std::isnan(mean(zeros({2, 0}), {1}).at({1})));
}

TEST(Mean, Gradients) {
  Tensor x = random_leaf({3, 4, 5}, 9);
  EXPECT_GRAD_OK([](const std::vector<Tensor>& in) { return mean(in[0], {2}); }, {x});
  EXPECT_GRAD_OK([](const std::vector<Tensor>& in) { return mean(in[0], {0, 1}, true); }, {x});
  EXPECT_GRAD_OK([](const std::vector<Tensor>& in) { return mean(in[0].permute({2, 0, 1}), {0}); }, {x});
  EXPECT_GRAD_OK([](const std::vector<Tensor>& in) { return mean(in[0]); }, {x});
}

// ---- var ----

TEST(Var, MatchesNaiveForEachCorrection) {
  Tensor x = randn_f32({3, 4, 5}, 10);
  for (int64_t correction : {0, 1, 2}) {
    for (const std::vector<int64_t>& dims : {std::vector<int64_t>{1}, {0, 2}, {2}, {}}) {
      for (bool keepdim : {false, true}) {
        EXPECT_TENSOR_CLOSE(var(x, dims, correction, keepdim), naive_reduce(x, dims, keepdim, naive_var(correction)),
                            1e-6, 1e-5);
      }
    }
  }
  Tensor t = x.transpose(0, 2);
  EXPECT_TENSOR_CLOSE(var(t, {0}), naive_reduce(t, {0}, false, naive_var(1)), 1e-6, 1e-5);
}

TEST(Var, LargeMeanDoesNotCancel) {
  // f32 values 1e4 + small noise: a sum-of-squares formula in f32 would lose every digit
  Tensor noise = randn_f32({4, 512}, 11);
  Tensor x = noise + 1e4;
  EXPECT_TENSOR_CLOSE(var(x, {1}), naive_reduce(x, {1}, false, naive_var(1)), 1e-6, 1e-5);
  EXPECT_TENSOR_CLOSE(var(x, {0}), naive_reduce(x, {0}, false, naive_var(1)), 1e-6, 1e-5);
}

TEST(Var, TooFewElementsGiveNaNOrInf) {
  // N - correction = 0 with zero spread: 0 / 0 (PyTorch returns nan with a warning)
  EXPECT_TRUE(std::isnan(var(Tensor::of({3}, {1}), {0}).item()));
  EXPECT_TRUE(std::isinf(var(Tensor::of({1, 2}, {2}), {0}, 2).item()));
}

TEST(Var, Gradients) {
  Tensor x = random_leaf({3, 4, 5}, 12);
  EXPECT_GRAD_OK([](const std::vector<Tensor>& in) { return var(in[0], {1}); }, {x});
  EXPECT_GRAD_OK([](const std::vector<Tensor>& in) { return var(in[0], {0, 2}, 0, true); }, {x});
  EXPECT_GRAD_OK([](const std::vector<Tensor>& in) { return var(in[0].transpose(1, 2), {1}, 2); }, {x});
  EXPECT_GRAD_OK([](const std::vector<Tensor>& in) { return var(in[0], {}); }, {x});
}

// ---- max / min / argmax / argmin ----

TEST(MaxMin, AlongDimMatchNaive) {
  Tensor x = randn_f32({3, 4, 5}, 13);
  auto fmax = [](const std::vector<double>& v) { return v[static_cast<size_t>(naive_arg(v, true))]; };
  auto fmin = [](const std::vector<double>& v) { return v[static_cast<size_t>(naive_arg(v, false))]; };
  for (int64_t dim : {0, 1, 2, -1}) {
    for (bool keepdim : {false, true}) {
      EXPECT_TENSOR_CLOSE(max(x, dim, keepdim), naive_reduce(x, {dim}, keepdim, fmax), 0, 0);
      EXPECT_TENSOR_CLOSE(min(x, dim, keepdim), naive_reduce(x, {dim}, keepdim, fmin), 0, 0);
      Tensor am = argmax(x, dim, keepdim), an = argmin(x, dim, keepdim);
      EXPECT_EQ(am.dtype(), DType::i64);
      EXPECT_TENSOR_CLOSE(am, naive_reduce(x, {dim}, keepdim, [](const auto& v) { return naive_arg(v, true); }), 0, 0);
      EXPECT_TENSOR_CLOSE(an, naive_reduce(x, {dim}, keepdim, [](const auto& v) { return naive_arg(v, false); }), 0, 0);
    }
  }
  Tensor t = x.permute({2, 0, 1});
  EXPECT_TENSOR_CLOSE(max(t, 2), naive_reduce(t, {2}, false, fmax), 0, 0);
  EXPECT_TENSOR_CLOSE(argmin(t, 0), naive_reduce(t, {0}, false, [](const auto& v) { return naive_arg(v, false); }), 0, 0);
  EXPECT_EQ(max(x).item(), naive_reduce(x, {}, false, fmax).item());
  EXPECT_EQ(min(x).item(), naive_reduce(x, {}, false, fmin).item());
}

TEST(MaxMin, IntegersAndLargeInputs) {
  Tensor i = Tensor::of({4, -2, 7, 7, 0, -9}, {2, 3}, DType::i32);
  EXPECT_EQ(max(i, 1).to_vector<int32_t>(), (std::vector<int32_t>{7, 7}));
  EXPECT_EQ(argmax(i, 1).to_vector<int64_t>(), (std::vector<int64_t>{2, 0}));
  EXPECT_EQ(min(i).item(), -9);
  Tensor big = randn_f32({40, 2000}, 14);
  EXPECT_TENSOR_CLOSE(argmax(big, 0), naive_reduce(big, {0}, false, [](const auto& v) { return naive_arg(v, true); }), 0, 0);
  EXPECT_TENSOR_CLOSE(argmin(big, 1), naive_reduce(big, {1}, false, [](const auto& v) { return naive_arg(v, false); }), 0, 0);
}

TEST(MaxMin, TiesPickTheFirstIndexAndItGetsTheGradient) {
  Tensor x = Tensor::of({1, 3, 3, 2, 2, 1}, {2, 3}, DType::f64).set_requires_grad(true);
  EXPECT_EQ(argmax(x, 1).to_vector<int64_t>(), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(argmin(x, 1).to_vector<int64_t>(), (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(argmax(x, 0).to_vector<int64_t>(), (std::vector<int64_t>{1, 0, 0}));
  max(x, 1).backward(Tensor::of({10, 20}, {2}, DType::f64));
  EXPECT_TENSOR_CLOSE(x.grad(), Tensor::of({0, 10, 0, 20, 0, 0}, {2, 3}, DType::f64), 0, 0);
  x.zero_grad();
  min(x, 0, true).backward(Tensor::of({1, 2, 3}, {1, 3}, DType::f64));
  EXPECT_TENSOR_CLOSE(x.grad(), Tensor::of({1, 0, 0, 0, 2, 3}, {2, 3}, DType::f64), 0, 0);
}

TEST(MaxMin, OverAllElementsShareTheGradientAmongTies) {
  // as PyTorch's max(): every element equal to the result gets g / ties
  Tensor x = Tensor::of({1, 5, 5, 2, 5, 0}, {2, 3}, DType::f64).set_requires_grad(true);
  max(x).backward(Tensor::scalar(6, DType::f64));
  EXPECT_TENSOR_CLOSE(x.grad(), Tensor::of({0, 2, 2, 0, 2, 0}, {2, 3}, DType::f64), 0, 0);
  x.zero_grad();
  min(x).backward(Tensor::scalar(3, DType::f64));
  EXPECT_TENSOR_CLOSE(x.grad(), Tensor::of({0, 0, 0, 0, 0, 3}, {2, 3}, DType::f64), 0, 0);
}

TEST(MaxMin, NaNIsTheExtremum) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Tensor x = Tensor::of({1, nan, 3, nan, 2, 0}, {2, 3});
  EXPECT_EQ(argmax(x, 1).to_vector<int64_t>(), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(argmin(x, 1).to_vector<int64_t>(), (std::vector<int64_t>{1, 0}));
  EXPECT_TRUE(std::isnan(max(x, 1).at({0})));
  EXPECT_TRUE(std::isnan(min(x).item()));
  // the gradient of max() over all goes to the NaNs
  Tensor y = Tensor::of({nan, 1, nan}, {3}, DType::f64).set_requires_grad(true);
  max(y).backward();
  EXPECT_TENSOR_CLOSE(y.grad(), Tensor::of({0.5, 0, 0.5}, {3}, DType::f64), 0, 0);
}

TEST(MaxMin, Gradients) {
  Tensor x = random_leaf({3, 4, 5}, 15);
  EXPECT_GRAD_OK([](const std::vector<Tensor>& in) { return max(in[0], 1); }, {x});
  EXPECT_GRAD_OK([](const std::vector<Tensor>& in) { return min(in[0], -1, true); }, {x});
  EXPECT_GRAD_OK([](const std::vector<Tensor>& in) { return max(in[0].transpose(0, 2), 0, true); }, {x});
  EXPECT_GRAD_OK([](const std::vector<Tensor>& in) { return min(in[0].slice(1, 0, 4, 2), 1); }, {x});
  EXPECT_GRAD_OK([](const std::vector<Tensor>& in) { return max(in[0]); }, {x});
  EXPECT_GRAD_OK([](const std::vector<Tensor>& in) { return min(in[0].transpose(0, 1)); }, {x});
}

TEST(ArgMax, IsNotDifferentiable) {
  Tensor x = random_leaf({3, 4}, 16);
  Tensor a = argmax(x, 1);
  EXPECT_FALSE(a.requires_grad());
  EXPECT_EQ(argmin(x, 0, true).shape(), (Shape{1, 4}));
}

// ---- errors ----

TEST(Reduce, ErrorsNameOpShapeAndDim) {
  Tensor x = zeros({2, 3});
  EXPECT_THROW_WITH(sum(x, {2}), "sum", "dim 2", "(2, 3)");
  EXPECT_THROW_WITH(sum(x, {1, -1}), "sum", "repeated", "(1, -1)");
  EXPECT_THROW_WITH(mean(x, {-3}), "mean", "dim -3", "(2, 3)");
  EXPECT_THROW_WITH(mean(zeros({2, 3}, DType::i64)), "mean", "i64", "(2, 3)");
  EXPECT_THROW_WITH(var(x, {5}), "var", "dim 5", "(2, 3)");
  EXPECT_THROW_WITH(var(x, {0}, -1), "var", "correction", "(2, 3)");
  EXPECT_THROW_WITH(max(x, 2), "max", "dim 2", "(2, 3)");
  EXPECT_THROW_WITH(argmin(x, -3), "argmin", "dim -3", "(2, 3)");
  EXPECT_THROW_WITH(max(zeros({2, 0}), 1), "max", "dim 1", "(2, 0)");
  EXPECT_THROW_WITH(min(zeros({0, 3})), "min", "empty", "(0, 3)");
  EXPECT_THROW_WITH(argmax(zeros({2, 3}, DType::boolean), 0), "argmax", "bool", "(2, 3)");
  EXPECT_THROW_WITH(sum_to(x, {4, 3}), "sum_to", "(2, 3)", "(4, 3)");
  EXPECT_THROW_WITH(sum_to(x, {1, 2, 3, 1}), "sum_to", "(2, 3)", "(1, 2, 3, 1)");
}

}  // namespace
}  // namespace nf
