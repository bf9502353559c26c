// Sum-type reductions: sum, mean, sum_to. (max/min/argmax/argmin: reduce_extrema.cpp; var:
// reduce_stats.cpp.)
#include "nanoformer/ops/reduce.h"

#include <algorithm>

#include "nanoformer/autograd/node.h"
#include "nanoformer/core/dispatch.h"
#include "nanoformer/core/error.h"
#include "nanoformer/ops/elementwise.h"
#include "nanoformer/ops/view.h"
#include "ops/cpu/reduce.h"
#include "ops/reduce_internal.h"

namespace nf {
namespace {
using ReduceKernel = void (*)(const Tensor&, const Tensor&, const std::vector<bool>&);
const DeviceKernels<ReduceKernel> kSum{.cpu = cpu::sum};
const DeviceKernels<ReduceKernel> kMean{.cpu = cpu::mean};
}  // namespace

int64_t checked_dim(const Tensor& x, int64_t dim, const char* op) {
  const int64_t n = std::max<int64_t>(x.dim(), 1);
  NF_CHECK(dim >= -n && dim < n, op, ": dim ", dim, " out of range for a tensor of shape ", shape_str(x.shape()),
           " (expected ", -n, " to ", n - 1, ")");
  return dim < 0 ? dim + n : dim;
}

ReducedDims reduced_dims(const Tensor& x, const std::vector<int64_t>& dims, const char* op) {
  ReducedDims r;
  r.mask.assign(static_cast<size_t>(x.dim()), dims.empty());
  for (int64_t d : dims) {
    const int64_t k = checked_dim(x, d, op);
    if (x.dim() == 0) continue;  // a 0-dim tensor accepts dim 0 / -1 and has nothing to fold
    NF_CHECK(!r.mask[k], op, ": dim ", d, " repeated in ", shape_str(dims));
    r.mask[k] = true;
  }
  r.count = 1;
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (r.mask[d]) {
      r.count *= x.shape()[d];
      r.keepdim_shape.push_back(1);
    } else {
      r.kept_shape.push_back(x.shape()[d]);
      r.keepdim_shape.push_back(x.shape()[d]);
    }
  }
  return r;
}

void require_floating_input(const Tensor& x, const char* op) {
  NF_CHECK(x.defined(), op, ": tensor is undefined");
  NF_CHECK(x.dtype() == DType::f32 || x.dtype() == DType::f64, op, ": dtype ", dtype_name(x.dtype()), " of shape ",
           shape_str(x.shape()), " is not supported (expects f32 or f64)");
}

Tensor sum(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
  NF_CHECK(x.defined(), "sum: tensor is undefined");
  const ReducedDims r = reduced_dims(x, dims, "sum");
  Tensor out = Tensor::empty(r.kept_shape, x.dtype(), x.device());
  kSum.get(x.device(), "sum")(out, x, r.mask);
  if (keepdim) out = out.view(r.keepdim_shape);
  // d sum / dx = 1 for every summed element: the gradient broadcasts back over the summed dims
  autograd::record("sum", out, {x}, [keep = r.keepdim_shape, in = x.shape()](const Tensor& g, const autograd::Node&) {
    return std::vector<Tensor>{expand(reshape(g, keep), in)};
  });
  return out;
}

Tensor sum(const Tensor& x) { return sum(x, {}, false); }

Tensor mean(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
  require_floating_input(x, "mean");
  const ReducedDims r = reduced_dims(x, dims, "mean");
  Tensor out = Tensor::empty(r.kept_shape, x.dtype(), x.device());
  kMean.get(x.device(), "mean")(out, x, r.mask);
  if (keepdim) out = out.view(r.keepdim_shape);
  // d mean / dx = 1 / count for every averaged element
  autograd::record("mean", out, {x},
                   [keep = r.keepdim_shape, in = x.shape(), count = r.count](const Tensor& g, const autograd::Node&) {
                     return std::vector<Tensor>{expand(reshape(div(g, static_cast<double>(count)), keep), in)};
                   });
  return out;
}

Tensor mean(const Tensor& x) { return mean(x, {}, false); }

Tensor sum_to(const Tensor& x, const Shape& shape) {
  if (x.shape() == shape) return x;
  NF_CHECK(shape.size() <= x.shape().size(), "sum_to: cannot sum shape ", shape_str(x.shape()), " to ",
           shape_str(shape));
  const size_t lead = x.shape().size() - shape.size();
  std::vector<int64_t> dims;
  for (size_t d = 0; d < x.shape().size(); ++d) {
    if (d < lead) {
      dims.push_back(static_cast<int64_t>(d));
    } else if (shape[d - lead] == 1 && x.shape()[d] != 1) {
      dims.push_back(static_cast<int64_t>(d));
    } else {
      NF_CHECK(shape[d - lead] == x.shape()[d], "sum_to: cannot sum shape ", shape_str(x.shape()), " to ",
               shape_str(shape));
    }
  }
  if (dims.empty()) return reshape(x, shape);
  return reshape(sum(x, dims, true), shape);
}

}  // namespace nf
