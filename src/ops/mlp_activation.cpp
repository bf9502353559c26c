// relu_squared and swiglu: fused forward and backward kernels (see ops/cpu/mlp_activation.h).
#include "nanoformer/ops/mlp_activation.h"

#include "nanoformer/autograd/node.h"
#include "nanoformer/core/dispatch.h"
#include "nanoformer/core/error.h"
#include "ops/cpu/mlp_activation.h"
#include "ops/reduce_internal.h"

namespace nf {
namespace {

using UnaryKernel = void (*)(const Tensor&, const Tensor&);
using BinaryKernel = void (*)(const Tensor&, const Tensor&, const Tensor&);
using SwigluBackwardKernel = void (*)(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&);
const DeviceKernels<UnaryKernel> kReluSquared{.cpu = cpu::relu_squared};
const DeviceKernels<BinaryKernel> kReluSquaredBackward{.cpu = cpu::relu_squared_backward};
const DeviceKernels<BinaryKernel> kSwiglu{.cpu = cpu::swiglu};
const DeviceKernels<SwigluBackwardKernel> kSwigluBackward{.cpu = cpu::swiglu_backward};

}  // namespace

// y = max(x, 0)^2;  dx = 2 max(x, 0) dy
Tensor relu_squared(const Tensor& x) {
  require_floating_input(x, "relu_squared");
  Tensor y = Tensor::empty(x.shape(), x.dtype(), x.device());
  kReluSquared.get(x.device(), "relu_squared")(y, x);
  autograd::record("relu_squared", y, {x}, [x = x.detach()](const Tensor& g, const autograd::Node&) {
    Tensor dx = Tensor::empty(x.shape(), x.dtype(), x.device());
    kReluSquaredBackward.get(x.device(), "relu_squared")(dx, g, x);
    return std::vector<Tensor>{dx};
  });
  return y;
}

// y = silu(a) b;  da = dy b s (1 + a (1 - s)), db = dy silu(a), s = sigmoid(a)
Tensor swiglu(const Tensor& gate, const Tensor& up) {
  require_floating_input(gate, "swiglu");
  require_floating_input(up, "swiglu");
  NF_CHECK(gate.shape() == up.shape(), "swiglu: gate ", shape_str(gate.shape()), " and up ", shape_str(up.shape()),
           " must have the same shape");
  NF_CHECK(gate.dtype() == up.dtype(), "swiglu: gate dtype ", dtype_name(gate.dtype()), " differs from up dtype ",
           dtype_name(up.dtype()));
  NF_CHECK(gate.device() == up.device(), "swiglu: gate and up are on different devices");
  Tensor y = Tensor::empty(gate.shape(), gate.dtype(), gate.device());
  kSwiglu.get(gate.device(), "swiglu")(y, gate, up);
  autograd::record("swiglu", y, {gate, up},
                   [a = gate.detach(), b = up.detach()](const Tensor& g, const autograd::Node&) {
                     Tensor da = Tensor::empty(a.shape(), a.dtype(), a.device());
                     Tensor db = Tensor::empty(b.shape(), b.dtype(), b.device());
                     kSwigluBackward.get(a.device(), "swiglu")(da, db, g, a, b);
                     return std::vector<Tensor>{da, db};
                   });
  return y;
}

}  // namespace nf
