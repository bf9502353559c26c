#pragma once
// Conv2d module over the conv2d op, named and initialised as torch.nn.Conv2d.
#include <array>
#include <cstdint>

#include "nanoformer/core/generator.h"
#include "nanoformer/nn/module.h"
#include "nanoformer/ops/conv.h"

namespace nf::nn {

// y = conv2d(x, weight, bias, options):  x (B, in, H, W) -> (B, out, Ho, Wo);
// weight (out, in/groups, kh, kw), bias (out) when `bias`. Initialised as torch.nn.Conv2d: weight and
// bias uniform in [-1/sqrt(fan_in), 1/sqrt(fan_in)], fan_in = in/groups * kh * kw.
class Conv2d : public UnaryModule {
 public:
  Conv2d(int64_t in_channels, int64_t out_channels, std::array<int64_t, 2> kernel_size,
         const Conv2dOptions& options = {}, bool bias = true, Generator& gen = default_generator());
  Tensor forward(const Tensor& x) override;

  const Conv2dOptions& options() const { return options_; }
  Tensor weight;
  Tensor bias;  // undefined without bias

 private:
  int64_t in_;
  Conv2dOptions options_;
};

}  // namespace nf::nn
