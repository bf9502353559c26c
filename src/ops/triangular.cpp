// triu and tril over the last two dims. Both are a fixed 0/1 mask, so the gradient is the upstream
// gradient masked the same way.
#include "nanoformer/ops/triangular.h"

#include "nanoformer/autograd/node.h"
#include "nanoformer/core/dispatch.h"
#include "nanoformer/core/error.h"
#include "ops/cpu/triangular.h"

namespace nf {
namespace {

using TriangularKernel = void (*)(const Tensor& out, const Tensor& x, int64_t diagonal, bool upper);
const DeviceKernels<TriangularKernel> kTriangular{.cpu = cpu::triangular};

Tensor triangular(const char* op, const Tensor& x, int64_t diagonal, bool upper) {
  NF_CHECK(x.defined(), op, ": tensor is undefined");
  NF_CHECK(x.dim() >= 2, op, ": expects at least 2 dims (..., rows, cols), got shape ", shape_str(x.shape()));
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  kTriangular.get(x.device(), op)(out, x, diagonal, upper);
  // out = M * x for a 0/1 mask M:  dx = M * dout
  autograd::record(op, out, {x}, [op, diagonal, upper](const Tensor& g, const autograd::Node&) {
    return std::vector<Tensor>{triangular(op, g, diagonal, upper)};
  });
  return out;
}

}  // namespace

Tensor triu(const Tensor& x, int64_t diagonal) { return triangular("triu", x, diagonal, true); }
Tensor tril(const Tensor& x, int64_t diagonal) { return triangular("tril", x, diagonal, false); }

}  // namespace nf
