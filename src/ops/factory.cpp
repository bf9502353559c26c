// Constant tensors. (Ranges and random draws: factory_random.cpp.)
#include "nanoformer/ops/factory.h"

#include <algorithm>
#include <numeric>

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

Tensor empty_like(const Tensor& x) { return empty_in_order(x.shape(), x.strides(), x.dtype(), x.device()); }

Tensor empty_in_order(const Shape& shape, const Shape& strides, DType dtype, Device device) {
  NF_CHECK(strides.size() == shape.size(), "empty_in_order: ", strides.size(), " strides for shape ", shape_str(shape));
  if (shape_numel(shape) == 0) return Tensor::empty(shape, dtype, device);
  // dims from the outermost to the innermost by stride; dense when, from the innermost out, each
  // stride is the product of the sizes inside it (size-1 dims never matter)
  std::vector<size_t> order(shape.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return strides[a] > strides[b]; });
  Shape dense(shape.size());
  int64_t inner = 1;
  for (auto d = order.rbegin(); d != order.rend(); ++d) {
    if (shape[*d] != 1 && strides[*d] != inner) return Tensor::empty(shape, dtype, device);
    dense[*d] = inner;
    inner *= shape[*d];
  }
  auto storage = std::make_shared<Storage>(static_cast<size_t>(inner) * dtype_size(dtype), device);
  return Tensor::from_storage(std::move(storage), shape, dense, 0, dtype);
}

}  // namespace nf
