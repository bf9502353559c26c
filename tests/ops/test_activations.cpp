// Unary ops and activations (neg, abs, exp, log, sqrt, rsqrt, square, tanh, sigmoid, relu, silu,
// gelu, clamp): f64 forward against the textbook formulas, the vectorised f32 kernels against a
// long double reference with stated error bounds, gradients against finite differences, the
// PyTorch conventions at kinks, and errors.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "ops/naive_elementwise.h"
#include "support/testing.h"

namespace nf {
namespace {

using namespace nf::testing;
using LD = long double;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr LD kPi = 3.14159265358979323846264338327950288L;

// ---- textbook definitions (the header's formulas), in long double ----
LD ref_sigmoid(LD x) { return 1 / (1 + std::exp(-x)); }
LD ref_silu(LD x) { return x * ref_sigmoid(x); }
LD ref_silu_grad(LD x) { return ref_sigmoid(x) * (1 + x * (1 - ref_sigmoid(x))); }
// x/2 (1 + erf(x / sqrt2)), written with erfc(-z) = 1 + erf(z) so the reference keeps its relative
// precision for x << 0
LD ref_normal_cdf(LD x) { return std::erfc(-x / std::sqrt(LD(2))) / 2; }
LD ref_gelu(LD x) { return x * ref_normal_cdf(x); }
LD ref_gelu_grad(LD x) { return ref_normal_cdf(x) + x * std::exp(-x * x / 2) / std::sqrt(2 * kPi); }
LD gelu_u(LD x) { return std::sqrt(2 / kPi) * (x + LD(0.044715) * x * x * x); }
LD ref_gelu_tanh(LD x) { return x / 2 * (1 + std::tanh(gelu_u(x))); }
LD ref_gelu_tanh_grad(LD x) {
  const LD t = std::tanh(gelu_u(x));
  return (1 + t) / 2 + x / 2 * (1 - t * t) * std::sqrt(2 / kPi) * (1 + 3 * LD(0.044715) * x * x);
}

struct UnaryCase {
  const char* name;
  std::function<Tensor(const Tensor&)> op;
  std::function<LD(LD)> ref;
  double lo, hi;  // domain for the random inputs (away from kinks for the gradient checks)
};

const std::vector<UnaryCase> kUnary = {
    {"neg", [](const Tensor& x) { return neg(x); }, [](LD x) { return -x; }, -2, 2},
    {"abs", [](const Tensor& x) { return abs(x); }, [](LD x) { return std::fabs(x); }, 0.1, 2},
    {"abs<0", [](const Tensor& x) { return abs(x); }, [](LD x) { return std::fabs(x); }, -2, -0.1},
    {"exp", [](const Tensor& x) { return exp(x); }, [](LD x) { return std::exp(x); }, -3, 3},
    {"log", [](const Tensor& x) { return log(x); }, [](LD x) { return std::log(x); }, 0.2, 3},
    {"sqrt", [](const Tensor& x) { return sqrt(x); }, [](LD x) { return std::sqrt(x); }, 0.2, 3},
    {"rsqrt", [](const Tensor& x) { return rsqrt(x); }, [](LD x) { return 1 / std::sqrt(x); }, 0.2, 3},
    {"square", [](const Tensor& x) { return square(x); }, [](LD x) { return x * x; }, -2, 2},
    {"tanh", [](const Tensor& x) { return tanh(x); }, [](LD x) { return std::tanh(x); }, -3, 3},
    {"sigmoid", [](const Tensor& x) { return sigmoid(x); }, ref_sigmoid, -4, 4},
    {"relu", [](const Tensor& x) { return relu(x); }, [](LD x) { return x > 0 ? x : 0; }, 0.1, 2},
    {"relu<0", [](const Tensor& x) { return relu(x); }, [](LD x) { return x > 0 ? x : 0; }, -2, -0.1},
    {"silu", [](const Tensor& x) { return silu(x); }, ref_silu, -4, 4},
    // softplus: PyTorch's threshold form; the range crosses x = 20 on both sides
    {"softplus", [](const Tensor& x) { return softplus(x); }, [](LD x) { return x > 20 ? x : std::log1p(std::exp(x)); }, -25, 25},
    {"gelu", [](const Tensor& x) { return gelu(x); }, ref_gelu, -4, 4},
    {"gelu_tanh", [](const Tensor& x) { return gelu(x, GeluApprox::tanh); }, ref_gelu_tanh, -4, 4},
    // bounds at +-0.5 while inputs come from [-2, 2]: random draws land within eps of them with
    // negligible probability
    {"clamp", [](const Tensor& x) { return clamp(x, -0.5, 0.5); }, [](LD x) { return std::clamp<LD>(x, -0.5, 0.5); }, -2, 2},
    {"clamp_min", [](const Tensor& x) { return clamp_min(x, 0.5); }, [](LD x) { return std::max<LD>(x, 0.5); }, -2, 2},
    {"clamp_max", [](const Tensor& x) { return clamp_max(x, -0.5); }, [](LD x) { return std::min<LD>(x, -0.5); }, -2, 2},
};

Tensor uniform_f64(const Shape& shape, double lo, double hi, uint64_t seed) {
  Generator gen(seed);
  return uniform(shape, lo, hi, gen, DType::f64);
}

TEST(Unary, F64ForwardMatchesTextbookFormulas) {
  uint64_t seed = 1;
  for (const UnaryCase& c : kUnary) {
    SCOPED_TRACE(c.name);
    const Tensor x = uniform_f64({4, 5}, c.lo, c.hi, seed++);
    const Tensor xt = x.t();  // non-contiguous
    const auto ref = [&c](double v) { return static_cast<double>(c.ref(v)); };
    // 1e-14: the kernels use std:: math in f64; gelu uses erfc / a sigmoid form, equal in exact math
    EXPECT_TENSOR_CLOSE(c.op(x), naive_unary(x, ref), 1e-15, 1e-14);
    EXPECT_TENSOR_CLOSE(c.op(xt), naive_unary(xt, ref), 1e-15, 1e-14);
  }
}

TEST(Unary, GradientsF64) {
  uint64_t seed = 100;
  for (const UnaryCase& c : kUnary) {
    SCOPED_TRACE(c.name);
    auto f = [&c](const std::vector<Tensor>& in) { return c.op(in[0]); };
    EXPECT_GRAD_OK(f, {random_leaf({3, 4}, seed++, c.lo, c.hi)});
    EXPECT_GRAD_OK([&c](const std::vector<Tensor>& in) { return c.op(in[0].t()); }, {random_leaf({4, 3}, seed++, c.lo, c.hi)});
  }
  // the activations over a wide range, both signs
  for (const char* name : {"tanh", "sigmoid", "silu", "gelu", "gelu_tanh"}) {
    for (const UnaryCase& c : kUnary) {
      if (std::string(c.name) != name) continue;
      SCOPED_TRACE(c.name);
      EXPECT_GRAD_OK([&c](const std::vector<Tensor>& in) { return c.op(in[0]); }, {random_leaf({40}, seed++, -8, 8)});
    }
  }
}

TEST(Unary, BackwardOfBroadcastGradient) {
  // sum's backward hands a stride-0 gradient to the fused backward kernels
  const Tensor x = random_leaf({2, 3}, 7, -2, 2);
  sum(gelu(x)).backward();
  EXPECT_TENSOR_CLOSE(x.grad(), naive_unary(x, [](double v) { return static_cast<double>(ref_gelu_grad(v)); }), 1e-15, 1e-14);
  x.zero_grad();
  sum(mul(silu(x), 2.0)).backward();
  EXPECT_TENSOR_CLOSE(x.grad(), naive_unary(x, [](double v) { return 2 * static_cast<double>(ref_silu_grad(v)); }), 1e-15, 1e-14);
}

// ---- the f32 kernels against long double ----

// Inputs: a dense grid over [lo, hi] plus the points where the f32 kernels switch formulas.
Tensor f32_grid(double lo, double hi) {
  std::vector<float> v;
  const int n = 24001;
  for (int i = 0; i < n; ++i) v.push_back(static_cast<float>(lo + (hi - lo) * i / (n - 1)));
  for (float s : {0.0f, 1e-30f, 1e-7f, 0.625f, std::nextafter(0.625f, 0.0f), 0.5f, 20.0f}) {
    v.push_back(s);
    v.push_back(-s);
  }
  return Tensor::from_vector(v, {static_cast<int64_t>(v.size())});
}

Tensor reference_of(const Tensor& x32, const std::function<LD(LD)>& f) {
  std::vector<double> out;
  for (float v : x32.to_vector<float>()) out.push_back(static_cast<double>(f(v)));
  return Tensor::from_vector(out, x32.shape());
}

// Bounds, |y - ref| <= atol + rtol |ref|. One f32 ulp is 2^-24..2^-23 (6e-8..1.2e-7) relative.
//  - exp, tanh, sigmoid: 2.4e-7 = 2 ulp (measured max 1.2e-7, 1.4e-7, 1.9e-7);
//  - silu: 3e-7 (measured 2.2e-7: sigmoid's error plus the product's rounding);
//  - gelu: 6e-7 = 5 ulp (measured 4.5e-7, near x = 0 where Phi = 1 - tail(|x|) adds the tail's
//    error: its polynomial, the division in t = 1/(1 + 0.3|x|) and e^(-x^2/2));
//  - gelu_tanh: 2e-6 (measured 1.1e-6 on [-3, 3]). The kernel computes x sigmoid(2u), stable for
//    x << 0, but u = sqrt(2/pi)(x + 0.044715 x^3) carries ~2 ulp of rounding that e^(-2u)
//    multiplies by |2u|: the relative error is ~|2u| ulp, the function's own condition number
//    (|x f'/f| ~ 9.5 at x = -3). Below x = -3.5 the outputs are < 7e-4 |x| and the same amplification
//    grows with |u|, so an atol of 1e-9 covers the tail (the error there is < 1e-10 absolute).
// exp is checked over its whole normal range, the activations over [-12, 12]. Results below the
// f32 normal range (1.2e-38; e.g. gelu(-20) ~ 1e-88) have no relative precision: atol 1e-37.
TEST(UnaryF32, ForwardAccuracyAgainstLongDouble) {
  struct Case {
    const char* name;
    std::function<Tensor(const Tensor&)> op;
    std::function<LD(LD)> ref;
    double lo, hi, atol, rtol;
  };
  const std::vector<Case> cases = {
      {"exp", [](const Tensor& x) { return exp(x); }, [](LD x) { return std::exp(x); }, -87, 88.5, 1e-37, 2.4e-7},
      {"tanh", [](const Tensor& x) { return tanh(x); }, [](LD x) { return std::tanh(x); }, -12, 12, 1e-37, 2.4e-7},
      {"sigmoid", [](const Tensor& x) { return sigmoid(x); }, ref_sigmoid, -12, 12, 1e-37, 2.4e-7},
      {"silu", [](const Tensor& x) { return silu(x); }, ref_silu, -12, 12, 1e-37, 3e-7},
      {"gelu", [](const Tensor& x) { return gelu(x); }, ref_gelu, -12, 12, 1e-37, 6e-7},
      {"gelu_tanh", [](const Tensor& x) { return gelu(x, GeluApprox::tanh); }, ref_gelu_tanh, -12, 12, 1e-9, 2e-6},
      {"gelu_tanh[-3,3]", [](const Tensor& x) { return gelu(x, GeluApprox::tanh); }, ref_gelu_tanh, -3, 3, 1e-37, 2e-6},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const Tensor x = f32_grid(c.lo, c.hi);
    const Tensor y = c.op(x);
    ASSERT_EQ(y.dtype(), DType::f32);
    EXPECT_TENSOR_CLOSE(y, reference_of(x, c.ref), c.atol, c.rtol);
  }
}

// Backward (dy = 1). The derivatives of silu and gelu cross zero (x ~ -1.28 and -0.75), where two
// O(1) terms cancel: there the error is absolute, about an ulp of those terms, hence atol 1e-7.
// Elsewhere the bound is relative, 1e-6 (gelu_tanh: 2e-6, for the reason given above). tanh and
// sigmoid differentiate from their f32 output y (as PyTorch): 1 - y^2 and y (1 - y) inherit y's
// absolute error, up to 2 ulp of 1, hence atol 2.4e-7 (e.g. tanh'(9) = 6e-8 comes out as 0).
TEST(UnaryF32, BackwardAccuracyAgainstLongDouble) {
  struct Case {
    const char* name;
    std::function<Tensor(const Tensor&)> op;
    std::function<LD(LD)> grad;
    double atol, rtol;
  };
  const std::vector<Case> cases = {
      {"silu", [](const Tensor& x) { return silu(x); }, ref_silu_grad, 1e-7, 1e-6},
      {"gelu", [](const Tensor& x) { return gelu(x); }, ref_gelu_grad, 1e-7, 1e-6},
      {"gelu_tanh", [](const Tensor& x) { return gelu(x, GeluApprox::tanh); }, ref_gelu_tanh_grad, 1e-7, 2e-6},
      {"tanh", [](const Tensor& x) { return tanh(x); }, [](LD x) { return 1 - std::tanh(x) * std::tanh(x); }, 2.4e-7, 1e-6},
      {"sigmoid", [](const Tensor& x) { return sigmoid(x); }, [](LD x) { return ref_sigmoid(x) * (1 - ref_sigmoid(x)); }, 2.4e-7, 1e-6},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Tensor x = f32_grid(-12, 12).set_requires_grad();
    c.op(x).backward(ones(x.shape()));
    EXPECT_TENSOR_CLOSE(x.grad(), reference_of(x.detach(), c.grad), c.atol, c.rtol);
  }
}

TEST(UnaryF32, ExtremeInputs) {
  const Tensor x = Tensor::of({-200, -100, 100, 200, kNaN}, {5});
  auto values = [](const Tensor& t) { return t.to_vector<float>(); };
  const std::vector<float> e = values(exp(x));
  EXPECT_EQ(e[0], 0.0f);
  EXPECT_EQ(e[3], INFINITY);
  EXPECT_TRUE(std::isnan(e[4]));
  const std::vector<float> t = values(tanh(x));
  EXPECT_EQ(std::vector<float>(t.begin(), t.end() - 1), (std::vector<float>{-1, -1, 1, 1}));
  for (const Tensor& y : {tanh(x), sigmoid(x), silu(x), gelu(x), gelu(x, GeluApprox::tanh), relu(x), abs(x)}) {
    EXPECT_TRUE(std::isnan(values(y)[4])) << "NaN must propagate";
  }
  EXPECT_EQ(values(sigmoid(x))[0], 0.0f);
  EXPECT_EQ(values(sigmoid(x))[2], 1.0f);
  for (const Tensor& y : {silu(x), gelu(x), gelu(x, GeluApprox::tanh)}) {
    EXPECT_EQ(values(y)[0], 0.0f);
    EXPECT_EQ(values(y)[3], 200.0f);
  }
  EXPECT_EQ(values(gelu(Tensor::of({INFINITY}, {1}))), std::vector<float>{INFINITY});
}

TEST(UnaryF32, ResultsDoNotDependOnThreadCount) {
  Generator gen(9);
  const Tensor x = randn({300001}, gen);  // above the parallel grain, odd length for the loop tails
  const int threads = num_threads();
  set_num_threads(1);
  const std::vector<float> one = gelu(x).to_vector<float>(), one_tanh = gelu(x, GeluApprox::tanh).to_vector<float>();
  set_num_threads(3);
  const std::vector<float> three = gelu(x).to_vector<float>(), three_tanh = gelu(x, GeluApprox::tanh).to_vector<float>();
  set_num_threads(threads);
  EXPECT_EQ(one, three);
  EXPECT_EQ(one_tanh, three_tanh);
}

// ---- conventions at kinks and special values ----

TEST(Unary, GradientConventionsAtKinks) {
  // relu'(0) = 0 and |x|'(0) = 0 (as PyTorch); clamp passes the gradient at its bounds (inclusive)
  Tensor x = Tensor::of({-1, 0, 1}, {3}, DType::f64).set_requires_grad();
  sum(relu(x)).backward();
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{0, 0, 1}));
  x.zero_grad();
  sum(abs(x)).backward();
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{-1, 0, 1}));
  Tensor c = Tensor::of({-2, -1, 0, 1, 2}, {5}, DType::f64).set_requires_grad();
  sum(clamp(c, -1, 1)).backward();
  EXPECT_EQ(c.grad().to_vector<double>(), (std::vector<double>{0, 1, 1, 1, 0}));
  c.zero_grad();
  sum(clamp_min(c, 0)).backward();
  EXPECT_EQ(c.grad().to_vector<double>(), (std::vector<double>{0, 0, 1, 1, 1}));
  c.zero_grad();
  sum(clamp_max(c, 0)).backward();
  EXPECT_EQ(c.grad().to_vector<double>(), (std::vector<double>{1, 1, 1, 0, 0}));
}

TEST(Unary, ClampSemantics) {
  const Tensor x = Tensor::of({-3, -1, 0.25, 2, kNaN}, {5});
  const std::vector<float> y = clamp(x, -0.5, 1).to_vector<float>();
  EXPECT_EQ(std::vector<float>(y.begin(), y.end() - 1), (std::vector<float>{-0.5f, -0.5f, 0.25f, 1}));
  EXPECT_TRUE(std::isnan(y[4]));  // NaN stays NaN
  const std::vector<float> crossed = clamp(x, 2, 1).to_vector<float>();  // lo > hi: everything is hi
  EXPECT_EQ(std::vector<float>(crossed.begin(), crossed.end() - 1), (std::vector<float>{1, 1, 1, 1}));
  EXPECT_EQ(clamp_min(x, 1e300).to_vector<float>()[0], INFINITY);  // a bound beyond f32 range
}

TEST(Unary, IntegerNegAndAbs) {
  const Tensor i = Tensor::of({-3, 0, 7}, {3}, DType::i32);
  EXPECT_EQ(neg(i).to_vector<int32_t>(), (std::vector<int32_t>{3, 0, -7}));
  EXPECT_EQ(abs(i.to(DType::i64)).to_vector<int64_t>(), (std::vector<int64_t>{3, 0, 7}));
  EXPECT_EQ(abs(Tensor::of({-0.0}, {1})).to_vector<float>()[0], 0.0f);
  EXPECT_FALSE(std::signbit(abs(Tensor::of({-0.0}, {1})).to_vector<float>()[0]));
}

TEST(Unary, ErrorsNameOpShapeAndDtype) {
  EXPECT_THROW_WITH(gelu(zeros({2, 3}, DType::i32)), "gelu", "i32", "(2, 3)");
  EXPECT_THROW_WITH(exp(zeros({2, 3}, DType::i64)), "exp", "i64", "(2, 3)");
  EXPECT_THROW_WITH(softplus(zeros({2, 3}, DType::i64)), "softplus", "i64", "(2, 3)");
  EXPECT_THROW_WITH(sigmoid(zeros({4}, DType::bf16)), "sigmoid", "bf16", "(4)");
  EXPECT_THROW_WITH(clamp_min(zeros({2, 3}, DType::i64), 0), "clamp_min", "i64", "(2, 3)");
  EXPECT_THROW_WITH(abs(zeros({2}, DType::boolean)), "abs", "bool");
  EXPECT_THROW_WITH(relu(Tensor()), "relu", "undefined");
  EXPECT_THROW_WITH(clamp(zeros({2}), kNaN, 1.0), "clamp", "NaN");
}

}  // namespace
}  // namespace nf
