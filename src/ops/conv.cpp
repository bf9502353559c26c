// conv2d as im2col + GEMM. Forward: col = im2col(x) (C*kh*kw, B*Ho*Wo); per group g,
// out_g (O/G, B*Ho*Wo) = W_g (O/G, C/G*kh*kw) @ col_g, all groups in one batched matmul.
// Backward reuses col: dW_g = dout_g @ col_g^T, dcol_g = W_g^T @ dout_g, dx = col2im(dcol), db = sum(dout).
#include "nanoformer/ops/conv.h"

#include "nanoformer/autograd/node.h"
#include "nanoformer/core/dispatch.h"
#include "nanoformer/core/error.h"
#include "nanoformer/ops/elementwise.h"
#include "nanoformer/ops/factory.h"
#include "nanoformer/ops/matmul.h"
#include "nanoformer/ops/reduce.h"
#include "nanoformer/ops/view.h"
#include "ops/cpu/conv.h"

namespace nf {
namespace {

using Im2colKernel = void (*)(const Tensor& col, const Tensor& x, const ConvGeometry& g);
const DeviceKernels<Im2colKernel> kIm2col{.cpu = cpu::im2col};
const DeviceKernels<Im2colKernel> kCol2im{.cpu = cpu::col2im};

ConvGeometry checked_geometry(const Tensor& x, const Tensor& weight, const Tensor& bias, const Conv2dOptions& o) {
  NF_CHECK(x.defined() && weight.defined(), "conv2d: input or weight is undefined");
  NF_CHECK(x.dim() == 4, "conv2d: input must be 4-D (B, C, H, W), got shape ", shape_str(x.shape()));
  NF_CHECK(weight.dim() == 4, "conv2d: weight must be 4-D (out, in/groups, kh, kw), got shape ",
           shape_str(weight.shape()));
  NF_CHECK(x.dtype() == weight.dtype(), "conv2d: input dtype ", dtype_name(x.dtype()), " differs from weight dtype ",
           dtype_name(weight.dtype()));
  NF_CHECK(x.device() == weight.device(), "conv2d: input and weight are on different devices");
  for (int k = 0; k < 2; ++k) {
    NF_CHECK(o.stride[k] >= 1, "conv2d: stride ", o.stride[k], " must be >= 1");
    NF_CHECK(o.padding[k] >= 0, "conv2d: padding ", o.padding[k], " must be >= 0");
    NF_CHECK(o.dilation[k] >= 1, "conv2d: dilation ", o.dilation[k], " must be >= 1");
  }
  const int64_t G = o.groups, C = x.size(1), O = weight.size(0);
  NF_CHECK(G >= 1, "conv2d: groups ", G, " must be >= 1");
  NF_CHECK(C % G == 0, "conv2d: in_channels ", C, " is not divisible by groups ", G);
  NF_CHECK(O % G == 0, "conv2d: out_channels ", O, " is not divisible by groups ", G);
  NF_CHECK(weight.size(1) * G == C, "conv2d: weight ", shape_str(weight.shape()), " expects ", weight.size(1) * G,
           " input channels (in/groups = ", weight.size(1), ", groups ", G, ") but input ", shape_str(x.shape()),
           " has ", C);
  if (bias.defined()) {
    NF_CHECK(bias.dim() == 1 && bias.size(0) == O, "conv2d: bias ", shape_str(bias.shape()), " must be (", O, ")");
    NF_CHECK(bias.dtype() == x.dtype(), "conv2d: bias dtype ", dtype_name(bias.dtype()), " differs from input dtype ",
             dtype_name(x.dtype()));
  }
  ConvGeometry g{x.size(0), C, x.size(2), x.size(3), weight.size(2), weight.size(3), 0, 0,
                      o.stride[0], o.stride[1], o.padding[0], o.padding[1], o.dilation[0], o.dilation[1]};
  // Ho = floor((H + 2p - d(kh - 1) - 1) / s) + 1
  g.out_h = (g.height + 2 * g.pad_h - g.dil_h * (g.kh - 1) - 1) / g.stride_h + 1;
  g.out_w = (g.width + 2 * g.pad_w - g.dil_w * (g.kw - 1) - 1) / g.stride_w + 1;
  NF_CHECK(g.height + 2 * g.pad_h - g.dil_h * (g.kh - 1) - 1 >= 0 && g.width + 2 * g.pad_w - g.dil_w * (g.kw - 1) - 1 >= 0,
           "conv2d: kernel ", g.kh, "x", g.kw, " with dilation ", g.dil_h, "x", g.dil_w, " is larger than the padded input ",
           g.height + 2 * g.pad_h, "x", g.width + 2 * g.pad_w);
  return g;
}

}  // namespace

Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, const Conv2dOptions& options) {
  const ConvGeometry g = checked_geometry(x, weight, bias, options);
  const int64_t G = options.groups, O = weight.size(0), K = weight.size(1) * g.kh * g.kw;
  const int64_t N = g.batch * g.out_h * g.out_w;
  Tensor col = Tensor::empty({G * K, N}, x.dtype(), x.device());
  kIm2col.get(x.device(), "conv2d")(col, contiguous(x.detach()), g);
  const Tensor col3 = col.view({G, K, N});                          // (G, K, B*Ho*Wo)
  const Tensor w3 = reshape(weight.detach(), {G, O / G, K});         // (G, O/G, K)
  const Tensor out3 = matmul(w3, col3);                              // (G, O/G, B*Ho*Wo) = (O, B, Ho, Wo)
  const Tensor out_bchw = permute(out3.view({O, g.batch, g.out_h, g.out_w}), {1, 0, 2, 3});
  Tensor out = bias.defined() ? add(out_bchw, bias.detach().view({1, O, 1, 1})) : contiguous(out_bchw);
  autograd::record("conv2d", out, {x, weight, bias}, [col3, w3, g, x_shape = x.shape(), w_shape = weight.shape()](
                                                         const Tensor& grad, const autograd::Node& n) {
    const int64_t groups = w3.size(0), cols = col3.size(2);
    const Tensor g3 = contiguous(permute(grad, {1, 0, 2, 3})).view({groups, w3.size(1), cols});  // (G, O/G, B*Ho*Wo)
    std::vector<Tensor> grads(3);
    if (n.needs_input_grad(0)) {
      const Tensor dcol = contiguous(matmul(transpose(w3, 1, 2), g3));  // (G, K, B*Ho*Wo)
      grads[0] = zeros(x_shape, grad.dtype());
      kCol2im.get(grad.device(), "conv2d backward")(grads[0], dcol, g);
    }
    if (n.needs_input_grad(1)) grads[1] = matmul(g3, transpose(col3, 1, 2)).view(w_shape);
    if (n.needs_input_grad(2)) grads[2] = sum(grad, {0, 2, 3});
    return grads;
  });
  return out;
}

}  // namespace nf
