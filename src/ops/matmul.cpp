// matmul and linear. The primitive is a batched product of operands with identical batch shapes;
// torch.matmul's promotions (1-D operands) and batch broadcasting are expressed with
// differentiable views around it, so their gradients come for free.
#include "nanoformer/ops/matmul.h"

#include "nanoformer/autograd/node.h"
#include "nanoformer/core/dispatch.h"
#include "nanoformer/core/error.h"
#include "nanoformer/ops/elementwise.h"
#include "nanoformer/ops/reduce.h"
#include "nanoformer/ops/view.h"
#include "ops/cpu/matmul.h"

namespace nf {
namespace {

using MatmulKernel = void (*)(const Tensor& out, const Tensor& a, const Tensor& b);
const DeviceKernels<MatmulKernel> kMatmul{.cpu = cpu::matmul};

// C = A B over identical batch dims:  dA = dC B^T,  dB = A^T dC  (transposes are views)
Tensor batched_matmul(const Tensor& a, const Tensor& b) {
  Shape shape = a.shape();
  shape.back() = b.shape().back();
  Tensor out = Tensor::empty(shape, a.dtype(), a.device());
  kMatmul.get(a.device(), "matmul")(out, a, b);
  autograd::record("matmul", out, {a, b}, [a = a.detach(), b = b.detach()](const Tensor& g, const autograd::Node& n) {
    return std::vector<Tensor>{n.needs_input_grad(0) ? batched_matmul(g, b.transpose(-1, -2)) : Tensor(),
                               n.needs_input_grad(1) ? batched_matmul(a.transpose(-1, -2), g) : Tensor()};
  });
  return out;
}

void check_matmul_operands(const char* op, const Tensor& a, const Tensor& b) {
  NF_CHECK(a.defined() && b.defined(), op, ": operand is undefined");
  NF_CHECK(a.dtype() == b.dtype(), op, ": dtypes differ: a ", dtype_name(a.dtype()), " ", shape_str(a.shape()),
           " and b ", dtype_name(b.dtype()), " ", shape_str(b.shape()));
  NF_CHECK(a.dtype() == DType::f32 || a.dtype() == DType::f64, op, ": dtype ", dtype_name(a.dtype()),
           " is not supported (expects f32 or f64)");
  NF_CHECK(a.device() == b.device(), op, ": devices differ: a on ", a.device().str(), ", b on ", b.device().str());
}

}  // namespace

Tensor matmul(const Tensor& a_in, const Tensor& b_in) {
  check_matmul_operands("matmul", a_in, b_in);
  NF_CHECK(a_in.dim() >= 1 && b_in.dim() >= 1, "matmul: operands must have at least 1 dim, got shapes ",
           shape_str(a_in.shape()), " and ", shape_str(b_in.shape()));
  const bool a_vector = a_in.dim() == 1, b_vector = b_in.dim() == 1;
  Tensor a = a_vector ? unsqueeze(a_in, 0) : a_in;   // (K) -> (1, K)
  Tensor b = b_vector ? unsqueeze(b_in, -1) : b_in;  // (K) -> (K, 1)
  const int64_t K = a.shape().back();
  NF_CHECK(K == b.shape()[b.dim() - 2], "matmul: inner dimensions differ: a ", shape_str(a_in.shape()), " and b ",
           shape_str(b_in.shape()), " (", K, " vs ", b.shape()[b.dim() - 2], ")");

  Tensor out;
  if (b.dim() == 2 && a.dim() > 2 && a.is_contiguous()) {
    // (..., M, K) @ (K, N): one GEMM with the batch folded into M
    Shape out_shape = a.shape();
    out_shape.back() = b.shape()[1];
    out = reshape(batched_matmul(reshape(a, {-1, K}), b), out_shape);
  } else {
    const Shape a_batch(a.shape().begin(), a.shape().end() - 2), b_batch(b.shape().begin(), b.shape().end() - 2);
    Shape batch = broadcast_shapes(a_batch, b_batch, "matmul");
    Shape a_shape = batch, b_shape = batch;
    a_shape.insert(a_shape.end(), {a.shape()[a.dim() - 2], K});
    b_shape.insert(b_shape.end(), {K, b.shape().back()});
    out = batched_matmul(expand(a, a_shape), expand(b, b_shape));
  }
  if (a_vector) out = squeeze(out, -2);
  if (b_vector) out = squeeze(out, -1);
  return out;
}

// y = x W^T + b over the last dim of x; computed as one GEMM on x viewed as (rows, in).
//   dx = dy W,  dW = dy^T x,  db = sum over rows of dy
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  check_matmul_operands("linear", x, weight);
  NF_CHECK(weight.dim() == 2, "linear: weight must be 2-D (out, in), got shape ", shape_str(weight.shape()));
  NF_CHECK(x.dim() >= 1 && x.shape().back() == weight.shape()[1], "linear: input ", shape_str(x.shape()),
           " does not match weight ", shape_str(weight.shape()), " (last dim of input must equal weight.shape[1])");
  if (bias.defined()) {
    NF_CHECK(bias.dim() == 1 && bias.shape()[0] == weight.shape()[0], "linear: bias ", shape_str(bias.shape()),
             " does not match weight ", shape_str(weight.shape()), " (expected (", weight.shape()[0], "))");
    NF_CHECK(bias.dtype() == x.dtype(), "linear: bias dtype ", dtype_name(bias.dtype()), " differs from input dtype ",
             dtype_name(x.dtype()));
  }
  Shape out_shape = x.shape();
  out_shape.back() = weight.shape()[0];
  const Tensor x2 = x.detach().reshape({-1, x.shape().back()});
  Tensor y = Tensor::empty({x2.shape()[0], weight.shape()[0]}, x.dtype(), x.device());
  kMatmul.get(x.device(), "linear")(y, x2, weight.detach().t());
  if (bias.defined()) add_(y, bias.detach());
  Tensor out = y.view(out_shape);
  autograd::record("linear", out, {x, weight, bias},
                   [x2, w = weight.detach(), in_shape = x.shape()](const Tensor& g, const autograd::Node& n) {
                     const Tensor g2 = g.reshape({-1, g.shape().back()});
                     std::vector<Tensor> grads(3);
                     if (n.needs_input_grad(0)) grads[0] = batched_matmul(g2, w).view(in_shape);
                     if (n.needs_input_grad(1)) grads[1] = batched_matmul(g2.t(), x2);
                     if (n.needs_input_grad(2)) grads[2] = sum(g2, {0});
                     return grads;
                   });
  return out;
}

}  // namespace nf
