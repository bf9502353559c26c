// Statistics reductions: var.
#include <algorithm>

#include "nanoformer/autograd/node.h"
#include "nanoformer/core/dispatch.h"
#include "nanoformer/core/error.h"
#include "nanoformer/ops/elementwise.h"
#include "nanoformer/ops/reduce.h"
#include "nanoformer/ops/view.h"
#include "ops/cpu/reduce.h"
#include "ops/reduce_internal.h"

namespace nf {
namespace {
using VarKernel = void (*)(const Tensor&, const Tensor&, const std::vector<bool>&, int64_t);
const DeviceKernels<VarKernel> kVar{.cpu = cpu::var};
}  // namespace

Tensor var(const Tensor& x, const std::vector<int64_t>& dims, int64_t correction, bool keepdim) {
  require_floating_input(x, "var");
  NF_CHECK(correction >= 0, "var: correction must be non-negative, got ", correction, " for shape ",
           shape_str(x.shape()));
  const ReducedDims r = reduced_dims(x, dims, "var");
  Tensor out = Tensor::empty(r.kept_shape, x.dtype(), x.device());
  kVar.get(x.device(), "var")(out, x, r.mask, correction);
  if (keepdim) out = out.view(r.keepdim_shape);
  // d var / dx = 2 (x - mean) / (N - correction)
  const double dof = static_cast<double>(std::max<int64_t>(0, r.count - correction));
  autograd::record("var", out, {x},
                   [x = x.detach(), dims, keep = r.keepdim_shape, dof](const Tensor& g, const autograd::Node&) {
                     const Tensor centered = sub(x, mean(x, dims, true));
                     return std::vector<Tensor>{mul(centered, mul(reshape(g, keep), 2.0 / dof))};
                   });
  return out;
}

}  // namespace nf
