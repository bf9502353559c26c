// cat and stack join tensors along a dimension; split and chunk cut one into views. cat's backward
// hands each input its own slice of the gradient; the pieces of split/chunk are narrow views, so
// their gradients flow back (and accumulate) through narrow's backward.
#include "nanoformer/ops/join.h"

#include <algorithm>

#include "nanoformer/autograd/node.h"
#include "nanoformer/core/dispatch.h"
#include "nanoformer/core/error.h"
#include "nanoformer/ops/view.h"
#include "ops/cpu/join.h"

namespace nf {
namespace {

using CatKernel = void (*)(const Tensor& out, const std::vector<Tensor>& inputs, int64_t dim);
const DeviceKernels<CatKernel> kCat{.cpu = cpu::cat};

// Every tensor defined, with the first one's dtype and device.
void check_joinable(const char* op, const std::vector<Tensor>& tensors) {
  NF_CHECK(!tensors.empty(), op, ": expects a non-empty list of tensors");
  for (size_t i = 0; i < tensors.size(); ++i) NF_CHECK(tensors[i].defined(), op, ": tensor ", i, " is undefined");
  const Tensor& first = tensors[0];
  for (size_t i = 1; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    NF_CHECK(t.dtype() == first.dtype(), op, ": tensor ", i, " has dtype ", dtype_name(t.dtype()), " ",
             shape_str(t.shape()), " but tensor 0 has dtype ", dtype_name(first.dtype()), " ",
             shape_str(first.shape()));
    NF_CHECK(t.device() == first.device(), op, ": tensor ", i, " is on ", t.device().str(), " but tensor 0 is on ",
             first.device().str());
  }
}

// The pieces x.narrow(dim, start, sizes[i]) laid end to end.
std::vector<Tensor> narrow_pieces(const Tensor& x, const std::vector<int64_t>& sizes, int64_t dim) {
  std::vector<Tensor> pieces;
  pieces.reserve(sizes.size());
  int64_t start = 0;
  for (int64_t n : sizes) {
    pieces.push_back(narrow(x, dim, start, n));
    start += n;
  }
  return pieces;
}

void check_splittable(const char* op, const Tensor& x) {
  NF_CHECK(x.defined(), op, ": tensor is undefined");
  NF_CHECK(x.dim() > 0, op, ": cannot split a zero-dimensional tensor (shape ())");
}

}  // namespace

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim) {
  check_joinable("cat", tensors);
  const Tensor& first = tensors[0];
  NF_CHECK(first.dim() > 0, "cat: zero-dimensional tensors (shape ()) cannot be concatenated (unsqueeze or use stack)");
  const int64_t d = normalize_dim(dim, first.dim(), "cat");
  Shape shape = first.shape();
  shape[d] = 0;
  std::vector<int64_t> sizes;
  sizes.reserve(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Shape& s = tensors[i].shape();
    bool match = s.size() == first.shape().size();
    for (size_t k = 0; match && k < s.size(); ++k) match = static_cast<int64_t>(k) == d || s[k] == first.shape()[k];
    NF_CHECK(match, "cat: tensor ", i, " has shape ", shape_str(s), " but tensor 0 has shape ",
             shape_str(first.shape()), " (sizes must match except in dim ", d, ")");
    sizes.push_back(s[d]);
    shape[d] += s[d];
  }
  Tensor out = Tensor::empty(shape, first.dtype(), first.device());
  kCat.get(first.device(), "cat")(out, tensors, d);
  // out = [x_0; x_1; ...] along d:  dx_i = dout.narrow(d, offset_i, n_i)
  autograd::record("cat", out, tensors, [sizes, d](const Tensor& g, const autograd::Node& n) {
    std::vector<Tensor> grads(sizes.size());
    int64_t offset = 0;
    for (size_t i = 0; i < sizes.size(); ++i) {
      if (n.needs_input_grad(i)) grads[i] = narrow(g, d, offset, sizes[i]);
      offset += sizes[i];
    }
    return grads;
  });
  return out;
}

Tensor stack(const std::vector<Tensor>& tensors, int64_t dim) {
  check_joinable("stack", tensors);
  const Shape& shape = tensors[0].shape();
  for (size_t i = 1; i < tensors.size(); ++i) {
    NF_CHECK(tensors[i].shape() == shape, "stack: tensor ", i, " has shape ", shape_str(tensors[i].shape()),
             " but tensor 0 has shape ", shape_str(shape), " (all shapes must be equal)");
  }
  const int64_t d = normalize_dim(dim, tensors[0].dim() + 1, "stack");
  std::vector<Tensor> unsqueezed;
  unsqueezed.reserve(tensors.size());
  for (const Tensor& t : tensors) unsqueezed.push_back(unsqueeze(t, d));
  return cat(unsqueezed, d);
}

std::vector<Tensor> split(const Tensor& x, int64_t split_size, int64_t dim) {
  check_splittable("split", x);
  const int64_t d = normalize_dim(dim, x.dim(), "split");
  NF_CHECK(split_size > 0, "split: split_size must be positive, got ", split_size, " for dim ", d, " of shape ",
           shape_str(x.shape()));
  const int64_t n = x.shape()[d];
  std::vector<int64_t> sizes;
  for (int64_t start = 0; start < n; start += split_size) sizes.push_back(std::min(split_size, n - start));
  if (sizes.empty()) sizes.push_back(0);  // an empty dim still yields one (empty) piece, as torch.split
  return narrow_pieces(x, sizes, d);
}

std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int64_t dim) {
  check_splittable("split", x);
  const int64_t d = normalize_dim(dim, x.dim(), "split");
  int64_t total = 0;
  for (int64_t s : sizes) {
    NF_CHECK(s >= 0, "split: negative size ", s, " in sizes ", shape_str(sizes), " for shape ", shape_str(x.shape()));
    total += s;
  }
  NF_CHECK(total == x.shape()[d], "split: sizes ", shape_str(sizes), " sum to ", total, " but dim ", d, " of shape ",
           shape_str(x.shape()), " has size ", x.shape()[d]);
  return narrow_pieces(x, sizes, d);
}

// As torch.chunk: pieces of ceil(n / chunks), so fewer than `chunks` pieces may come back
// (n = 5, chunks = 4 gives sizes 2, 2, 1); an empty dim gives `chunks` empty pieces.
std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim) {
  check_splittable("chunk", x);
  const int64_t d = normalize_dim(dim, x.dim(), "chunk");
  NF_CHECK(chunks > 0, "chunk: chunks must be positive, got ", chunks, " for shape ", shape_str(x.shape()));
  const int64_t n = x.shape()[d];
  if (n == 0) return narrow_pieces(x, std::vector<int64_t>(static_cast<size_t>(chunks), 0), d);
  return split(x, (n + chunks - 1) / chunks, d);
}

}  // namespace nf
