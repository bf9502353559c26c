// Views and layout ops. A view shares its input's storage; its backward maps the gradient (shaped
// like the view) back to the input's shape.
#include "nanoformer/ops/view.h"

#include <algorithm>
#include <numeric>
#include <optional>

#include "nanoformer/autograd/node.h"
#include "nanoformer/core/dispatch.h"
#include "nanoformer/core/error.h"
#include "nanoformer/ops/factory.h"
#include "nanoformer/ops/reduce.h"
#include "ops/cpu/copy.h"

namespace nf {
namespace {

using CopyKernel = void (*)(const Tensor& dst, const Tensor& src);
const DeviceKernels<CopyKernel> kCopy{.cpu = cpu::copy};

Tensor make_view(const Tensor& x, Shape shape, Shape strides, int64_t offset) {
  return Tensor::from_storage(x.storage(), std::move(shape), std::move(strides), offset, x.dtype());
}

// Replaces one -1 in `shape` by the size that keeps numel, and checks numel matches.
Shape infer_shape(const Shape& requested, int64_t numel, const char* op, const Shape& from) {
  Shape shape = requested;
  int64_t known = 1, infer_at = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      NF_CHECK(infer_at < 0, op, ": only one -1 allowed in ", shape_str(requested));
      infer_at = static_cast<int64_t>(i);
    } else {
      NF_CHECK(shape[i] >= 0, op, ": negative size in ", shape_str(requested));
      known *= shape[i];
    }
  }
  if (infer_at >= 0) {
    NF_CHECK(known != 0 && numel % known == 0, op, ": cannot reshape ", shape_str(from), " into ",
             shape_str(requested));
    shape[static_cast<size_t>(infer_at)] = numel / known;
  }
  NF_CHECK(shape_numel(shape) == numel, op, ": cannot reshape ", shape_str(from), " (", numel, " elements) into ",
           shape_str(requested));
  return shape;
}

// Strides that let `shape` view memory laid out as (old_shape, old_strides), or empty when the
// layout does not allow it. Old dims are grouped into runs that are contiguous among themselves;
// each new dim must fit inside one run (the algorithm of PyTorch's computeStride).
std::optional<Shape> view_strides(const Shape& old_shape, const Shape& old_strides, const Shape& shape) {
  if (old_shape.empty() || shape_numel(old_shape) == 0) return contiguous_strides(shape);
  Shape strides(shape.size());
  int64_t view_d = static_cast<int64_t>(shape.size()) - 1;
  int64_t chunk_base_stride = old_strides.empty() ? 1 : old_strides.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t d = static_cast<int64_t>(old_shape.size()) - 1; d >= 0; --d) {
    tensor_numel *= old_shape[d];
    const bool run_ends = d == 0 || (old_shape[d - 1] != 1 && old_strides[d - 1] != tensor_numel * chunk_base_stride);
    if (run_ends) {
      while (view_d >= 0 && (view_numel < tensor_numel || shape[view_d] == 1)) {
        strides[view_d] = view_numel * chunk_base_stride;
        view_numel *= shape[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (d > 0) {
        chunk_base_stride = old_strides[d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return strides;
}

}  // namespace

void copy_into(const Tensor& dst, const Tensor& src) {
  NF_CHECK(dst.shape() == src.shape(), "copy_into: destination shape ", shape_str(dst.shape()),
           " and source shape ", shape_str(src.shape()), " differ");
  kCopy.get(dst.device(), "copy_into")(dst, src);
}

Tensor view(const Tensor& x, const Shape& requested) {
  Shape shape = infer_shape(requested, x.numel(), "view", x.shape());
  auto strides = view_strides(x.shape(), x.strides(), shape);
  NF_CHECK(strides.has_value(), "view: a tensor of shape ", shape_str(x.shape()), " and strides ",
           shape_str(x.strides()), " cannot be viewed as ", shape_str(shape), " without a copy (use reshape)");
  Tensor out = make_view(x, std::move(shape), std::move(*strides), x.offset());
  // (x itself captured, not a copy of its shape: a view shares x's storage, and a capture is made
  // whether or not the op records)
  autograd::record("view", out, {x}, [x](const Tensor& g, const autograd::Node&) {
    return std::vector<Tensor>{reshape(g, x.shape())};
  });
  return out;
}

Tensor reshape(const Tensor& x, const Shape& requested) {
  const Shape shape = infer_shape(requested, x.numel(), "reshape", x.shape());
  if (view_strides(x.shape(), x.strides(), shape)) return view(x, shape);
  return view(contiguous(x), shape);
}

Tensor flatten(const Tensor& x, int64_t start_dim, int64_t end_dim) {
  if (x.dim() == 0) return reshape(x, {1});
  const int64_t s = normalize_dim(start_dim, x.dim(), "flatten");
  const int64_t e = normalize_dim(end_dim, x.dim(), "flatten");
  NF_CHECK(s <= e, "flatten: start_dim ", start_dim, " comes after end_dim ", end_dim);
  Shape shape(x.shape().begin(), x.shape().begin() + s);
  int64_t merged = 1;
  for (int64_t d = s; d <= e; ++d) merged *= x.shape()[d];
  shape.push_back(merged);
  shape.insert(shape.end(), x.shape().begin() + e + 1, x.shape().end());
  return reshape(x, shape);
}

Tensor transpose(const Tensor& x, int64_t d0, int64_t d1) {
  const int64_t a = normalize_dim(d0, x.dim(), "transpose"), b = normalize_dim(d1, x.dim(), "transpose");
  Shape shape = x.shape(), strides = x.strides();
  std::swap(shape[a], shape[b]);
  std::swap(strides[a], strides[b]);
  Tensor out = make_view(x, std::move(shape), std::move(strides), x.offset());
  autograd::record("transpose", out, {x}, [a, b](const Tensor& g, const autograd::Node&) {
    return std::vector<Tensor>{transpose(g, a, b)};
  });
  return out;
}

Tensor permute(const Tensor& x, const std::vector<int64_t>& dims) {
  NF_CHECK(static_cast<int64_t>(dims.size()) == x.dim(), "permute: ", dims.size(), " dims given for a tensor of shape ",
           shape_str(x.shape()));
  std::vector<int64_t> order(dims.size()), inverse(dims.size());
  std::vector<bool> used(dims.size(), false);
  Shape shape(dims.size()), strides(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) {
    const int64_t d = normalize_dim(dims[i], x.dim(), "permute");
    NF_CHECK(!used[d], "permute: dim ", d, " repeated in ", shape_str(dims));
    used[d] = true;
    order[i] = d;
    inverse[d] = static_cast<int64_t>(i);
    shape[i] = x.shape()[d];
    strides[i] = x.strides()[d];
  }
  Tensor out = make_view(x, std::move(shape), std::move(strides), x.offset());
  autograd::record("permute", out, {x}, [inverse](const Tensor& g, const autograd::Node&) {
    return std::vector<Tensor>{permute(g, inverse)};
  });
  return out;
}

Tensor slice(const Tensor& x, int64_t dim, int64_t start, int64_t end, int64_t step) {
  const int64_t d = normalize_dim(dim, x.dim(), "slice");
  const int64_t n = x.shape()[d];
  NF_CHECK(step > 0, "slice: step must be positive, got ", step);
  if (start < 0) start += n;
  if (end < 0) end += n;
  start = std::clamp<int64_t>(start, 0, n);
  end = std::clamp<int64_t>(end, start, n);
  Shape shape = x.shape(), strides = x.strides();
  shape[d] = (end - start + step - 1) / step;
  strides[d] *= step;
  Tensor out = make_view(x, std::move(shape), std::move(strides), x.offset() + start * x.strides()[d]);
  autograd::record("slice", out, {x}, [=](const Tensor& g, const autograd::Node&) {
    Tensor gx = zeros(x.shape(), x.dtype());
    copy_into(slice(gx, d, start, end, step), g);
    return std::vector<Tensor>{gx};
  });
  return out;
}

Tensor narrow(const Tensor& x, int64_t dim, int64_t start, int64_t length) {
  const int64_t d = normalize_dim(dim, x.dim(), "narrow");
  const int64_t n = x.shape()[d];
  if (start < 0) start += n;
  NF_CHECK(start >= 0 && length >= 0 && start + length <= n, "narrow: start ", start, " length ", length,
           " out of range for dim ", d, " of shape ", shape_str(x.shape()));
  return slice(x, d, start, start + length, 1);
}

Tensor select(const Tensor& x, int64_t dim, int64_t index) {
  const int64_t d = normalize_dim(dim, x.dim(), "select");
  const int64_t n = x.shape()[d];
  NF_CHECK(index >= -n && index < n, "select: index ", index, " out of range for dim ", d, " of shape ",
           shape_str(x.shape()));
  return squeeze(narrow(x, d, index < 0 ? index + n : index, 1), d);
}

Tensor expand(const Tensor& x, const Shape& requested) {
  NF_CHECK(requested.size() >= x.shape().size(), "expand: cannot expand shape ", shape_str(x.shape()), " to ",
           shape_str(requested), " (fewer dims)");
  const size_t lead = requested.size() - x.shape().size();
  Shape shape(requested.size()), strides(requested.size(), 0);
  for (size_t i = 0; i < requested.size(); ++i) {
    if (i < lead) {
      NF_CHECK(requested[i] >= 0, "expand: new leading dim ", i, " must be given in ", shape_str(requested));
      shape[i] = requested[i];
      continue;
    }
    const int64_t have = x.shape()[i - lead];
    const int64_t want = requested[i] == -1 ? have : requested[i];
    NF_CHECK(have == want || have == 1, "expand: cannot expand shape ", shape_str(x.shape()), " to ",
             shape_str(requested), " (dim ", i, ": ", have, " vs ", want, ")");
    shape[i] = want;
    strides[i] = have == want ? x.strides()[i - lead] : 0;
  }
  Tensor out = make_view(x, std::move(shape), std::move(strides), x.offset());
  autograd::record("expand", out, {x}, [x](const Tensor& g, const autograd::Node&) {
    return std::vector<Tensor>{sum_to(g, x.shape())};
  });
  return out;
}

Tensor squeeze(const Tensor& x) {
  Shape shape;
  for (int64_t s : x.shape()) {
    if (s != 1) shape.push_back(s);
  }
  return view(x, shape);
}

Tensor squeeze(const Tensor& x, int64_t dim) {
  const int64_t d = normalize_dim(dim, x.dim(), "squeeze");
  if (x.shape()[d] != 1) return view(x, x.shape());
  Shape shape = x.shape();
  shape.erase(shape.begin() + d);
  return view(x, shape);
}

Tensor unsqueeze(const Tensor& x, int64_t dim) {
  const int64_t d = normalize_dim(dim, x.dim() + 1, "unsqueeze");
  Shape shape = x.shape();
  shape.insert(shape.begin() + d, 1);
  return view(x, shape);
}

Tensor clone(const Tensor& x) {
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  copy_into(out, x);
  autograd::record("clone", out, {x}, [](const Tensor& g, const autograd::Node&) { return std::vector<Tensor>{g}; });
  return out;
}

Tensor contiguous(const Tensor& x) { return x.is_contiguous() ? x : clone(x); }

Tensor to_dtype(const Tensor& x, DType dtype) {
  if (x.dtype() == dtype) return x;
  Tensor out = Tensor::empty(x.shape(), dtype, x.device());
  copy_into(out, x);
  if (is_floating(dtype)) {
    const DType from = x.dtype();
    autograd::record("to_dtype", out, {x}, [from](const Tensor& g, const autograd::Node&) {
      return std::vector<Tensor>{to_dtype(g, from)};
    });
  }
  return out;
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  const size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    NF_CHECK(da == db || da == 1 || db == 1, op, ": shapes ", shape_str(a), " and ", shape_str(b),
             " do not broadcast (dim ", i, ": ", da, " vs ", db, ")");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

// ---- Tensor's convenience methods ----
Tensor Tensor::reshape(const Shape& shape) const { return nf::reshape(*this, shape); }
Tensor Tensor::view(const Shape& shape) const { return nf::view(*this, shape); }
Tensor Tensor::flatten(int64_t start_dim, int64_t end_dim) const { return nf::flatten(*this, start_dim, end_dim); }
Tensor Tensor::transpose(int64_t d0, int64_t d1) const { return nf::transpose(*this, d0, d1); }
Tensor Tensor::t() const {
  NF_CHECK(dim() == 2, "t: expects a 2-D tensor, got shape ", shape_str(shape()));
  return nf::transpose(*this, 0, 1);
}
Tensor Tensor::permute(const std::vector<int64_t>& dims) const { return nf::permute(*this, dims); }
Tensor Tensor::narrow(int64_t dim, int64_t start, int64_t length) const { return nf::narrow(*this, dim, start, length); }
Tensor Tensor::slice(int64_t dim, int64_t start, int64_t end, int64_t step) const {
  return nf::slice(*this, dim, start, end, step);
}
Tensor Tensor::select(int64_t dim, int64_t index) const { return nf::select(*this, dim, index); }
Tensor Tensor::expand(const Shape& shape) const { return nf::expand(*this, shape); }
Tensor Tensor::squeeze() const { return nf::squeeze(*this); }
Tensor Tensor::squeeze(int64_t dim) const { return nf::squeeze(*this, dim); }
Tensor Tensor::unsqueeze(int64_t dim) const { return nf::unsqueeze(*this, dim); }
Tensor Tensor::contiguous() const { return nf::contiguous(*this); }
Tensor Tensor::clone() const { return nf::clone(*this); }
Tensor Tensor::to(DType dtype) const { return to_dtype(*this, dtype); }

}  // namespace nf
