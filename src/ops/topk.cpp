// topk: the kernel finds the positions on a contiguous copy with dim moved last; the values are a
// gather of x at those positions, so the gradient is gather's (scattered back to the positions).
#include "nanoformer/ops/topk.h"

#include "nanoformer/core/dispatch.h"
#include "nanoformer/core/error.h"
#include "nanoformer/ops/indexing.h"
#include "nanoformer/ops/view.h"
#include "ops/cpu/topk.h"

namespace nf {
namespace {
using TopkKernel = void (*)(const Tensor& indices, const Tensor& x);
const DeviceKernels<TopkKernel> kTopkIndices{.cpu = cpu::topk_indices};
}  // namespace

TopK topk(const Tensor& x, int64_t k, int64_t dim) {
  NF_CHECK(x.defined(), "topk: input tensor is undefined");
  NF_CHECK(x.dim() > 0, "topk: cannot select from a zero-dimensional tensor (shape ())");
  NF_CHECK(is_floating(x.dtype()), "topk: dtype ", dtype_name(x.dtype()), " (shape ", shape_str(x.shape()),
           ") is not floating");
  const int64_t d = normalize_dim(dim, x.dim(), "topk");
  NF_CHECK(k >= 0 && k <= x.size(d), "topk: k ", k, " is out of range [0, ", x.size(d), "] for dim ", d,
           " of shape ", shape_str(x.shape()));
  const Tensor last = contiguous(transpose(x.detach(), d, -1));  // (..., n) with dim last
  Shape shape = last.shape();
  shape.back() = k;
  Tensor idx = Tensor::empty(shape, DType::i64, x.device());
  kTopkIndices.get(x.device(), "topk")(idx, last);
  idx = contiguous(transpose(idx, d, -1));
  return {gather(x, d, idx), idx};
}

}  // namespace nf
