// index_select, index_add, gather and scatter_add. Indices are validated before any kernel runs, so an
// out-of-range index throws instead of reading or writing out of bounds. Each backward is the
// adjoint scatter or gather of the forward.
#include "nanoformer/ops/indexing.h"

#include "nanoformer/autograd/node.h"
#include "nanoformer/core/dispatch.h"
#include "nanoformer/core/error.h"
#include "nanoformer/ops/factory.h"
#include "nanoformer/ops/view.h"
#include "ops/cpu/indexing.h"
#include "ops/indexing_internal.h"

namespace nf {
namespace {

using FirstOutOfRangeKernel = int64_t (*)(const Tensor& index, int64_t size);
const DeviceKernels<FirstOutOfRangeKernel> kFirstOutOfRange{.cpu = cpu::first_out_of_range};
using IndexKernel = void (*)(const Tensor& out, const Tensor& in, const Tensor& index, int64_t dim);
const DeviceKernels<IndexKernel> kIndexSelect{.cpu = cpu::index_select};
const DeviceKernels<IndexKernel> kIndexAdd{.cpu = cpu::index_add};
const DeviceKernels<IndexKernel> kGather{.cpu = cpu::gather};
const DeviceKernels<IndexKernel> kScatterAdd{.cpu = cpu::scatter_add};

void check_defined(const char* op, const Tensor& x, const Tensor& index) {
  NF_CHECK(x.defined(), op, ": input tensor is undefined");
  NF_CHECK(index.defined(), op, ": index tensor is undefined");
  NF_CHECK(x.dim() > 0, op, ": cannot index a zero-dimensional tensor (shape ())");
  NF_CHECK(index.device() == x.device(), op, ": index is on ", index.device().str(), " but the input is on ",
           x.device().str());
}

// Shapes for gather / scatter_add: index has x's rank and fits inside x except along dim.
void check_index_fits(const char* op, const Tensor& x, const Tensor& index, int64_t dim) {
  NF_CHECK(index.dim() == x.dim(), op, ": index shape ", shape_str(index.shape()), " and input shape ",
           shape_str(x.shape()), " differ in number of dims");
  for (int64_t k = 0; k < x.dim(); ++k) {
    NF_CHECK(k == dim || index.shape()[k] <= x.shape()[k], op, ": index shape ", shape_str(index.shape()),
             " exceeds input shape ", shape_str(x.shape()), " in dim ", k, " (only dim ", dim, " may be larger)");
  }
}

// out[p] = x[p with p[dim] := index[p]], out shaped like index (validated index, no autograd).
Tensor gather_values(const Tensor& x, int64_t dim, const Tensor& index) {
  Tensor out = Tensor::empty(index.shape(), x.dtype(), x.device());
  kGather.get(x.device(), "gather")(out, x, index, dim);
  return out;
}

}  // namespace

Tensor checked_index(const char* op, const Tensor& index, const Shape& target_shape, int64_t dim) {
  NF_CHECK(index.dtype() == DType::i64 || index.dtype() == DType::i32, op, ": index dtype ",
           dtype_name(index.dtype()), " (shape ", shape_str(index.shape()), ") must be i64 or i32");
  const Tensor idx = contiguous(index);
  const int64_t size = target_shape[static_cast<size_t>(dim)];
  const int64_t bad = kFirstOutOfRange.get(idx.device(), op)(idx, size);
  NF_CHECK(bad < 0, op, ": index ", static_cast<int64_t>(idx.reshape({-1}).at({bad})), " (at flat position ", bad,
           " of index shape ", shape_str(index.shape()), ") is out of range [0, ", size, ") for dim ", dim,
           " of shape ", shape_str(target_shape));
  return idx;
}

Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index) {
  check_defined("index_select", x, index);
  const int64_t d = normalize_dim(dim, x.dim(), "index_select");
  NF_CHECK(index.dim() <= 1, "index_select: index must be 1-D, got shape ", shape_str(index.shape()),
           " for input shape ", shape_str(x.shape()));
  const Tensor idx = checked_index("index_select", index, x.shape(), d);
  Shape shape = x.shape();
  shape[d] = idx.numel();
  Tensor out = Tensor::empty(shape, x.dtype(), x.device());
  kIndexSelect.get(x.device(), "index_select")(out, contiguous(x.detach()), idx, d);
  // out[.., k, ..] = x[.., index[k], ..]:  dx[.., index[k], ..] += dout[.., k, ..] (index_add)
  autograd::record("index_select", out, {x}, [idx, d, in = x.shape()](const Tensor& g, const autograd::Node&) {
    Tensor gx = zeros(in, g.dtype());
    kIndexAdd.get(g.device(), "index_select backward")(gx, contiguous(g), idx, d);
    return std::vector<Tensor>{gx};
  });
  return out;
}

Tensor gather(const Tensor& x, int64_t dim, const Tensor& index) {
  check_defined("gather", x, index);
  const int64_t d = normalize_dim(dim, x.dim(), "gather");
  check_index_fits("gather", x, index, d);
  const Tensor idx = checked_index("gather", index, x.shape(), d);
  Tensor out = gather_values(x.detach(), d, idx);
  // out[p] = x[p with p[d] := index[p]]:  dx[p with p[d] := index[p]] += dout[p] (scatter_add)
  autograd::record("gather", out, {x}, [idx, d, in = x.shape()](const Tensor& g, const autograd::Node&) {
    Tensor gx = zeros(in, g.dtype());
    kScatterAdd.get(g.device(), "gather backward")(gx, g, idx, d);
    return std::vector<Tensor>{gx};
  });
  return out;
}

Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  check_defined("scatter_add", x, index);
  NF_CHECK(src.defined(), "scatter_add: src tensor is undefined");
  const int64_t d = normalize_dim(dim, x.dim(), "scatter_add");
  NF_CHECK(src.dtype() == x.dtype(), "scatter_add: src dtype ", dtype_name(src.dtype()), " ", shape_str(src.shape()),
           " differs from input dtype ", dtype_name(x.dtype()), " ", shape_str(x.shape()));
  NF_CHECK(src.device() == x.device(), "scatter_add: src is on ", src.device().str(), " but the input is on ",
           x.device().str());
  check_index_fits("scatter_add", x, index, d);
  NF_CHECK(src.dim() == index.dim(), "scatter_add: src shape ", shape_str(src.shape()), " and index shape ",
           shape_str(index.shape()), " differ in number of dims");
  for (int64_t k = 0; k < src.dim(); ++k) {
    NF_CHECK(index.shape()[k] <= src.shape()[k], "scatter_add: index shape ", shape_str(index.shape()),
             " exceeds src shape ", shape_str(src.shape()), " in dim ", k);
  }
  const Tensor idx = checked_index("scatter_add", index, x.shape(), d);
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  copy_into(out, x);
  kScatterAdd.get(x.device(), "scatter_add")(out, src, idx, d);
  // out = x + S(src), S adding src[p] at p with p[d] := index[p]:
  //   dx = dout;  dsrc[p] = dout[p with p[d] := index[p]] inside index's extent, 0 beyond it
  autograd::record("scatter_add", out, {x, src},
                   [idx, d, src_shape = src.shape()](const Tensor& g, const autograd::Node& n) {
                     std::vector<Tensor> grads(2);
                     if (n.needs_input_grad(0)) grads[0] = g;
                     if (n.needs_input_grad(1)) {
                       const Tensor picked = gather_values(g, d, idx);
                       if (src_shape == idx.shape()) {
                         grads[1] = picked;
                       } else {
                         grads[1] = zeros(src_shape, g.dtype());
                         Tensor region = grads[1];
                         for (int64_t k = 0; k < region.dim(); ++k) region = narrow(region, k, 0, idx.shape()[k]);
                         copy_into(region, picked);
                       }
                     }
                     return grads;
                   });
  return out;
}

Tensor index_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  check_defined("index_add", x, index);
  NF_CHECK(src.defined(), "index_add: src tensor is undefined");
  const int64_t d = normalize_dim(dim, x.dim(), "index_add");
  NF_CHECK(index.dim() <= 1, "index_add: index must be 1-D, got shape ", shape_str(index.shape()));
  NF_CHECK(src.dtype() == x.dtype(), "index_add: src dtype ", dtype_name(src.dtype()), " ", shape_str(src.shape()),
           " differs from input dtype ", dtype_name(x.dtype()), " ", shape_str(x.shape()));
  NF_CHECK(src.device() == x.device(), "index_add: src is on ", src.device().str(), " but the input is on ",
           x.device().str());
  Shape expected = x.shape();
  expected[d] = index.numel();
  NF_CHECK(src.shape() == expected, "index_add: src shape ", shape_str(src.shape()), " must be ",
           shape_str(expected), " (input ", shape_str(x.shape()), " with dim ", d, " of index's length ",
           index.numel(), ")");
  const Tensor idx = checked_index("index_add", index, x.shape(), d);
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  copy_into(out, x);
  kIndexAdd.get(x.device(), "index_add")(out, contiguous(src.detach()), idx, d);
  // out = x + A(src), A adding src[.., k, ..] at row index[k]:  dx = dout;  dsrc = dout.index_select(dim, index)
  autograd::record("index_add", out, {x, src}, [idx, d](const Tensor& g, const autograd::Node& n) {
    std::vector<Tensor> grads(2);
    if (n.needs_input_grad(0)) grads[0] = g;
    if (n.needs_input_grad(1)) {
      Shape shape = g.shape();
      shape[d] = idx.numel();
      grads[1] = Tensor::empty(shape, g.dtype(), g.device());
      kIndexSelect.get(g.device(), "index_add backward")(grads[1], contiguous(g), idx, d);
    }
    return grads;
  });
  return out;
}

}  // namespace nf
