// relu_squared and swiglu: forward against f64 formulas, the fused backward against finite
// differences (contiguous, transposed, the two halves of one tensor, an expanded upstream gradient),
// f32 accuracy over a long vectorised range, and errors.
#include <cmath>

#include "support/testing.h"

namespace nf {
namespace {

using testing::random_leaf;

// max(x, 0)^2, elementwise in f64
Tensor reference_relu_squared(const Tensor& x) {
  std::vector<double> v = x.to_vector<double>();
  for (double& e : v) e = e > 0 ? e * e : 0.0;
  return Tensor::from_vector(v, x.shape());
}

// silu(a) b = a b / (1 + e^-a), elementwise in f64
Tensor reference_swiglu(const Tensor& a, const Tensor& b) {
  std::vector<double> va = a.to_vector<double>();
  const std::vector<double> vb = b.to_vector<double>();
  for (size_t i = 0; i < va.size(); ++i) va[i] = va[i] / (1.0 + std::exp(-va[i])) * vb[i];
  return Tensor::from_vector(va, a.shape());
}

TEST(ReluSquared, MatchesFormula) {
  const Tensor x = random_leaf({7, 45}, 1, -3.0, 3.0);
  EXPECT_TENSOR_CLOSE(relu_squared(x), reference_relu_squared(x), 0.0, 1e-15);
  const Tensor x32 = x.detach().to(DType::f32);
  EXPECT_TENSOR_CLOSE(relu_squared(x32), reference_relu_squared(x32).to(DType::f32), 0.0, 1e-7);
  EXPECT_TENSOR_CLOSE(relu_squared(x.transpose(0, 1)), reference_relu_squared(x.transpose(0, 1)), 0.0, 1e-15);
}

TEST(ReluSquared, GradientIsTwiceTheRelu) {
  // away from the kink at 0, where finite differences straddle two pieces
  EXPECT_GRAD_OK([](const std::vector<Tensor>& v) { return relu_squared(v[0]); }, {random_leaf({4, 9}, 2, -2.0, 2.0)});
  EXPECT_GRAD_OK([](const std::vector<Tensor>& v) { return relu_squared(v[0].transpose(0, 1)); },
                 {random_leaf({4, 9}, 3, -2.0, 2.0)});
  Tensor x = Tensor::of({-2, -0.5, 0, 0.5, 3}, {5}, DType::f64).set_requires_grad();
  sum(relu_squared(x)).backward();  // an expanded (stride 0) upstream gradient
  EXPECT_TENSOR_CLOSE(x.grad(), Tensor::of({0, 0, 0, 1, 6}, {5}, DType::f64));
}

TEST(Swiglu, MatchesFormula) {
  const Tensor a = random_leaf({6, 77}, 4, -20.0, 20.0), b = random_leaf({6, 77}, 5, -2.0, 2.0);
  EXPECT_TENSOR_CLOSE(swiglu(a, b), reference_swiglu(a, b), 1e-15, 1e-14);
  // f32 uses the vectorised exp: a few ulps
  const Tensor a32 = a.detach().to(DType::f32), b32 = b.detach().to(DType::f32);
  EXPECT_TENSOR_CLOSE(swiglu(a32, b32), reference_swiglu(a32, b32).to(DType::f32), 1e-7, 1e-6);
}

TEST(Swiglu, FusedBackwardPassesGradcheck) {
  const auto op = [](const std::vector<Tensor>& v) { return swiglu(v[0], v[1]); };
  EXPECT_GRAD_OK(op, {random_leaf({5, 11}, 6, -6.0, 6.0), random_leaf({5, 11}, 7)});
  // only one input requires grad
  EXPECT_GRAD_OK(op, {random_leaf({5, 11}, 8, -6.0, 6.0), random_leaf({5, 11}, 9).detach()});
  EXPECT_GRAD_OK(op, {random_leaf({5, 11}, 10, -6.0, 6.0).detach(), random_leaf({5, 11}, 11)});
  // transposed operands
  EXPECT_GRAD_OK([](const std::vector<Tensor>& v) { return swiglu(v[0].transpose(0, 1), v[1].transpose(0, 1)); },
                 {random_leaf({5, 11}, 12, -6.0, 6.0), random_leaf({5, 11}, 13)});
}

// gate and up as the two halves of one projection's output (strided views of one tensor)
TEST(Swiglu, HalvesOfOneTensor) {
  const Tensor h = random_leaf({3, 4, 2 * 9}, 14, -4.0, 4.0);
  const auto halves = [](const std::vector<Tensor>& v) {
    return swiglu(v[0].narrow(-1, 0, 9), v[0].narrow(-1, 9, 9));
  };
  EXPECT_TENSOR_CLOSE(halves({h}), reference_swiglu(h.narrow(-1, 0, 9).contiguous(), h.narrow(-1, 9, 9).contiguous()),
                      1e-15, 1e-14);
  EXPECT_GRAD_OK(halves, {h});
}

// f32 gradients over a long range of gates (the vectorised loop and its tail) against f64
TEST(Swiglu, F32GradientsMatchF64) {
  Tensor a64 = random_leaf({3, 1001}, 15, -30.0, 30.0), b64 = random_leaf({3, 1001}, 16, -2.0, 2.0);
  Tensor a32 = a64.detach().to(DType::f32).set_requires_grad(), b32 = b64.detach().to(DType::f32).set_requires_grad();
  Generator gen(17);
  const Tensor g = randn({3, 1001}, gen, DType::f64);
  swiglu(a64, b64).backward(g);
  swiglu(a32, b32).backward(g.to(DType::f32));
  EXPECT_TENSOR_CLOSE(a32.grad(), a64.grad().to(DType::f32), 1e-6, 1e-5);
  EXPECT_TENSOR_CLOSE(b32.grad(), b64.grad().to(DType::f32), 1e-6, 1e-5);
}

TEST(MlpActivations, Errors) {
  EXPECT_THROW_WITH(relu_squared(zeros({2, 3}, DType::i64)), "relu_squared", "i64", "(2, 3)");
  EXPECT_THROW_WITH(swiglu(zeros({2, 3}), zeros({3, 2})), "swiglu", "(2, 3)", "(3, 2)", "same shape");
  EXPECT_THROW_WITH(swiglu(zeros({2, 3}), zeros({2, 3}, DType::f64)), "swiglu", "f32", "f64");
  EXPECT_THROW_WITH(swiglu(zeros({2, 3}, DType::i32), zeros({2, 3}, DType::i32)), "swiglu", "i32");
}

}  // namespace
}  // namespace nf
