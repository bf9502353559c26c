// Extrema: max/min along a dim or over all elements, argmax/argmin.
//
// Gradients follow PyTorch: max(x, dim) / min(x, dim) send each output's gradient to the index
// they report, the FIRST extremum of the slice; max(x) / min(x) over all elements share it equally
// among all elements that tie for the extremum (PyTorch's evenly_distribute_backward).
#include "nanoformer/autograd/node.h"
#include "nanoformer/core/dispatch.h"
#include "nanoformer/core/error.h"
#include "nanoformer/ops/factory.h"
#include "nanoformer/ops/reduce.h"
#include "nanoformer/ops/view.h"
#include "ops/cpu/reduce_extrema.h"
#include "ops/reduce_internal.h"

namespace nf {
namespace {

using ExtremumKernel = void (*)(const Tensor&, const Tensor&, const Tensor&, const std::vector<bool>&, Extremum);
using ScatterKernel = void (*)(const Tensor&, const Tensor&, const Tensor&, const std::vector<bool>&);
using TiesKernel = void (*)(const Tensor&, const Tensor&, const Tensor&, const Tensor&);
const DeviceKernels<ExtremumKernel> kExtremum{.cpu = cpu::extremum};
const DeviceKernels<ScatterKernel> kScatterToIndices{.cpu = cpu::scatter_to_indices};
const DeviceKernels<TiesKernel> kDistributeToTies{.cpu = cpu::distribute_to_ties};

struct ExtremumAlongDim {
  Tensor values, indices;  // kept shape (no keepdim)
  ReducedDims dims;
};

// Runs the extremum kernel along `dim`; values only when asked for (argmax/argmin skip them).
ExtremumAlongDim extremum_along(const char* op, Extremum kind, const Tensor& x, int64_t dim, bool want_values) {
  NF_CHECK(x.defined(), op, ": tensor is undefined");
  NF_CHECK(x.dtype() != DType::boolean && x.dtype() != DType::bf16 && x.dtype() != DType::f16, op, ": dtype ",
           dtype_name(x.dtype()), " of shape ", shape_str(x.shape()), " is not supported (expects f32, f64, i32, i64)");
  ExtremumAlongDim r;
  r.dims = reduced_dims(x, {dim}, op);
  NF_CHECK(r.dims.count > 0, op, ": cannot reduce dim ", dim, " of size 0 in shape ", shape_str(x.shape()));
  r.indices = Tensor::empty(r.dims.kept_shape, DType::i64, x.device());
  if (want_values) r.values = Tensor::empty(r.dims.kept_shape, x.dtype(), x.device());
  kExtremum.get(x.device(), op)(r.values, r.indices, x, r.dims.mask, kind);
  return r;
}

Tensor extremum_dim(const char* op, Extremum kind, const Tensor& x, int64_t dim, bool keepdim) {
  ExtremumAlongDim r = extremum_along(op, kind, x, dim, true);
  Tensor out = keepdim ? r.values.view(r.dims.keepdim_shape) : r.values;
  // dx = g at the reported (first) extremum of each slice, 0 elsewhere
  autograd::record(op, out, {x},
                   [indices = r.indices, mask = r.dims.mask, kept = r.dims.kept_shape, in = x.shape()](
                       const Tensor& g, const autograd::Node&) {
                     Tensor dx = zeros(in, g.dtype());
                     kScatterToIndices.get(g.device(), "max/min backward")(dx, contiguous(reshape(g, kept)), indices, mask);
                     return std::vector<Tensor>{dx};
                   });
  return out;
}

Tensor extremum_all(const char* op, Extremum kind, const Tensor& x) {
  NF_CHECK(x.defined(), op, ": tensor is undefined");
  NF_CHECK(x.numel() > 0, op, ": cannot reduce an empty tensor of shape ", shape_str(x.shape()),
           " over all elements");
  const ReducedDims dims = reduced_dims(x, {}, op);
  Tensor out = Tensor::empty({}, x.dtype(), x.device());
  kExtremum.get(x.device(), op)(out, Tensor::empty({}, DType::i64, x.device()), x, dims.mask, kind);
  // dx = g / ties where x equals the extremum (NaN matching NaN), 0 elsewhere
  autograd::record(op, out, {x}, [x = x.detach(), value = out.detach()](const Tensor& g, const autograd::Node&) {
    Tensor dx = Tensor::empty(x.shape(), x.dtype(), x.device());
    kDistributeToTies.get(x.device(), "max/min backward")(dx, contiguous(x), value, contiguous(g));
    return std::vector<Tensor>{dx};
  });
  return out;
}

Tensor arg_extremum(const char* op, Extremum kind, const Tensor& x, int64_t dim, bool keepdim) {
  ExtremumAlongDim r = extremum_along(op, kind, x, dim, false);
  return keepdim ? r.indices.view(r.dims.keepdim_shape) : r.indices;
}

}  // namespace

Tensor max(const Tensor& x, int64_t dim, bool keepdim) { return extremum_dim("max", Extremum::max, x, dim, keepdim); }
Tensor min(const Tensor& x, int64_t dim, bool keepdim) { return extremum_dim("min", Extremum::min, x, dim, keepdim); }
Tensor max(const Tensor& x) { return extremum_all("max", Extremum::max, x); }
Tensor min(const Tensor& x) { return extremum_all("min", Extremum::min, x); }
Tensor argmax(const Tensor& x, int64_t dim, bool keepdim) {
  return arg_extremum("argmax", Extremum::max, x, dim, keepdim);
}
Tensor argmin(const Tensor& x, int64_t dim, bool keepdim) {
  return arg_extremum("argmin", Extremum::min, x, dim, keepdim);
}

}  // namespace nf
