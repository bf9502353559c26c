// Autocast (nanoformer/ops/autocast.h): linear and matmul under AutocastGuard(bf16 / f16), forward
// and backward, against torch.autocast (tools/golden/fixtures_autocast.py) and against a naive
// reference (operands rounded to bf16 / f16, products summed in f64), on the oneDNN fast path and
// on the sgemm fallback; the guard's nesting; and that nothing changes outside a guard.
//
// The bounds. Every product of two bf16 (8-bit significand) or f16 (11-bit) values is exact in f32,
// so our result differs from the exact sum of the rounded products only by f32 summation: at most
// n 2^-24 S for a sum of n terms, S the sum of the terms' absolute values (the op run on absolute
// values, in f64: `abs_sums`). That is the tight bound against the naive reference. PyTorch
// rounds its result (out, grad_x, grad_w, ...) to the autocast dtype, at most u S with u the unit
// roundoff (2^-8 bf16, 2^-11 f16); where it adds rounded terms (the bias in bf16, a broadcast
// batch's partial gradients) one more u S: the golden bound is 2 u S + n 2^-24 S.
#include <algorithm>
#include <cstdio>
#include <functional>

#include "nanoformer/ops/autocast.h"
#include "ops/cpu/copy.h"
#include "support/golden.h"
#include "support/testing.h"

namespace nf {
namespace {

using Op = std::function<Tensor(const std::vector<Tensor>&)>;

struct Result {
  Tensor out;
  std::vector<Tensor> grads;  // d sum(out * grad_out) / d input
};

// Runs op on fresh leaves holding `inputs` and back-propagates grad_out (all on this thread, so
// under the caller's guard if any).
Result run(const Op& op, const std::vector<Tensor>& inputs, const Tensor& grad_out) {
  std::vector<Tensor> leaves;
  for (const Tensor& t : inputs) leaves.push_back(t.detach().clone().set_requires_grad(true));
  Result r{op(leaves), {}};
  r.out.backward(grad_out);
  r.out = r.out.detach();
  for (const Tensor& leaf : leaves) r.grads.push_back(leaf.grad());
  return r;
}

Tensor rounded_f64(const Tensor& t, DType dtype) { return t.detach().to(dtype).to(DType::f64); }

double unit_roundoff(DType dtype) { return dtype == DType::bf16 ? 0x1p-8 : 0x1p-11; }

// A product to check: op over inputs, of which those flagged `rounded` are product operands
// (autocast rounds them and the gradient reaching them); the others (a bias) stay f32.
struct Case {
  std::string name;
  Op op;
  std::vector<Tensor> inputs;
  std::vector<bool> rounded;
  Tensor grad_out;
  DType dtype;

  // Longest sum behind any result element: no sum has more terms than the largest tensor has elements.
  double terms() const {
    int64_t n = grad_out.numel();
    for (const Tensor& t : inputs) n = std::max(n, t.numel());
    return static_cast<double>(n);
  }
};

Result under_autocast(const Case& c) {
  AutocastGuard guard(c.dtype);
  return run(c.op, c.inputs, c.grad_out);
}

// S: the op and its gradients on absolute values (operands rounded) in f64.
Result abs_sums(const Case& c) {
  std::vector<Tensor> inputs;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    inputs.push_back(abs(c.rounded[i] ? rounded_f64(c.inputs[i], c.dtype) : c.inputs[i].to(DType::f64)));
  }
  return run(c.op, inputs, abs(c.grad_out.to(DType::f64)));
}

// The naive reference: rounded operands and gradient, f64 sums; the gradient of an input that is
// not a product operand (the bias) from the unrounded gradient, as autocast does.
Result naive(const Case& c) {
  std::vector<Tensor> inputs;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    inputs.push_back(c.rounded[i] ? rounded_f64(c.inputs[i], c.dtype) : c.inputs[i].to(DType::f64));
  }
  Result r = run(c.op, inputs, rounded_f64(c.grad_out, c.dtype));
  const Result plain_gradient = run(c.op, inputs, c.grad_out.to(DType::f64));
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    if (!c.rounded[i]) r.grads[i] = plain_gradient.grads[i];
  }
  return r;
}

// |actual - expected| <= scale * S elementwise; returns the worst |actual - expected| / S seen.
double expect_within(const Tensor& actual, const Tensor& expected, const Tensor& sums, double scale, const std::string& what) {
  EXPECT_EQ(actual.dtype(), DType::f32) << what;
  const std::vector<double> a = actual.to_vector<double>(), e = expected.to_vector<double>(), s = sums.to_vector<double>();
  EXPECT_EQ(a.size(), e.size()) << what;
  double worst = 0;
  size_t bad = 0;
  for (size_t i = 0; i < std::min(a.size(), e.size()); ++i) {
    const double diff = std::fabs(a[i] - e[i]);
    if (!(diff <= scale * s[i])) ++bad;
    if (s[i] > 0) worst = std::max(worst, diff / s[i]);
  }
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " elements beyond " << scale << " S; worst |diff| / S " << worst;
  return worst;
}

struct Worst {
  double golden = 0, naive = 0;
};

// Checks out and every gradient of `c` (under autocast, on the current GEMM) against `expected`
// within `scale` S; returns the worst ratio.
double check_against(const Case& c, const Result& ours, const Result& expected, double scale, const std::string& against) {
  const Result sums = abs_sums(c);
  double worst = expect_within(ours.out, expected.out, sums.out, scale, c.name + " out vs " + against);
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    worst = std::max(worst, expect_within(ours.grads[i], expected.grads[i], sums.grads[i], scale,
                                          c.name + " grad " + std::to_string(i) + " vs " + against));
  }
  return worst;
}

double tight_scale(const Case& c) { return (c.terms() + 2) * 0x1p-24; }

// ---- cases ----

Tensor linear_of(const std::vector<Tensor>& in) { return in.size() == 3 ? linear(in[0], in[1], in[2]) : linear(in[0], in[1]); }
Tensor matmul_of(const std::vector<Tensor>& in) { return matmul(in[0], in[1]); }

std::vector<Case> golden_cases(const std::string& fixture, const std::vector<std::string>& roles, const Op& op,
                               std::vector<Result>* torch_results) {
  const testing::Golden golden(fixture);
  std::vector<Case> cases;
  for (const auto& [name, params] : golden.cases().items()) {
    Case c{fixture + "." + name, op, {}, {}, golden.get(name, "grad_out"), dtype_from_name(params.at("dtype"))};
    Result torch{golden.get(name, "out"), {}};
    for (const std::string& role : roles) {
      if (!golden.has(name, role)) continue;
      c.inputs.push_back(golden.get(name, role));
      c.rounded.push_back(role != "bias");
      torch.grads.push_back(golden.get(name, "grad_" + role));
    }
    cases.push_back(c);
    torch_results->push_back(torch);
  }
  return cases;
}

// Restores the GEMM choice a test changed.
struct FallbackScope {
  explicit FallbackScope(bool force) { force_bf16_gemm_fallback(force); }
  ~FallbackScope() { force_bf16_gemm_fallback(false); }
};

void check_golden(const std::string& fixture, const std::vector<std::string>& roles, const Op& op) {
  std::vector<Result> torch;
  const std::vector<Case> cases = golden_cases(fixture, roles, op, &torch);
  ASSERT_FALSE(cases.empty());
  for (bool fallback : {false, true}) {
    FallbackScope scope(fallback);
    Worst worst;
    for (size_t i = 0; i < cases.size(); ++i) {
      const Case& c = cases[i];
      const Result ours = under_autocast(c);
      const double u = unit_roundoff(c.dtype);
      worst.golden = std::max(worst.golden, check_against(c, ours, torch[i], 2 * u + tight_scale(c), "torch") / u);
      worst.naive = std::max(worst.naive, check_against(c, ours, naive(c), tight_scale(c), "naive") / 0x1p-24);
    }
    std::printf("%s (%s): worst |ours - torch| = %.3f u S, |ours - naive| = %.3f 2^-24 S\n", fixture.c_str(),
                bf16_gemm_info().c_str(), worst.golden, worst.naive);
  }
}

TEST(Autocast, LinearMatchesTorchAutocastAndTheNaiveReference) {
  check_golden("autocast_linear", {"x", "weight", "bias"}, linear_of);
}

TEST(Autocast, MatmulMatchesTorchAutocastAndTheNaiveReference) { check_golden("autocast_matmul", {"a", "b"}, matmul_of); }

// Training-sized operands, transposed and broadcast layouts: the oneDNN path and the fallback each
// within the tight bound of the naive reference, and so within twice that of each other.
TEST(Autocast, FastPathAndFallbackAgree) {
  Generator gen(5);
  const std::vector<Case> cases = {
      {"linear (96, 160) x (72, 160)^T", linear_of, {randn({96, 160}, gen), randn({72, 160}, gen), randn({72}, gen)},
       {true, true, false}, randn({96, 72}, gen), DType::bf16},
      {"matmul (3, 40, 64)^T-view @ (64, 48)", [](const std::vector<Tensor>& in) { return matmul(in[0].transpose(1, 2), in[1]); },
       {randn({3, 64, 40}, gen), randn({64, 48}, gen)}, {true, true}, randn({3, 40, 48}, gen), DType::bf16},
      {"matmul (2, 1, 33, 70) @ (4, 70, 50)", matmul_of, {randn({2, 1, 33, 70}, gen), randn({4, 70, 50}, gen)},
       {true, true}, randn({2, 4, 33, 50}, gen), DType::bf16},
      {"linear f16", linear_of, {randn({64, 96}, gen), randn({40, 96}, gen)}, {true, true}, randn({64, 40}, gen), DType::f16}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const Result reference = naive(c);
    Result fast, fallback;
    {
      FallbackScope scope(false);
      fast = under_autocast(c);
      check_against(c, fast, reference, tight_scale(c), "naive (default GEMM)");
    }
    {
      FallbackScope scope(true);
      fallback = under_autocast(c);
      check_against(c, fallback, reference, tight_scale(c), "naive (fallback)");
    }
    const double worst = check_against(c, fast, fallback, 2 * tight_scale(c), "fallback") / 0x1p-24;
    std::printf("%s: worst |default - fallback| = %.3f 2^-24 S\n", c.name.c_str(), worst);
  }
  std::printf("bf16 GEMM: %s\n", bf16_gemm_info().c_str());
}

TEST(Autocast, FallbackCanBeForced) {
  const bool native = bf16_gemm_native();
  {
    FallbackScope scope(true);
    EXPECT_FALSE(bf16_gemm_native());
    EXPECT_NE(bf16_gemm_info().find("fallback"), std::string::npos) << bf16_gemm_info();
  }
  EXPECT_EQ(bf16_gemm_native(), native);
  if (!native) GTEST_SKIP() << "no bf16 instructions here: " << bf16_gemm_info();
  EXPECT_NE(bf16_gemm_info().find("oneDNN"), std::string::npos) << bf16_gemm_info();
}

// ---- the mode ----

TEST(Autocast, GuardsNestAndRestore) {
  EXPECT_EQ(autocast_dtype(), DType::f32);
  {
    AutocastGuard outer(DType::bf16);
    EXPECT_EQ(autocast_dtype(), DType::bf16);
    {
      AutocastGuard off(DType::f32);
      EXPECT_EQ(autocast_dtype(), DType::f32);
      {
        AutocastGuard half(DType::f16);
        EXPECT_EQ(autocast_dtype(), DType::f16);
      }
      EXPECT_EQ(autocast_dtype(), DType::f32);
    }
    EXPECT_EQ(autocast_dtype(), DType::bf16);
  }
  EXPECT_EQ(autocast_dtype(), DType::f32);
  EXPECT_THROW_WITH(AutocastGuard(DType::i64), "AutocastGuard", "i64", "bf16");
}

// The bits of a linear's output and gradients, computed the same way each time.
std::vector<std::vector<float>> linear_bits(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& g) {
  const Result r = run(linear_of, {x, w, b}, g);
  return {r.out.to_vector<float>(), r.grads[0].to_vector<float>(), r.grads[1].to_vector<float>(), r.grads[2].to_vector<float>()};
}

TEST(Autocast, OutsideAGuardNothingChanges) {
  Generator gen(6);
  const Tensor x = randn({2, 9, 40}, gen), w = randn({24, 40}, gen), b = randn({24}, gen), g = randn({2, 9, 24}, gen);
  const auto before = linear_bits(x, w, b, g);
  const Tensor a = randn({3, 7, 40}, gen), m = randn({40, 5}, gen);
  const std::vector<float> product_before = matmul(a, m).to_vector<float>();
  {
    AutocastGuard guard(DType::bf16);
    EXPECT_NE(linear_bits(x, w, b, g), before);  // the guard does change the numbers
    AutocastGuard off(DType::f32);
    EXPECT_EQ(linear_bits(x, w, b, g), before);
  }
  EXPECT_EQ(linear_bits(x, w, b, g), before);
  EXPECT_EQ(matmul(a, m).to_vector<float>(), product_before);
  // f64 operands are never rounded
  const Tensor x64 = x.to(DType::f64), w64 = w.to(DType::f64);
  const std::vector<double> plain = linear(x64, w64).to_vector<double>();
  AutocastGuard guard(DType::bf16);
  EXPECT_EQ(linear(x64, w64).dtype(), DType::f64);
  EXPECT_EQ(linear(x64, w64).to_vector<double>(), plain);
}

// The rounding is decided in forward: a backward run after the guard ends multiplies the same
// rounded operands.
TEST(Autocast, BackwardAfterTheGuardKeepsForwardsRounding) {
  Generator gen(7);
  const Tensor x = randn({6, 32}, gen), w = randn({16, 32}, gen), g = randn({6, 16}, gen);
  const Tensor inside = [&] {
    AutocastGuard guard(DType::bf16);
    return run(linear_of, {x, w}, g).grads[1];
  }();
  Tensor leaf_x = x.clone().set_requires_grad(true), leaf_w = w.clone().set_requires_grad(true);
  Tensor y;
  {
    AutocastGuard guard(DType::bf16);
    y = linear(leaf_x, leaf_w);
  }
  y.backward(g);
  EXPECT_EQ(leaf_w.grad().to_vector<float>(), inside.to_vector<float>());
}

// A parameter's rounded copy lives until the outermost guard ends: a parameter updated between
// two guards is rounded afresh.
TEST(Autocast, ParametersUpdatedBetweenGuardsAreRoundedAfresh) {
  Generator gen(8);
  const Tensor x = randn({4, 24}, gen);
  Tensor w = randn({8, 24}, gen).set_requires_grad(true);
  const auto expected = [&] { return matmul(rounded_f64(x, DType::bf16), rounded_f64(w, DType::bf16).t()); };
  Tensor first, reused;
  {
    AutocastGuard guard(DType::bf16);
    first = linear(x, w);
    reused = linear(x, w);  // the same cached copy: the same bits
    EXPECT_EQ(first.to_vector<float>(), reused.to_vector<float>());
  }
  EXPECT_TENSOR_CLOSE(first, expected(), 1e-4, 0);
  {
    NoGradGuard no_grad;
    mul_(w, 3.0);
  }
  AutocastGuard guard(DType::bf16);
  EXPECT_TENSOR_CLOSE(linear(x, w), expected(), 1e-4, 0);
}

// The rounding kernel: round to nearest even like the scalar conversion (ties, NaN, infinities,
// subnormals, f16 overflow), and exact widening back; on transposed and broadcast views it keeps
// the layout. 16 values, so the vector loops run too.
TEST(Autocast, RoundingKeepsLayoutAndMatchesTheScalarConversion) {
  const std::vector<float> special = {1.0f + 0x1p-8f, 1.0f + 0x1p-8f + 0x1p-16f, 1.0f + 3 * 0x1p-8f, -2.5f,
                                      0x1p-130f, -0x1p-140f, 3.0e38f, std::numeric_limits<float>::infinity(),
                                      -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN(),
                                      65519.0f, 65520.0f, 0x1p-25f, 1.0f / 3.0f, -0.0f, 7.0f};
  const Tensor base = Tensor::from_vector(special, {4, 4});
  for (const Tensor& view : {base, base.t(), base.select(0, 1).unsqueeze(0).expand({3, 4})}) {
    for (DType dtype : {DType::bf16, DType::f16}) {
      const Tensor r = cpu::convert_keeping_layout(view, dtype);
      EXPECT_EQ(r.strides(), view.strides());
      const Tensor widened = cpu::convert_keeping_layout(r, DType::f32);  // and back, as the fallback GEMM does
      EXPECT_EQ(widened.strides(), view.strides());
      const std::vector<float> values = view.to_vector<float>(), got = r.to_vector<float>(), back = widened.to_vector<float>();
      for (size_t i = 0; i < values.size(); ++i) {
        const uint16_t bits = dtype == DType::bf16 ? float_to_bf16_bits(values[i]) : float_to_f16_bits(values[i]);
        const float want = dtype == DType::bf16 ? bf16_bits_to_float(bits) : f16_bits_to_float(bits);
        if (std::isnan(want)) {
          EXPECT_TRUE(std::isnan(got[i]) && std::isnan(back[i]));
        } else {
          EXPECT_EQ(got[i], want) << dtype_name(dtype) << " of " << values[i];
          EXPECT_EQ(back[i], want) << dtype_name(dtype) << " of " << values[i] << " widened";
        }
      }
    }
  }
}

}  // namespace
}  // namespace nf
