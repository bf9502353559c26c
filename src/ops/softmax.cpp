// softmax and log_softmax along any dim: a fused, numerically stable kernel per row (max, exp-sum,
// normalise), and a fused backward from the saved output.
#include "nanoformer/ops/softmax.h"

#include "nanoformer/autograd/node.h"
#include "nanoformer/core/dispatch.h"
#include "nanoformer/core/error.h"
#include "nanoformer/ops/view.h"
#include "ops/cpu/softmax.h"
#include "ops/reduce_internal.h"

namespace nf {
namespace {

using ForwardKernel = void (*)(const Tensor&, const Tensor&, SoftmaxLayout, bool);
using BackwardKernel = void (*)(const Tensor&, const Tensor&, const Tensor&, SoftmaxLayout, bool);
const DeviceKernels<ForwardKernel> kForward{.cpu = cpu::softmax_forward};
const DeviceKernels<BackwardKernel> kBackward{.cpu = cpu::softmax_backward};

// x's shape seen as (outer, n, inner) around dim d.
SoftmaxLayout layout_around(const Shape& shape, int64_t d) {
  SoftmaxLayout l;
  for (int64_t i = 0; i < static_cast<int64_t>(shape.size()); ++i) {
    if (i < d) l.outer *= shape[i];
    else if (i == d) l.n = shape[i];
    else l.inner *= shape[i];
  }
  return l;
}

Tensor softmax_impl(const char* op, const Tensor& x, int64_t dim, bool log) {
  require_floating_input(x, op);
  const int64_t d = checked_dim(x, dim, op);
  const SoftmaxLayout layout = layout_around(x.shape(), d);
  const Tensor input = contiguous(x.detach());
  Tensor y = Tensor::empty(x.shape(), x.dtype(), x.device());
  kForward.get(x.device(), op)(y, input, layout, log);
  // softmax: dx = y (dy - sum(dy y));  log_softmax: dx = dy - e^y sum(dy)
  autograd::record(op, y, {x}, [y = y.detach(), layout, log, op](const Tensor& g, const autograd::Node&) {
    Tensor dx = Tensor::empty(y.shape(), y.dtype(), y.device());
    kBackward.get(y.device(), op)(dx, contiguous(g), y, layout, log);
    return std::vector<Tensor>{dx};
  });
  return y;
}

}  // namespace

Tensor softmax(const Tensor& x, int64_t dim) { return softmax_impl("softmax", x, dim, false); }
Tensor log_softmax(const Tensor& x, int64_t dim) { return softmax_impl("log_softmax", x, dim, true); }

}  // namespace nf
