// Constant tensors. (Ranges and random draws: factory_random.cpp.)
#include "nanoformer/ops/factory.h"

#include "nanoformer/autograd/grad_mode.h"
#include "nanoformer/core/dispatch.h"
#include "nanoformer/core/error.h"
#include "nanoformer/ops/elementwise.h"
#include "ops/cpu/fill.h"

namespace nf {
namespace {
using FillKernel = void (*)(const Tensor&, double);
const DeviceKernels<FillKernel> kFill{.cpu = cpu::fill};
}  // namespace

void fill_(const Tensor& x, double value) {
  NF_CHECK(x.defined(), "fill_: tensor is undefined");
  NF_CHECK(!(autograd::grad_enabled() && x.requires_grad()), "fill_: in-place update of a tensor that requires grad "
           "while grad mode is on (wrap the update in NoGradGuard)");
  kFill.get(x.device(), "fill_")(x, value);
}

Tensor full(const Shape& shape, double value, DType dtype) {
  Tensor t = Tensor::empty(shape, dtype);
  kFill.get(t.device(), "full")(t, value);
  return t;
}

Tensor zeros(const Shape& shape, DType dtype) { return full(shape, 0.0, dtype); }
Tensor ones(const Shape& shape, DType dtype) { return full(shape, 1.0, dtype); }
Tensor zeros_like(const Tensor& x) { return full(x.shape(), 0.0, x.dtype()); }
Tensor ones_like(const Tensor& x) { return full(x.shape(), 1.0, x.dtype()); }
Tensor full_like(const Tensor& x, double value) { return full(x.shape(), value, x.dtype()); }

}  // namespace nf
