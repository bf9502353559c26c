// embedding: a table lookup, weight (V, D) and ids (...) -> (..., D). The forward copies rows; the
// backward sums the gradient rows of every position into the row of its id, deterministically.
#include "nanoformer/autograd/node.h"
#include "nanoformer/core/dispatch.h"
#include "nanoformer/core/error.h"
#include "nanoformer/ops/indexing.h"
#include "nanoformer/ops/view.h"
#include "ops/cpu/indexing.h"
#include "ops/indexing_internal.h"

namespace nf {
namespace {
using EmbeddingKernel = void (*)(const Tensor& out, const Tensor& weight, const Tensor& ids);
const DeviceKernels<EmbeddingKernel> kEmbedding{.cpu = cpu::embedding};
using EmbeddingBackwardKernel = void (*)(const Tensor& grad_weight, const Tensor& grad_out, const Tensor& ids);
const DeviceKernels<EmbeddingBackwardKernel> kEmbeddingBackward{.cpu = cpu::embedding_backward};
}  // namespace

Tensor embedding(const Tensor& weight, const Tensor& ids) {
  NF_CHECK(weight.defined(), "embedding: weight is undefined");
  NF_CHECK(ids.defined(), "embedding: ids tensor is undefined");
  NF_CHECK(weight.dim() == 2, "embedding: weight must be 2-D (num_embeddings, embedding_dim), got shape ",
           shape_str(weight.shape()));
  NF_CHECK(ids.device() == weight.device(), "embedding: ids are on ", ids.device().str(), " but weight is on ",
           weight.device().str());
  const int64_t V = weight.shape()[0], D = weight.shape()[1];
  const Tensor idx = checked_index("embedding", ids, weight.shape(), 0);
  Shape shape = ids.shape();
  shape.push_back(D);
  Tensor out = Tensor::empty(shape, weight.dtype(), weight.device());
  kEmbedding.get(weight.device(), "embedding")(out, contiguous(weight.detach()), idx);
  // out[..., :] = weight[ids[...], :]:  dweight[v, :] = sum over positions with ids = v of dout[..., :]
  autograd::record("embedding", out, {weight}, [idx, V, D](const Tensor& g, const autograd::Node&) {
    Tensor grad_weight = Tensor::empty({V, D}, g.dtype(), g.device());
    kEmbeddingBackward.get(g.device(), "embedding backward")(grad_weight, contiguous(g).reshape({idx.numel(), D}), idx);
    return std::vector<Tensor>{grad_weight};
  });
  return out;
}

}  // namespace nf
