// layer_norm and rms_norm (both eps placements): the fused kernels against the unfused composition
// of existing ops (forward and every gradient, f64), finite-difference gradient checks of the fused
// backward, f32 rows long enough for the vectorised loops and for several threads' parameter
// partial sums, edge cases (all-zero rows, large means, empty input) and errors.
#include <cmath>
#include <limits>

#include "support/testing.h"

namespace nf {
namespace {

using testing::random_leaf;

// Which parameters a case passes: inputs are {x, weight?, bias?} in that order.
struct Params {
  bool weight, bias;
};
constexpr Params kAllParams[] = {{true, true}, {true, false}, {false, true}, {false, false}};

Tensor weight_of(const std::vector<Tensor>& in, Params p) { return p.weight ? in[1] : Tensor(); }
Tensor bias_of(const std::vector<Tensor>& in, Params p) { return p.bias ? in[p.weight ? 2 : 1] : Tensor(); }

// The unfused compositions: y = (x - mean) * rsqrt(var + eps) * w + b
Tensor composed_layer_norm(const Tensor& x, const Tensor& w, const Tensor& b, double eps) {
  Tensor y = (x - mean(x, {-1}, true)) * rsqrt(var(x, {-1}, 0, true) + eps);
  if (w.defined()) y = y * w;
  if (b.defined()) y = y + b;
  return y;
}

// y = x * rsqrt(mean(x^2) + eps) * w   or   x / (sqrt(mean(x^2)) + eps) * w
Tensor composed_rms_norm(const Tensor& x, const Tensor& w, double eps, RmsNormForm form) {
  const Tensor ms = mean(x * x, {-1}, true);
  Tensor y = form == RmsNormForm::rsqrt ? x * rsqrt(ms + eps) : x / (sqrt(ms) + eps);
  return w.defined() ? y * w : y;
}

// f64 leaves {x, weight?, bias?} with x of `shape`; weight around 1.
std::vector<Tensor> leaves(const Shape& shape, Params p, uint64_t seed) {
  std::vector<Tensor> in{random_leaf(shape, seed, -2.0, 2.0)};
  if (p.weight) in.push_back(random_leaf({shape.back()}, seed + 1, 0.5, 1.5));
  if (p.bias) in.push_back(random_leaf({shape.back()}, seed + 2));
  return in;
}

// Leaves converted to `dtype`, still leaves requiring grad.
std::vector<Tensor> converted(const std::vector<Tensor>& in, DType dtype) {
  std::vector<Tensor> out;
  for (const Tensor& t : in) out.push_back(t.detach().to(dtype).contiguous().set_requires_grad());
  return out;
}

// f(inputs) forward, then backward with a seeded random upstream gradient: {out, grad of each input}.
std::vector<Tensor> forward_backward(const autograd::TensorFn& f, const std::vector<Tensor>& inputs, uint64_t seed) {
  for (const Tensor& t : inputs) t.zero_grad();
  const Tensor out = f(inputs);
  Generator gen(seed);
  out.backward(randn(out.shape(), gen).to(out.dtype()));
  std::vector<Tensor> result{out.detach()};
  for (const Tensor& t : inputs) result.push_back(t.grad());
  return result;
}

// ours and reference agree on the output and every input gradient.
void expect_same(const autograd::TensorFn& ours, const autograd::TensorFn& reference, const std::vector<Tensor>& in,
                 double atol, double rtol) {
  const std::vector<Tensor> a = forward_backward(ours, in, 7), b = forward_backward(reference, in, 7);
  for (size_t i = 0; i < a.size(); ++i) {
    SCOPED_TRACE(i == 0 ? std::string("output") : "gradient of input " + std::to_string(i - 1));
    EXPECT_TENSOR_CLOSE(a[i], b[i].to(a[i].dtype()), atol, rtol);
  }
}

autograd::TensorFn fused_layer_norm(Params p, double eps) {
  return [p, eps](const std::vector<Tensor>& in) { return layer_norm(in[0], weight_of(in, p), bias_of(in, p), eps); };
}
autograd::TensorFn unfused_layer_norm(Params p, double eps) {
  return [p, eps](const std::vector<Tensor>& in) {
    return composed_layer_norm(in[0], weight_of(in, p), bias_of(in, p), eps);
  };
}
autograd::TensorFn fused_rms_norm(bool weight, double eps, RmsNormForm form) {
  return [weight, eps, form](const std::vector<Tensor>& in) {
    return rms_norm(in[0], weight_of(in, {weight, false}), eps, form);
  };
}
autograd::TensorFn unfused_rms_norm(bool weight, double eps, RmsNormForm form) {
  return [weight, eps, form](const std::vector<Tensor>& in) {
    return composed_rms_norm(in[0], weight_of(in, {weight, false}), eps, form);
  };
}

constexpr RmsNormForm kForms[] = {RmsNormForm::rsqrt, RmsNormForm::rms_plus_eps};

// ---- layer_norm ----

TEST(LayerNorm, MatchesCompositionF64) {
  for (Params p : kAllParams) {
    for (const Shape& shape : {Shape{3, 5, 7}, Shape{4, 100}, Shape{6}}) {
      SCOPED_TRACE("weight " + std::to_string(p.weight) + " bias " + std::to_string(p.bias) + " shape " +
                   shape_str(shape));
      expect_same(fused_layer_norm(p, 1e-5), unfused_layer_norm(p, 1e-5), leaves(shape, p, 1), 1e-12, 1e-10);
    }
  }
}

TEST(LayerNorm, FusedBackwardPassesGradcheck) {
  for (Params p : kAllParams) {
    EXPECT_GRAD_OK(fused_layer_norm(p, 1e-5), leaves({3, 9}, p, 2));
    // eps comparable to the variance, so its placement shows in the gradient
    EXPECT_GRAD_OK(fused_layer_norm(p, 0.3), leaves({2, 37}, p, 3));
  }
}

TEST(LayerNorm, NonContiguousInput) {
  // x (5, 4) seen transposed: rows of 5 elements with stride 4
  std::vector<Tensor> in{random_leaf({5, 4}, 4, -2.0, 2.0), random_leaf({5}, 5, 0.5, 1.5), random_leaf({5}, 6)};
  const auto transposed = [](const std::vector<Tensor>& v) { return layer_norm(v[0].transpose(0, 1), v[1], v[2]); };
  EXPECT_TENSOR_CLOSE(transposed(in), composed_layer_norm(in[0].transpose(0, 1), in[1], in[2], 1e-5), 1e-12, 1e-10);
  EXPECT_GRAD_OK(transposed, in);
}

// f32 rows longer than the vector lanes, and enough rows for two threads' partial weight and bias
// gradients (a (1500, 96) input spans several grains of rows), against the f64 composition.
TEST(LayerNorm, F32LongRowsMatchF64) {
  for (Params p : {Params{true, true}, Params{false, false}}) {
    const std::vector<Tensor> in64 = leaves({1500, 96}, p, 8);
    const std::vector<Tensor> in32 = converted(in64, DType::f32);
    const std::vector<Tensor> ours = forward_backward(fused_layer_norm(p, 1e-5), in32, 9);
    const std::vector<Tensor> ref = forward_backward(unfused_layer_norm(p, 1e-5), in64, 9);
    for (size_t i = 0; i < ours.size(); ++i) EXPECT_TENSOR_CLOSE(ours[i], ref[i].to(DType::f32), 1e-5, 1e-4);
  }
}

TEST(LayerNorm, LargeMeanKeepsPrecision) {
  // x = 1000 + U(-1, 1) in f32, the reference in f64 on the same rounded input. The f32 mean itself
  // is off by up to half an ulp of 1000 (3e-5), i.e. 5e-5 in y for a row std of 0.58 (PyTorch's f32
  // layer_norm is off by 5.6e-5 here); a plain f32 sum of the row (ulp(64000) = 4e-3) reached 3e-4,
  // and a one-pass E[x^2] - E[x]^2 would lose most of the variance.
  const Tensor x = (random_leaf({4, 64}, 10).detach() + 1000.0).to(DType::f32);
  EXPECT_TENSOR_CLOSE(layer_norm(x), composed_layer_norm(x.to(DType::f64), {}, {}, 1e-5).to(DType::f32), 1e-4, 0.0);
}

// An outlier first element (LLM activations have a few huge features): statistics taken around x[0]
// alone would cancel by a factor ~n; the kernel notices and takes a second pass around the mean.
TEST(LayerNorm, OutlierFirstElementKeepsPrecision) {
  Tensor x = random_leaf({3, 4096}, 13).detach();
  for (int64_t r = 0; r < 3; ++r) x.set({r, 0}, 3000.0 * (r + 1));
  const Tensor x32 = x.to(DType::f32);
  EXPECT_TENSOR_CLOSE(layer_norm(x32), composed_layer_norm(x32.to(DType::f64), {}, {}, 1e-5).to(DType::f32), 1e-5,
                      1e-5);
}

TEST(LayerNorm, OnlyParametersNeedGrad) {
  const Params p{true, true};
  std::vector<Tensor> in = leaves({3, 6}, p, 11);
  in[0] = in[0].detach();
  EXPECT_GRAD_OK(fused_layer_norm(p, 1e-5), in);
  const Tensor x = random_leaf({3, 6}, 12);
  EXPECT_GRAD_OK([](const std::vector<Tensor>& v) { return layer_norm(v[0]); }, {x});
}

TEST(LayerNorm, EmptyInput) {
  Tensor x = zeros({0, 8}, DType::f64).set_requires_grad();
  Tensor w = ones({8}, DType::f64).set_requires_grad();
  Tensor y = layer_norm(x, w);
  EXPECT_EQ(y.shape(), (Shape{0, 8}));
  y.backward(zeros({0, 8}, DType::f64));
  EXPECT_TENSOR_CLOSE(w.grad(), zeros({8}, DType::f64));
}

TEST(LayerNorm, Errors) {
  const Tensor x = zeros({2, 4});
  EXPECT_THROW_WITH(layer_norm(x, zeros({5})), "layer_norm", "weight", "(5)", "(2, 4)");
  EXPECT_THROW_WITH(layer_norm(x, {}, zeros({4, 1})), "layer_norm", "bias", "(4, 1)");
  EXPECT_THROW_WITH(layer_norm(x, zeros({4}, DType::f64)), "layer_norm", "weight dtype", "f64", "f32");
  EXPECT_THROW_WITH(layer_norm(x, {}, {}, 0.0), "layer_norm", "eps", "0");
  EXPECT_THROW_WITH(layer_norm(x, {}, {}, -1e-5), "layer_norm", "eps", "-1e-05");
  EXPECT_THROW_WITH(layer_norm(zeros({2, 4}, DType::i64)), "layer_norm", "i64");
  EXPECT_THROW_WITH(layer_norm(Tensor::scalar(1.0)), "layer_norm", "scalar");
}

// ---- rms_norm ----

TEST(RmsNorm, MatchesCompositionF64) {
  for (RmsNormForm form : kForms) {
    for (bool weight : {true, false}) {
      for (const Shape& shape : {Shape{3, 5, 7}, Shape{4, 100}, Shape{6}}) {
        SCOPED_TRACE("form " + std::to_string(static_cast<int>(form)) + " weight " + std::to_string(weight) +
                     " shape " + shape_str(shape));
        expect_same(fused_rms_norm(weight, 1e-6, form), unfused_rms_norm(weight, 1e-6, form),
                    leaves(shape, {weight, false}, 20), 1e-12, 1e-10);
      }
    }
  }
}

TEST(RmsNorm, FusedBackwardPassesGradcheck) {
  for (RmsNormForm form : kForms) {
    for (bool weight : {true, false}) {
      EXPECT_GRAD_OK(fused_rms_norm(weight, 1e-6, form), leaves({3, 9}, {weight, false}, 21));
      // eps comparable to the rms: the two forms differ, and each gradient must follow its own
      EXPECT_GRAD_OK(fused_rms_norm(weight, 0.5, form), leaves({2, 37}, {weight, false}, 22));
    }
  }
}

TEST(RmsNorm, FormsDifferWhereEpsMatters) {
  const Tensor x = random_leaf({2, 8}, 23, -0.1, 0.1).detach();
  const Tensor a = rms_norm(x, {}, 0.05, RmsNormForm::rsqrt), b = rms_norm(x, {}, 0.05, RmsNormForm::rms_plus_eps);
  EXPECT_FALSE(testing::tensors_close(a, b, 1e-3, 1e-3));
  EXPECT_TENSOR_CLOSE(b, composed_rms_norm(x, {}, 0.05, RmsNormForm::rms_plus_eps), 1e-12, 1e-10);
}

TEST(RmsNorm, NonContiguousInput) {
  for (RmsNormForm form : kForms) {
    std::vector<Tensor> in{random_leaf({5, 4}, 24, -2.0, 2.0), random_leaf({5}, 25, 0.5, 1.5)};
    const auto transposed = [form](const std::vector<Tensor>& v) {
      return rms_norm(v[0].transpose(0, 1), v[1], 1e-6, form);
    };
    EXPECT_TENSOR_CLOSE(transposed(in), composed_rms_norm(in[0].transpose(0, 1), in[1], 1e-6, form), 1e-12, 1e-10);
    EXPECT_GRAD_OK(transposed, in);
  }
}

TEST(RmsNorm, F32LongRowsMatchF64) {
  for (RmsNormForm form : kForms) {
    for (bool weight : {true, false}) {
      const std::vector<Tensor> in64 = leaves({1500, 96}, {weight, false}, 26);
      const std::vector<Tensor> in32 = converted(in64, DType::f32);
      const std::vector<Tensor> ours = forward_backward(fused_rms_norm(weight, 1e-6, form), in32, 27);
      const std::vector<Tensor> ref = forward_backward(unfused_rms_norm(weight, 1e-6, form), in64, 27);
      for (size_t i = 0; i < ours.size(); ++i) EXPECT_TENSOR_CLOSE(ours[i], ref[i].to(DType::f32), 1e-5, 1e-4);
    }
  }
}

// An all-zero row: y = 0 in both forms; the gradient is finite: r w dy with r = 1 / sqrt(eps) or 1 / eps
// (x / (rms + eps) is linear with slope 1 / eps near 0, and the rms term's x / rms factor stays bounded).
TEST(RmsNorm, ZeroRowHasFiniteGradient) {
  for (RmsNormForm form : kForms) {
    Tensor x = zeros({1, 4}, DType::f64).set_requires_grad();
    Tensor w = Tensor::of({1, 2, 3, 4}, {4}, DType::f64).set_requires_grad();
    const double eps = 1e-2;
    Tensor y = rms_norm(x, w, eps, form);
    EXPECT_TENSOR_CLOSE(y, zeros({1, 4}, DType::f64));
    y.backward(ones({1, 4}, DType::f64));
    const double r = form == RmsNormForm::rsqrt ? 1.0 / std::sqrt(eps) : 1.0 / eps;
    EXPECT_TENSOR_CLOSE(x.grad(), Tensor::of({r, 2 * r, 3 * r, 4 * r}, {1, 4}, DType::f64), 1e-12, 1e-12);
    EXPECT_TENSOR_CLOSE(w.grad(), zeros({4}, DType::f64));
  }
}

TEST(RmsNorm, Errors) {
  const Tensor x = zeros({2, 4});
  EXPECT_THROW_WITH(rms_norm(x, zeros({3})), "rms_norm", "weight", "(3)", "(2, 4)");
  EXPECT_THROW_WITH(rms_norm(x, zeros({4}, DType::f64)), "rms_norm", "weight dtype", "f64");
  EXPECT_THROW_WITH(rms_norm(x, {}, 0.0), "rms_norm", "eps", "0");
  EXPECT_THROW_WITH(rms_norm(x, {}, std::numeric_limits<double>::infinity()), "rms_norm", "eps", "inf");
  EXPECT_THROW_WITH(rms_norm(zeros({4}, DType::i32)), "rms_norm", "i32");
}

}  // namespace
}  // namespace nf
