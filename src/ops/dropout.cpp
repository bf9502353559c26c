// dropout: zero each element with probability p, scale the survivors by 1 / (1 - p).
#include "nanoformer/ops/dropout.h"

#include "nanoformer/autograd/node.h"
#include "nanoformer/core/dispatch.h"
#include "nanoformer/core/error.h"
#include "nanoformer/ops/factory.h"
#include "nanoformer/ops/view.h"
#include "ops/cpu/dropout.h"
#include "ops/reduce_internal.h"

namespace nf {
namespace {
using DropoutKernel = void (*)(const Tensor&, const Tensor&, double, double, uint64_t, uint64_t);
const DeviceKernels<DropoutKernel> kDropout{.cpu = cpu::dropout_apply};
}  // namespace

Tensor dropout(const Tensor& x, double p, bool training, Generator& gen) {
  require_floating_input(x, "dropout");
  NF_CHECK(p >= 0.0 && p <= 1.0, "dropout: probability p = ", p, " outside [0, 1] (input shape ",
           shape_str(x.shape()), ")");
  if (!training || p == 0.0) return x;
  if (p == 1.0) {
    // every element dropped: y = 0, dx = 0 (no draw needed)
    Tensor out = zeros(x.shape(), x.dtype());
    autograd::record("dropout", out, {x}, [](const Tensor& g, const autograd::Node&) {
      return std::vector<Tensor>{zeros(g.shape(), g.dtype())};
    });
    return out;
  }
  const double keep = 1.0 - p, scale = 1.0 / keep;
  const uint64_t seed = gen.seed(), first = gen.reserve(static_cast<uint64_t>(x.numel()));
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  kDropout.get(x.device(), "dropout")(out, contiguous(x.detach()), keep, scale, seed, first);
  // dx = mask dy / (1 - p), the mask regenerated from (seed, first)
  autograd::record("dropout", out, {x}, [keep, scale, seed, first](const Tensor& g, const autograd::Node&) {
    Tensor dx = Tensor::empty(g.shape(), g.dtype(), g.device());
    kDropout.get(g.device(), "dropout backward")(dx, contiguous(g), keep, scale, seed, first);
    return std::vector<Tensor>{dx};
  });
  return out;
}

Tensor dropout(const Tensor& x, double p, bool training) { return dropout(x, p, training, default_generator()); }

}  // namespace nf
