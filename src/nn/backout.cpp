// Backout: x - lambda x_mid (see backout.h).
#include "nanoformer/nn/backout.h"

#include "nanoformer/core/error.h"
#include "nanoformer/ops/elementwise.h"
#include "nanoformer/ops/factory.h"

namespace nf::nn {

Backout::Backout() : Module("Backout") { lambda = register_parameter("lambda", full({1}, 0.2)); }

Tensor Backout::forward(const Tensor& x, const Tensor& mid) {
  NF_CHECK(x.shape() == mid.shape(), "Backout: x ", shape_str(x.shape()), " and mid ", shape_str(mid.shape()), " differ");
  return x - lambda * mid;
}

}  // namespace nf::nn
