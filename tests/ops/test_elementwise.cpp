// Broadcasting binary arithmetic (add, sub, mul, div, pow, maximum, minimum) and the in-place
// updates (fill_, add_, mul_): forward against naive f64 loops over broadcast indices, gradients
// against finite differences, and errors. (Comparisons and selection: test_elementwise_select.cpp;
// unary ops and activations: test_activations.cpp.)
#include <cmath>
#include <functional>
#include <limits>

#include "ops/naive_elementwise.h"
#include "support/testing.h"

namespace nf {
namespace {

using namespace nf::testing;
using TensorFn2 = std::function<Tensor(const Tensor&, const Tensor&)>;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// ---- add, sub, mul, div ----

struct ArithCase {
  const char* name;
  TensorFn2 op;
  Fn2 ref;
};
const std::vector<ArithCase> kArith = {
    {"add", [](const Tensor& a, const Tensor& b) { return add(a, b); }, [](double x, double y) { return x + y; }},
    {"sub", [](const Tensor& a, const Tensor& b) { return sub(a, b); }, [](double x, double y) { return x - y; }},
    {"mul", [](const Tensor& a, const Tensor& b) { return mul(a, b); }, [](double x, double y) { return x * y; }},
    {"div", [](const Tensor& a, const Tensor& b) { return div(a, b); }, [](double x, double y) { return x / y; }},
};

// Operand shape pairs: equal, one side broadcast, both sides broadcast, scalar, rank-expanding.
const std::vector<std::pair<Shape, Shape>> kBroadcastPairs = {
    {{2, 3}, {2, 3}}, {{3, 1}, {1, 4}}, {{2, 3, 4}, {4}}, {{2, 1, 4}, {3, 1}}, {{2, 3}, {}}, {{}, {2, 3}}};

TEST(Arith, BroadcastForwardMatchesNaiveInF64AndF32) {
  uint64_t seed = 1;
  for (const ArithCase& c : kArith) {
    for (const auto& [sa, sb] : kBroadcastPairs) {
      const Tensor a = randn_f64(sa, seed++), b = randn_f64(sb, seed++);
      const Tensor ref = naive_binary(a, b, c.ref);
      SCOPED_TRACE(std::string(c.name) + " " + shape_str(sa) + " " + shape_str(sb));
      EXPECT_TENSOR_CLOSE(c.op(a, b), ref, 0.0, 1e-15);
      // one f32 rounding of the exact f64 result of the f32 inputs
      const Tensor a32 = a.to(DType::f32), b32 = b.to(DType::f32);
      EXPECT_TENSOR_CLOSE(c.op(a32, b32), naive_binary(a32, b32, c.ref), 0.0, 6e-8);
    }
  }
}

TEST(Arith, NonContiguousOperands) {
  const Tensor at = randn_f64({4, 3}, 10), b = randn_f64({3, 4}, 11);
  const Tensor a = at.t();                            // (3, 4), strides (1, 3)
  const Tensor c = randn_f64({3, 8}, 12).slice(1, 0, 8, 2);  // (3, 4), strides (8, 2)
  ASSERT_FALSE(a.is_contiguous());
  for (const ArithCase& op : kArith) {
    EXPECT_TENSOR_CLOSE(op.op(a, b), naive_binary(a, b, op.ref), 0.0, 1e-15) << op.name;
    EXPECT_TENSOR_CLOSE(op.op(a, c), naive_binary(a, c, op.ref), 0.0, 1e-15) << op.name;
  }
}

TEST(Arith, IntegerAddSubMulAreExact) {
  const Tensor a = Tensor::of({1, -2, 3, 40000, -5, 6}, {2, 3}, DType::i32);
  const Tensor b = Tensor::of({7, -8, 50000}, {3}, DType::i32);
  EXPECT_EQ(add(a, b).dtype(), DType::i32);
  EXPECT_EQ(add(a, b).to_vector<int32_t>(), (std::vector<int32_t>{8, -10, 50003, 40007, -13, 50006}));
  EXPECT_EQ(sub(a, b).to_vector<int32_t>(), (std::vector<int32_t>{-6, 6, -49997, 39993, 3, -49994}));
  EXPECT_EQ(mul(a.to(DType::i64), b.to(DType::i64)).to_vector<int64_t>(),
            (std::vector<int64_t>{7, 16, 150000, 280000, 40, 300000}));
}

TEST(Arith, ScalarOperandsAndOperators) {
  const Tensor a = randn_f64({2, 3}, 20);
  auto with = [&](const Fn2& f) { return naive_binary(a, Tensor::scalar(2.5, DType::f64), f); };
  auto before = [&](const Fn2& f) { return naive_binary(Tensor::scalar(2.5, DType::f64), a, f); };
  EXPECT_TENSOR_CLOSE(add(a, 2.5), with([](double x, double y) { return x + y; }), 0.0, 1e-15);
  EXPECT_TENSOR_CLOSE(sub(a, 2.5), with([](double x, double y) { return x - y; }), 0.0, 1e-15);
  EXPECT_TENSOR_CLOSE(sub(2.5, a), before([](double x, double y) { return x - y; }), 0.0, 1e-15);
  EXPECT_TENSOR_CLOSE(mul(a, 2.5), with([](double x, double y) { return x * y; }), 0.0, 1e-15);
  EXPECT_TENSOR_CLOSE(div(a, 2.5), with([](double x, double y) { return x / y; }), 0.0, 1e-15);
  EXPECT_TENSOR_CLOSE(div(2.5, a), before([](double x, double y) { return x / y; }), 0.0, 1e-15);
  EXPECT_TENSOR_CLOSE(2.5 + a, add(a, 2.5), 0.0, 0.0);
  EXPECT_TENSOR_CLOSE(2.5 - a, sub(2.5, a), 0.0, 0.0);
  EXPECT_TENSOR_CLOSE(a * 2.5, 2.5 * a, 0.0, 0.0);
  EXPECT_TENSOR_CLOSE(2.5 / a, div(2.5, a), 0.0, 0.0);
  EXPECT_TENSOR_CLOSE(-a, mul(a, -1.0), 0.0, 0.0);
  EXPECT_EQ(add(a.to(DType::f32), 2.5).dtype(), DType::f32);
}

TEST(Arith, GradientsWithBroadcasting) {
  for (const ArithCase& c : kArith) {
    SCOPED_TRACE(c.name);
    auto f = [&c](const std::vector<Tensor>& in) { return c.op(in[0], in[1]); };
    // div's denominator stays away from 0
    auto leaf_b = [&](const Shape& s, uint64_t seed) { return random_leaf(s, seed, 0.5, 2.0); };
    EXPECT_GRAD_OK(f, {random_leaf({2, 3}, 30), leaf_b({2, 3}, 31)});
    EXPECT_GRAD_OK(f, {random_leaf({3, 1}, 32), leaf_b({1, 4}, 33)});  // both operands broadcast
    EXPECT_GRAD_OK(f, {random_leaf({2, 3, 4}, 34), leaf_b({4}, 35)});
    EXPECT_GRAD_OK(f, {random_leaf({4}, 36), leaf_b({2, 3, 1}, 37)});
    EXPECT_GRAD_OK(f, {random_leaf({}, 38), leaf_b({2, 3}, 39)});
    // non-contiguous operands: a transposed view and a strided slice
    EXPECT_GRAD_OK([&c](const std::vector<Tensor>& in) { return c.op(in[0].t(), in[1].slice(1, 0, 8, 2)); },
                   {random_leaf({4, 3}, 40), leaf_b({3, 8}, 41)});
  }
}

TEST(Arith, ScalarOperandGradients) {
  const Tensor x = random_leaf({2, 3}, 50, 0.5, 2.0);
  EXPECT_GRAD_OK([](const std::vector<Tensor>& in) { return add(in[0], 1.5); }, {x});
  EXPECT_GRAD_OK([](const std::vector<Tensor>& in) { return sub(1.5, in[0]); }, {x});
  EXPECT_GRAD_OK([](const std::vector<Tensor>& in) { return mul(in[0], -3.0); }, {x});
  EXPECT_GRAD_OK([](const std::vector<Tensor>& in) { return div(in[0], 4.0); }, {x});
  EXPECT_GRAD_OK([](const std::vector<Tensor>& in) { return div(2.0, in[0]); }, {x});
}

TEST(Arith, OnlyRequestedGradientsAreComputed) {
  Tensor a = random_leaf({2, 3}, 55);
  Tensor b = randn_f64({3}, 56);  // constant
  sum(mul(a, b)).backward();
  ASSERT_TRUE(a.grad().defined());
  EXPECT_FALSE(b.grad().defined());
  EXPECT_TENSOR_CLOSE(a.grad(), naive_binary(ones({2, 3}, DType::f64), b, [](double, double y) { return y; }), 0.0, 0.0);
}

TEST(Arith, ErrorsNameOpShapesAndDtypes) {
  EXPECT_THROW_WITH(add(zeros({2, 3}), zeros({4, 5})), "add", "(2, 3)", "(4, 5)");
  EXPECT_THROW_WITH(sub(zeros({2, 3}), zeros({4, 5})), "sub", "(2, 3)", "(4, 5)");
  EXPECT_THROW_WITH(mul(zeros({2, 3}), zeros({2, 3}, DType::f64)), "mul", "f32", "f64", "(2, 3)");
  EXPECT_THROW_WITH(div(zeros({2, 3}, DType::i32), zeros({2, 3}, DType::i32)), "div", "i32");
  EXPECT_THROW_WITH(add(zeros({2}, DType::boolean), zeros({2}, DType::boolean)), "add", "bool");
}

// ---- pow ----

TEST(Pow, TensorExponentBroadcastMatchesStdPow) {
  Generator gen(60);
  const Tensor a = uniform({2, 3, 4}, 0.1, 3.0, gen, DType::f64), b = uniform({3, 1}, -2.0, 2.0, gen, DType::f64);
  const Fn2 ref = [](double x, double y) { return std::pow(x, y); };
  EXPECT_TENSOR_CLOSE(pow(a, b), naive_binary(a, b, ref), 0.0, 1e-15);
  const Tensor a32 = a.to(DType::f32), b32 = b.to(DType::f32);
  EXPECT_TENSOR_CLOSE(pow(a32, b32), naive_binary(a32, b32, ref), 0.0, 2e-7);  // powf: < 1 ulp
  // negative bases with integer exponents are fine; with fractional ones the result is NaN
  const Tensor neg_base = Tensor::of({-2, -2, -8}, {3}, DType::f64), exps = Tensor::of({3, 2, 0.5}, {3}, DType::f64);
  const std::vector<double> p = pow(neg_base, exps).to_vector<double>();
  EXPECT_EQ(p[0], -8.0);
  EXPECT_EQ(p[1], 4.0);
  EXPECT_TRUE(std::isnan(p[2]));
}

TEST(Pow, ScalarExponentsIncludingSpecialCases) {
  Generator gen(61);
  const Tensor x = uniform({5, 7}, 0.2, 3.0, gen, DType::f64);
  const Tensor xt = x.t();  // non-contiguous input
  for (double e : {2.0, 3.0, 0.5, -0.5, -1.0, -2.0, 1.0, 0.0, 1.7, -2.3}) {
    SCOPED_TRACE(e);
    const Fn2 ref = [e](double v, double) { return std::pow(v, e); };
    EXPECT_TENSOR_CLOSE(pow(xt, e), naive_binary(xt, Tensor::scalar(0.0, DType::f64), ref), 0.0, 4e-16);
    const Tensor x32 = xt.to(DType::f32);
    EXPECT_TENSOR_CLOSE(pow(x32, e), naive_binary(x32, Tensor::scalar(0.0, DType::f64), ref), 0.0, 2.5e-7);
  }
}

TEST(Pow, Gradients) {
  auto f = [](const std::vector<Tensor>& in) { return pow(in[0], in[1]); };
  EXPECT_GRAD_OK(f, {random_leaf({2, 3}, 62, 0.5, 2.0), random_leaf({2, 3}, 63, -2.0, 2.0)});
  EXPECT_GRAD_OK(f, {random_leaf({3, 1}, 64, 0.5, 2.0), random_leaf({1, 4}, 65, -2.0, 2.0)});
  EXPECT_GRAD_OK([](const std::vector<Tensor>& in) { return pow(in[0].t(), in[1]); },
                 {random_leaf({4, 3}, 66, 0.5, 2.0), random_leaf({}, 67, -2.0, 2.0)});
  for (double e : {2.0, 3.0, 0.5, -0.5, -1.0, -2.0, 1.0, 0.0, 1.7}) {
    SCOPED_TRACE(e);
    EXPECT_GRAD_OK([e](const std::vector<Tensor>& in) { return pow(in[0].t(), e); }, {random_leaf({3, 2}, 68, 0.5, 2.0)});
  }
}

TEST(Pow, GradientConventionsAtZeroMatchPyTorch) {
  // d/da a^b at b = 0 is 0 even at a = 0 (not 0 * 0^-1); d/db a^b at a = 0, b >= 0 is 0 (not 0 * ln 0)
  Tensor a = Tensor::of({0, 0, 0, 2}, {4}, DType::f64).set_requires_grad();
  Tensor b = Tensor::of({0, 2, 0.5, 3}, {4}, DType::f64).set_requires_grad();
  sum(pow(a, b)).backward();
  EXPECT_EQ(a.grad().to_vector<double>(), (std::vector<double>{0, 0, INFINITY, 12}));
  const std::vector<double> db = b.grad().to_vector<double>();
  EXPECT_EQ(db[0], 0.0);
  EXPECT_EQ(db[1], 0.0);
  EXPECT_EQ(db[2], 0.0);
  EXPECT_NEAR(db[3], 8 * std::log(2.0), 1e-15);
  Tensor x = Tensor::of({0, 3}, {2}, DType::f64).set_requires_grad();
  sum(pow(x, 0.0)).backward();
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{0, 0}));
}

TEST(Pow, ErrorsNameOpShapesAndDtypes) {
  EXPECT_THROW_WITH(pow(zeros({2, 3}), zeros({4, 5})), "pow", "(2, 3)", "(4, 5)");
  EXPECT_THROW_WITH(pow(zeros({2, 3}), zeros({2, 3}, DType::f64)), "pow", "f32", "f64");
  EXPECT_THROW_WITH(pow(zeros({2, 3}, DType::i64), 2.0), "pow", "i64", "(2, 3)");
}

// ---- maximum, minimum ----

TEST(MaximumMinimum, ForwardBroadcastAndNaN) {
  const Tensor a = randn_f64({2, 3, 4}, 70), b = randn_f64({3, 1}, 71);
  EXPECT_TENSOR_CLOSE(maximum(a, b), naive_binary(a, b, [](double x, double y) { return x > y ? x : y; }), 0.0, 0.0);
  EXPECT_TENSOR_CLOSE(minimum(a, b), naive_binary(a, b, [](double x, double y) { return x < y ? x : y; }), 0.0, 0.0);
  // NaN on either side propagates (as PyTorch)
  const Tensor p = Tensor::of({kNaN, 1, 2}, {3}), q = Tensor::of({0, kNaN, 1}, {3});
  const std::vector<float> mx = maximum(p, q).to_vector<float>(), mn = minimum(p, q).to_vector<float>();
  EXPECT_TRUE(std::isnan(mx[0]) && std::isnan(mx[1]) && std::isnan(mn[0]) && std::isnan(mn[1]));
  EXPECT_EQ(mx[2], 2.0f);
  EXPECT_EQ(mn[2], 1.0f);
  const Tensor i = Tensor::of({1, 5, -3}, {3}, DType::i64), j = Tensor::of({2, 4, -3}, {3}, DType::i64);
  EXPECT_EQ(maximum(i, j).to_vector<int64_t>(), (std::vector<int64_t>{2, 5, -3}));
  EXPECT_EQ(minimum(i, j).to_vector<int64_t>(), (std::vector<int64_t>{1, 4, -3}));
}

TEST(MaximumMinimum, Gradients) {
  for (const auto& [sa, sb] : kBroadcastPairs) {
    SCOPED_TRACE(shape_str(sa) + " " + shape_str(sb));
    EXPECT_GRAD_OK([](const std::vector<Tensor>& in) { return maximum(in[0], in[1]); }, {random_leaf(sa, 72), random_leaf(sb, 73)});
    EXPECT_GRAD_OK([](const std::vector<Tensor>& in) { return minimum(in[0], in[1]); }, {random_leaf(sa, 74), random_leaf(sb, 75)});
  }
  EXPECT_GRAD_OK([](const std::vector<Tensor>& in) { return maximum(in[0].t(), in[1]); }, {random_leaf({4, 3}, 76), random_leaf({3, 4}, 77)});
}

TEST(MaximumMinimum, TiesSplitTheGradientInHalves) {
  // PyTorch: where(a == b, g / 2, g) masked to 0 where the operand loses
  Tensor a = Tensor::of({1, 2, 3}, {3}, DType::f64).set_requires_grad();
  Tensor b = Tensor::of({1, 3, 2}, {3}, DType::f64).set_requires_grad();
  sum(maximum(a, b)).backward();
  EXPECT_EQ(a.grad().to_vector<double>(), (std::vector<double>{0.5, 0, 1}));
  EXPECT_EQ(b.grad().to_vector<double>(), (std::vector<double>{0.5, 1, 0}));
  a.zero_grad();
  b.zero_grad();
  sum(minimum(a, b)).backward();
  EXPECT_EQ(a.grad().to_vector<double>(), (std::vector<double>{0.5, 1, 0}));
  EXPECT_EQ(b.grad().to_vector<double>(), (std::vector<double>{0.5, 0, 1}));
  // a broadcast operand collects its halves from every tie: x = 2 ties with two of y's entries
  Tensor x = Tensor::of({2}, {1}, DType::f64).set_requires_grad();
  Tensor y = Tensor::of({2, 1, 2, 3}, {4}, DType::f64).set_requires_grad();
  sum(maximum(x, y)).backward();
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{2.0}));  // 0.5 + 1 + 0.5 + 0
  EXPECT_EQ(y.grad().to_vector<double>(), (std::vector<double>{0.5, 0, 0.5, 1}));
}

TEST(MaximumMinimum, ErrorsNameOpAndShapes) {
  EXPECT_THROW_WITH(maximum(zeros({2, 3}), zeros({4, 5})), "maximum", "(2, 3)", "(4, 5)");
  EXPECT_THROW_WITH(minimum(zeros({2, 3}), zeros({4, 5})), "minimum", "(2, 3)", "(4, 5)");
  EXPECT_THROW_WITH(minimum(zeros({2}), zeros({2}, DType::i32)), "minimum", "f32", "i32");
}

// ---- in place ----

TEST(InPlace, FillAddMulValues) {
  const Tensor x = randn_f64({2, 3}, 80);
  const Tensor before = x.clone();
  mul_(x, 3.0);
  EXPECT_TENSOR_CLOSE(x, naive_binary(before, Tensor::scalar(3.0, DType::f64), [](double v, double s) { return v * s; }), 0.0, 0.0);
  const Tensor y = randn_f64({3}, 81);  // broadcast over x's rows
  const Tensor scaled = x.clone();
  add_(x, y, -0.5);
  EXPECT_TENSOR_CLOSE(x, naive_binary(scaled, y, [](double v, double w) { return v - 0.5 * w; }), 0.0, 1e-15);
  add_(x, y);
  EXPECT_TENSOR_CLOSE(x, naive_binary(scaled, y, [](double v, double w) { return v - 0.5 * w + w; }), 1e-15, 1e-15);
  fill_(x, 7.0);
  EXPECT_EQ(x.to_vector<double>(), std::vector<double>(6, 7.0));
  const Tensor i = Tensor::of({1, 2, 3}, {3}, DType::i64);
  add_(i, Tensor::of({10, 20, 30}, {3}, DType::i64));
  mul_(i, 2.0);
  EXPECT_EQ(i.to_vector<int64_t>(), (std::vector<int64_t>{22, 44, 66}));
}

TEST(InPlace, WritesThroughNonContiguousViews) {
  const Tensor base = zeros({3, 4}, DType::f64);
  const Tensor col = base.t().select(0, 1);  // column 1: stride 4
  fill_(col, 2.0);
  add_(col, Tensor::of({1, 2, 3}, {3}, DType::f64));
  mul_(base.slice(1, 0, 4, 2), 10.0);  // columns 0 and 2 stay 0
  for (int64_t r = 0; r < 3; ++r) {
    for (int64_t c = 0; c < 4; ++c) EXPECT_EQ(base.at({r, c}), c == 1 ? 3.0 + static_cast<double>(r) : 0.0) << r << "," << c;
  }
}

TEST(InPlace, RefuseTensorsRequiringGradUnlessGradModeIsOff) {
  Tensor w = random_leaf({2, 2}, 82);
  w.set_name("layers.0.weight");
  EXPECT_THROW_WITH(fill_(w, 0.0), "fill_", "requires grad", "NoGradGuard");
  EXPECT_THROW_WITH(mul_(w, 2.0), "mul_", "requires grad", "layers.0.weight");
  EXPECT_THROW_WITH(add_(w, ones({2, 2}, DType::f64)), "add_", "requires grad");
  {
    NoGradGuard no_grad;
    const Tensor before = w.detach().clone();
    add_(w, ones({2, 2}, DType::f64), 2.0);
    mul_(w, 0.5);
    EXPECT_TENSOR_CLOSE(w, naive_binary(before, Tensor::scalar(0.0, DType::f64), [](double v, double) { return (v + 2) * 0.5; }),
                        0.0, 1e-15);
    fill_(w, 1.0);
    EXPECT_EQ(w.to_vector<double>(), std::vector<double>(4, 1.0));
  }
  EXPECT_TRUE(w.requires_grad());
  EXPECT_TRUE(w.is_leaf());
}

TEST(InPlace, AddErrorsNameShapesAndDtypes) {
  NoGradGuard no_grad;
  EXPECT_THROW_WITH(add_(zeros({2, 3}), zeros({4, 5})), "add_", "(2, 3)", "(4, 5)");
  EXPECT_THROW_WITH(add_(zeros({3}), zeros({2, 3})), "add_", "(2, 3)", "(3)");  // y may not grow x
  EXPECT_THROW_WITH(add_(zeros({2, 3}), zeros({2, 3}, DType::f64)), "add_", "f32", "f64");
}

}  // namespace
}  // namespace nf
