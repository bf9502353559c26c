// Conv2d module.
#include "nanoformer/nn/conv.h"

#include <cmath>

#include "nanoformer/core/error.h"
#include "nanoformer/ops/factory.h"

namespace nf::nn {

Conv2d::Conv2d(int64_t in_channels, int64_t out_channels, std::array<int64_t, 2> kernel_size,
               const Conv2dOptions& options, bool bias, Generator& gen)
    : UnaryModule("Conv2d"), in_(in_channels), options_(options) {
  NF_CHECK(in_channels > 0 && out_channels > 0, "Conv2d: in_channels ", in_channels, " and out_channels ",
           out_channels, " must be positive");
  NF_CHECK(kernel_size[0] > 0 && kernel_size[1] > 0, "Conv2d: kernel_size ", kernel_size[0], "x", kernel_size[1],
           " must be positive");
  const int64_t G = options.groups;
  NF_CHECK(G >= 1, "Conv2d: groups ", G, " must be >= 1");
  NF_CHECK(in_channels % G == 0, "Conv2d: in_channels ", in_channels, " is not divisible by groups ", G);
  NF_CHECK(out_channels % G == 0, "Conv2d: out_channels ", out_channels, " is not divisible by groups ", G);
  for (int k = 0; k < 2; ++k) {
    NF_CHECK(options.stride[k] >= 1, "Conv2d: stride ", options.stride[k], " must be >= 1");
    NF_CHECK(options.padding[k] >= 0, "Conv2d: padding ", options.padding[k], " must be >= 0");
    NF_CHECK(options.dilation[k] >= 1, "Conv2d: dilation ", options.dilation[k], " must be >= 1");
  }
  const int64_t fan_in = in_channels / G * kernel_size[0] * kernel_size[1];
  const double bound = 1.0 / std::sqrt(static_cast<double>(fan_in));
  weight = register_parameter(
      "weight", uniform({out_channels, in_channels / G, kernel_size[0], kernel_size[1]}, -bound, bound, gen));
  if (bias) this->bias = register_parameter("bias", uniform({out_channels}, -bound, bound, gen));
}

Tensor Conv2d::forward(const Tensor& x) {
  NF_CHECK(x.dim() == 4 && x.size(1) == in_, "Conv2d: input ", shape_str(x.shape()), " is not (B, ", in_,
           ", H, W)");
  return conv2d(x, weight, bias, options_);
}

}  // namespace nf::nn
