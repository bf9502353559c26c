#pragma once
// The ViT patch embedding of reference 000 (section 4.4): cut the image into non-overlapping
// P x P patches, flatten each in (channel, row, column) order, project with a Linear.
#include <cstdint>
#include <memory>

#include "nanoformer/core/generator.h"
#include "nanoformer/nn/linear.h"

namespace nf::nn {

// x (B, C, S, S) -> patches (B, N, C*P*P), N = (S/P)^2 in row-major patch order -> proj -> (B, N, D).
// Parameters: proj.weight (D, C*P*P), proj.bias (D). Equal to a Conv2d with kernel = stride = P
// whose weight is proj.weight viewed as (D, C, P, P), its output flattened to (B, D, N) and transposed.
class PatchEmbedding : public UnaryModule {
 public:
  PatchEmbedding(int64_t img_size, int64_t patch_size, int64_t in_channels, int64_t embed_dim,
                 Generator& gen = default_generator());
  Tensor forward(const Tensor& x) override;

  int64_t num_patches() const { return (img_size_ / patch_size_) * (img_size_ / patch_size_); }
  int64_t patch_size() const { return patch_size_; }
  std::shared_ptr<Linear> proj;

 private:
  int64_t img_size_, patch_size_, in_channels_;
};

}  // namespace nf::nn
