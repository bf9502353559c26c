// The ViT patch embedding of reference 000: patches flattened as (channel, row, column), then a Linear.
#include "nanoformer/nn/patch_embed.h"

#include "nanoformer/core/error.h"
#include "nanoformer/ops/view.h"

namespace nf::nn {

PatchEmbedding::PatchEmbedding(int64_t img_size, int64_t patch_size, int64_t in_channels, int64_t embed_dim,
                               Generator& gen)
    : UnaryModule("PatchEmbedding"), img_size_(img_size), patch_size_(patch_size), in_channels_(in_channels) {
  NF_CHECK(patch_size > 0 && img_size > 0 && in_channels > 0 && embed_dim > 0,
           "PatchEmbedding: img_size ", img_size, ", patch_size ", patch_size, ", in_channels ", in_channels,
           " and embed_dim ", embed_dim, " must be positive");
  NF_CHECK(img_size % patch_size == 0, "PatchEmbedding: patch_size ", patch_size, " does not divide img_size ",
           img_size);
  proj = register_module("proj", std::make_shared<Linear>(in_channels * patch_size * patch_size, embed_dim, true, gen));
}

Tensor PatchEmbedding::forward(const Tensor& x) {
  NF_CHECK(x.dim() == 4 && x.size(1) == in_channels_ && x.size(2) == img_size_ && x.size(3) == img_size_,
           "PatchEmbedding: input ", shape_str(x.shape()), " is not (B, ", in_channels_, ", ", img_size_, ", ",
           img_size_, ")");
  const int64_t B = x.size(0), C = in_channels_, P = patch_size_, n = img_size_ / P;
  // (B, C, n, P, n, P) -> (B, n, n, C, P, P): patch (r, s) flattened as (channel, row, column)
  const Tensor patches = permute(reshape(x, {B, C, n, P, n, P}), {0, 2, 4, 1, 3, 5}).reshape({B, n * n, C * P * P});
  return proj->forward(patches);
}

}  // namespace nf::nn
