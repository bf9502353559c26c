// matmul and linear. The primitive is a batched product of operands with identical batch shapes;
// torch.matmul's promotions (1-D operands) and batch broadcasting are expressed with
// differentiable views around it, so their gradients come for free. Under autocast
// (ops/autocast.h) the primitive multiplies rounded copies of the operands, taken by the same views.
#include "nanoformer/ops/matmul.h"

#include "nanoformer/autograd/node.h"
#include "nanoformer/core/dispatch.h"
#include "nanoformer/core/error.h"
#include "nanoformer/ops/elementwise.h"
#include "nanoformer/ops/reduce.h"
#include "nanoformer/ops/view.h"
#include "ops/autocast_internal.h"
#include "ops/cpu/matmul/linear.h"
#include "ops/cpu/matmul/matmul.h"

namespace nf {
namespace {

using MatmulKernel = void (*)(const Tensor& out, const Tensor& a, const Tensor& b);
const DeviceKernels<MatmulKernel> kMatmul{.cpu = cpu::matmul};
using LinearKernel = void (*)(const Tensor& y, const Tensor& x, const Tensor& weight, const Tensor& bias);
const DeviceKernels<LinearKernel> kLinear{.cpu = cpu::linear};
using LinearTogetherKernel = void (*)(std::span<const GemvProduct> products, const Tensor& x);
const DeviceKernels<LinearTogetherKernel> kLinearTogether{.cpu = cpu::linear};

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

// C (f32) = A B of bf16/f16 operands with f32 sums; no history (autocast's products record below).
Tensor rounded_product(const Tensor& a, const Tensor& b) {
  Shape shape = a.shape();
  shape.back() = b.shape().back();
  Tensor out = Tensor::empty(shape, DType::f32, a.device());
  kMatmul.get(a.device(), "matmul")(out, a, b);
  return out;
}

// A product of the operands a backward saved: autocast's rounded copies (bf16/f16: the rounded
// product) or the f32/f64 operands themselves (the plain, recorded product, as without autocast).
Tensor product(const Tensor& a, const Tensor& b) {
  return a.dtype() == DType::bf16 || a.dtype() == DType::f16 ? rounded_product(a, b) : batched_matmul(a, b);
}

// g rounded as autocast rounded `operand` (g itself when the operand was not rounded)
Tensor round_like(const Tensor& g, const Tensor& operand) {
  return operand.dtype() == g.dtype() ? g : autocast_round(g, operand.dtype());
}

// An operand and the same view of its autocast copy (undefined when autocast is off).
struct Operand {
  Tensor value, rounded;
  template <class View>
  Operand map(View view) const {
    return {view(value), rounded.defined() ? view(rounded) : Tensor()};
  }
};

// C (f32) = r(A) r(B), r rounding to bf16/f16, from operands of identical batch dims:
//   dA = r(dC) r(B)^T,  dB = r(A)^T r(dC)   (PyTorch's autocast saves the rounded operands too)
Tensor batched_matmul(const Operand& a, const Operand& b) {
  if (!a.rounded.defined()) return batched_matmul(a.value, b.value);
  Tensor out = rounded_product(a.rounded, b.rounded);
  autograd::record("matmul", out, {a.value, b.value},
                   [ar = a.rounded, br = b.rounded](const Tensor& g, const autograd::Node& n) {
                     const Tensor gr = round_like(g, ar);
                     return std::vector<Tensor>{n.needs_input_grad(0) ? rounded_product(gr, br.transpose(-1, -2)) : Tensor(),
                                                n.needs_input_grad(1) ? rounded_product(ar.transpose(-1, -2), gr) : Tensor()};
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
  const DType rounding = autocast_operand_dtype(a_in, b_in);
  const auto operand = [rounding](const Tensor& t) {
    return Operand{t, rounding == DType::f32 ? Tensor() : autocast_round(t, rounding)};
  };
  const bool a_vector = a_in.dim() == 1, b_vector = b_in.dim() == 1;
  const Operand a = a_vector ? operand(a_in).map([](const Tensor& t) { return unsqueeze(t, 0); })    // (K) -> (1, K)
                             : operand(a_in);
  const Operand b = b_vector ? operand(b_in).map([](const Tensor& t) { return unsqueeze(t, -1); })   // (K) -> (K, 1)
                             : operand(b_in);
  const Shape& as = a.value.shape();
  const Shape& bs = b.value.shape();
  const int64_t K = as.back();
  NF_CHECK(K == bs[bs.size() - 2], "matmul: inner dimensions differ: a ", shape_str(a_in.shape()), " and b ",
           shape_str(b_in.shape()), " (", K, " vs ", bs[bs.size() - 2], ")");

  Tensor out;
  if (bs.size() == 2 && as.size() > 2 && a.value.is_contiguous()) {
    // (..., M, K) @ (K, N): one GEMM with the batch folded into M
    Shape out_shape = as;
    out_shape.back() = bs[1];
    out = reshape(batched_matmul(a.map([K](const Tensor& t) { return reshape(t, {-1, K}); }), b), out_shape);
  } else {
    const Shape a_batch(as.begin(), as.end() - 2), b_batch(bs.begin(), bs.end() - 2);
    Shape batch = broadcast_shapes(a_batch, b_batch, "matmul");
    Shape a_shape = batch, b_shape = batch;
    a_shape.insert(a_shape.end(), {as[as.size() - 2], K});
    b_shape.insert(b_shape.end(), {K, bs.back()});
    out = batched_matmul(a.map([&a_shape](const Tensor& t) { return expand(t, a_shape); }),
                         b.map([&b_shape](const Tensor& t) { return expand(t, b_shape); }));
  }
  if (a_vector) out = squeeze(out, -2);
  if (b_vector) out = squeeze(out, -1);
  return out;
}

// y = x W^T + b over the last dim of x; computed as one GEMM on x viewed as (rows, in), or for a
// few rows as matrix-vector products (ops/cpu/matmul/gemv.h).
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
  // the operands the GEMMs read: x and W, or under autocast their rounded copies
  const DType rounding = autocast_operand_dtype(x, weight);
  const Tensor xo = rounding == DType::f32 ? x2 : autocast_round(x2, rounding);
  const Tensor wo = rounding == DType::f32 ? weight.detach() : autocast_round(weight, rounding);
  Tensor y = Tensor::empty({x2.shape()[0], weight.shape()[0]}, x.dtype(), x.device());
  kLinear.get(x.device(), "linear")(y, xo, wo, bias.defined() ? bias.detach() : Tensor());
  Tensor out = y.view(out_shape);
  autograd::record("linear", out, {x, weight, bias},
                   [xo, wo, in_shape = x.shape()](const Tensor& g, const autograd::Node& n) {
                     const Tensor g2 = g.reshape({-1, g.shape().back()});
                     const Tensor go = round_like(g2, wo);
                     std::vector<Tensor> grads(3);
                     if (n.needs_input_grad(0)) grads[0] = product(go, wo).view(in_shape);
                     if (n.needs_input_grad(1)) grads[1] = product(go.t(), xo);
                     if (n.needs_input_grad(2)) grads[2] = sum(g2, {0});
                     return grads;
                   });
  return out;
}

std::vector<Tensor> linear_together(const Tensor& x, std::span<const Tensor> weights, std::span<const Tensor> biases) {
  NF_CHECK(weights.size() == biases.size(), "linear_together: ", weights.size(), " weights and ", biases.size(), " biases");
  const Tensor x2 = x.dim() >= 1 ? x.detach().reshape({-1, x.shape().back()}) : x;
  bool together = weights.size() > 1 && x.dim() >= 1 && x.dtype() == DType::f32 && !autograd::needs_record({&x});
  for (size_t i = 0; i < weights.size() && together; ++i)
    together = !autograd::needs_record({&weights[i], &biases[i]}) && autocast_operand_dtype(x, weights[i]) == DType::f32 &&
               weights[i].dim() == 2 && weights[i].size(1) == x.shape().back() && weights[i].dtype() == DType::f32 &&
               (!biases[i].defined() || (biases[i].dim() == 1 && biases[i].size(0) == weights[i].size(0) &&
                                         biases[i].dtype() == DType::f32));
  std::vector<Tensor> out;
  if (!together) {
    for (size_t i = 0; i < weights.size(); ++i) out.push_back(linear(x, weights[i], biases[i]));
    return out;
  }
  std::vector<Tensor> ys;
  std::vector<GemvProduct> products;
  ys.reserve(weights.size());
  for (size_t i = 0; i < weights.size(); ++i) {
    ys.push_back(Tensor::empty({x2.size(0), weights[i].size(0)}, x.dtype(), x.device()));
    products.push_back({&ys.back(), &weights[i], &biases[i]});
  }
  kLinearTogether.get(x.device(), "linear")(products, x2);
  for (size_t i = 0; i < weights.size(); ++i) {
    Shape shape = x.shape();
    shape.back() = weights[i].size(0);
    out.push_back(ys[i].view(shape));
  }
  return out;
}

}  // namespace nf
