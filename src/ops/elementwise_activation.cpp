// Activations: tanh, sigmoid, relu, silu, softplus, gelu. Forward and backward are single fused kernels; on
// f32 they use the vectorised approximations of ops/cpu/simd/vector_math.h.
#include "nanoformer/ops/elementwise.h"
#include "ops/cpu/elementwise.h"
#include "ops/elementwise_internal.h"

namespace nf {

// y = tanh(x);  dx = (1 - y^2) dy
Tensor tanh(const Tensor& x) {
  Tensor out = unary_forward("tanh", UnaryOp::tanh, x);
  record_unary("tanh", out, x, UnaryBackwardOp::tanh, out);
  return out;
}

// y = 1 / (1 + e^-x);  dx = y (1 - y) dy
Tensor sigmoid(const Tensor& x) {
  Tensor out = unary_forward("sigmoid", UnaryOp::sigmoid, x);
  record_unary("sigmoid", out, x, UnaryBackwardOp::sigmoid, out);
  return out;
}

// y = max(x, 0);  dx = dy where y > 0, else 0
Tensor relu(const Tensor& x) {
  Tensor out = unary_forward("relu", UnaryOp::relu, x);
  record_unary("relu", out, x, UnaryBackwardOp::relu, out);
  return out;
}

// y = x s, s = sigmoid(x);  dx = s (1 + x (1 - s)) dy
Tensor silu(const Tensor& x) {
  Tensor out = unary_forward("silu", UnaryOp::silu, x);
  record_unary("silu", out, x, UnaryBackwardOp::silu, x);
  return out;
}

// y = log(1 + e^x) (x above 20);  dx = sigmoid(x) dy (dy above 20)
Tensor softplus(const Tensor& x) {
  Tensor out = unary_forward("softplus", UnaryOp::softplus, x);
  record_unary("softplus", out, x, UnaryBackwardOp::softplus, x);
  return out;
}

// none: y = x Phi(x);  dx = (Phi(x) + x phi(x)) dy  (Phi, phi: standard normal cdf and density)
// tanh: y = x sigmoid(2u), u = sqrt(2/pi) (x + 0.044715 x^3);  dx = (s + 2 x u' s (1 - s)) dy, s = sigmoid(2u)
Tensor gelu(const Tensor& x, GeluApprox approximate) {
  const bool exact = approximate == GeluApprox::none;
  Tensor out = unary_forward("gelu", exact ? UnaryOp::gelu : UnaryOp::gelu_tanh, x);
  record_unary("gelu", out, x, exact ? UnaryBackwardOp::gelu : UnaryBackwardOp::gelu_tanh, x);
  return out;
}

}  // namespace nf
