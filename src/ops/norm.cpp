// layer_norm and rms_norm over the last dim: one fused kernel per row forward, saving the per-row
// statistics, and one fused kernel per row backward giving the input, weight and bias gradients.
#include "nanoformer/ops/norm.h"

#include <cmath>

#include "nanoformer/autograd/node.h"
#include "nanoformer/core/dispatch.h"
#include "nanoformer/core/error.h"
#include "nanoformer/ops/elementwise.h"
#include "nanoformer/ops/reduce.h"
#include "nanoformer/ops/view.h"
#include "ops/cpu/norm.h"
#include "ops/reduce_internal.h"

namespace nf {
namespace {

using LayerNormForward = void (*)(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                                  const Tensor&, double);
using LayerNormBackward = void (*)(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                                   const Tensor&, const Tensor&, const Tensor&);
using RmsNormForward = void (*)(const Tensor&, const Tensor&, const Tensor&, const Tensor&, double, RmsNormForm);
using RmsNormBackward = void (*)(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                                 const Tensor&, double, RmsNormForm);
const DeviceKernels<LayerNormForward> kLayerNormForward{.cpu = cpu::layer_norm_forward};
const DeviceKernels<LayerNormBackward> kLayerNormBackward{.cpu = cpu::layer_norm_backward};
const DeviceKernels<RmsNormForward> kRmsNormForward{.cpu = cpu::rms_norm_forward};
const DeviceKernels<RmsNormBackward> kRmsNormBackward{.cpu = cpu::rms_norm_backward};

// x is f32/f64 with at least one dim, eps positive and finite; a defined parameter (weight or bias)
// is (n) with x's dtype and device.
void check_norm_inputs(const char* op, const Tensor& x, double eps) {
  require_floating_input(x, op);
  NF_CHECK(x.dim() >= 1, op, ": input must have at least one dim (the normalized one), got a scalar");
  NF_CHECK(eps > 0.0 && std::isfinite(eps), op, ": eps must be positive and finite, got ", eps);
}

void check_parameter(const char* op, const char* role, const Tensor& p, const Tensor& x) {
  if (!p.defined()) return;
  NF_CHECK(p.dim() == 1 && p.size(0) == x.size(-1), op, ": ", role, " ", shape_str(p.shape()),
           " does not match the normalized (last) dim of x ", shape_str(x.shape()));
  NF_CHECK(p.dtype() == x.dtype(), op, ": ", role, " dtype ", dtype_name(p.dtype()), " differs from input dtype ",
           dtype_name(x.dtype()));
  NF_CHECK(p.device() == x.device(), op, ": ", role, " and x are on different devices");
}

int64_t rows_of(const Tensor& x) { return x.size(-1) == 0 ? 0 : x.numel() / x.size(-1); }

Tensor detached_contiguous(const Tensor& t) { return t.defined() ? contiguous(t.detach()) : Tensor(); }

// An empty gradient buffer for a parameter that needs one, else undefined (the kernel skips it).
Tensor grad_buffer(const autograd::Node& node, size_t input, const Tensor& like) {
  return node.needs_input_grad(input) ? Tensor::empty(like.shape(), like.dtype(), like.device()) : Tensor();
}

}  // namespace

// y = (x - mean) rstd w + b, rstd = 1 / sqrt(var + eps);
// dx = rstd (h - mean(h) - xhat mean(h xhat)) with h = dy w, xhat = (x - mean) rstd;
// dw = sum_rows dy xhat;  db = sum_rows dy
Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps, LayerNormForm form) {
  check_norm_inputs("layer_norm", x, eps);
  check_parameter("layer_norm", "weight", weight, x);
  check_parameter("layer_norm", "bias", bias, x);
  if (form == LayerNormForm::std_plus_eps) {
    // y = (x - mean) / (sqrt(mean((x - mean)^2)) + eps) * weight + bias
    const Tensor centered = sub(x, mean(x, {-1}, true));
    Tensor y = div(centered, add(sqrt(mean(square(centered), {-1}, true)), eps));
    if (weight.defined()) y = mul(y, weight);
    return bias.defined() ? add(y, bias) : y;
  }
  const Tensor input = contiguous(x.detach()), w = detached_contiguous(weight), b = detached_contiguous(bias);
  Tensor y = Tensor::empty(x.shape(), x.dtype(), x.device());
  Tensor mean = Tensor::empty({rows_of(x)}, x.dtype(), x.device());
  Tensor rstd = Tensor::empty({rows_of(x)}, x.dtype(), x.device());
  kLayerNormForward.get(x.device(), "layer_norm")(y, mean, rstd, input, w, b, eps);
  autograd::record("layer_norm", y, {x, weight, bias},
                   [input, w, b, mean, rstd](const Tensor& g, const autograd::Node& node) {
                     Tensor dx = grad_buffer(node, 0, input);
                     Tensor dw = grad_buffer(node, 1, w), db = grad_buffer(node, 2, b);
                     kLayerNormBackward.get(input.device(), "layer_norm")(dx, dw, db, contiguous(g), input, mean,
                                                                          rstd, w);
                     return std::vector<Tensor>{dx, dw, db};
                   });
  return y;
}

// rsqrt:        y = x r w, r = 1 / sqrt(ms + eps), ms = mean(x^2);  dx = r (h - x r^2 s / n)
// rms_plus_eps: y = x r w, r = 1 / (rms + eps), rms = sqrt(ms);     dx = r (h - x r s / (n rms))
// with h = dy w, s = sum(h x);  dw = sum_rows dy x r
Tensor rms_norm(const Tensor& x, const Tensor& weight, double eps, RmsNormForm form) {
  check_norm_inputs("rms_norm", x, eps);
  check_parameter("rms_norm", "weight", weight, x);
  const Tensor input = contiguous(x.detach()), w = detached_contiguous(weight);
  Tensor y = Tensor::empty(x.shape(), x.dtype(), x.device());
  Tensor stat = Tensor::empty({rows_of(x)}, x.dtype(), x.device());
  kRmsNormForward.get(x.device(), "rms_norm")(y, stat, input, w, eps, form);
  autograd::record("rms_norm", y, {x, weight}, [input, w, stat, eps, form](const Tensor& g, const autograd::Node& node) {
    Tensor dx = grad_buffer(node, 0, input), dw = grad_buffer(node, 1, w);
    kRmsNormBackward.get(input.device(), "rms_norm")(dx, dw, contiguous(g), input, stat, w, eps, form);
    return std::vector<Tensor>{dx, dw};
  });
  return y;
}

}  // namespace nf
