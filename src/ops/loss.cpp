// Losses: the fused cross-entropy (log_softmax + negative log-likelihood) and mean squared error.
#include "nanoformer/ops/loss.h"

#include "nanoformer/autograd/grad_mode.h"
#include "nanoformer/autograd/node.h"
#include "nanoformer/core/dispatch.h"
#include "nanoformer/core/error.h"
#include "nanoformer/ops/elementwise.h"
#include "nanoformer/ops/reduce.h"
#include "nanoformer/ops/view.h"
#include "ops/cpu/loss.h"
#include "ops/reduce_internal.h"

namespace nf {
namespace {

using CrossEntropyForward = int64_t (*)(const Tensor&, const Tensor&, const Tensor&, const Tensor&, int64_t);
using CrossEntropyBackward = void (*)(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                                      double, int64_t);
const DeviceKernels<CrossEntropyForward> kCrossEntropyForward{.cpu = cpu::cross_entropy_forward};
const DeviceKernels<CrossEntropyBackward> kCrossEntropyBackward{.cpu = cpu::cross_entropy_backward};

void check_cross_entropy_args(const Tensor& logits, const Tensor& target) {
  require_floating_input(logits, "cross_entropy");
  NF_CHECK(target.defined(), "cross_entropy: target is undefined");
  NF_CHECK(logits.dim() == 2, "cross_entropy: logits must be (N, C), got shape ", shape_str(logits.shape()),
           " (flatten the leading dims first)");
  NF_CHECK(target.dim() == 1 && target.size(0) == logits.size(0), "cross_entropy: target of shape ",
           shape_str(target.shape()), " does not match logits of shape ", shape_str(logits.shape()),
           " (expected target (N) = (", logits.size(0), "))");
  NF_CHECK(target.dtype() == DType::i64 || target.dtype() == DType::i32, "cross_entropy: target dtype ",
           dtype_name(target.dtype()), " of shape ", shape_str(target.shape()), " is not supported (expects i64 or i32)");
  NF_CHECK(target.device() == logits.device(), "cross_entropy: logits on ", logits.device().str(), ", target on ",
           target.device().str());
}

}  // namespace

Tensor cross_entropy(const Tensor& logits, const Tensor& target, int64_t ignore_index, Reduction reduction) {
  check_cross_entropy_args(logits, target);
  const Tensor x = contiguous(logits.detach()), t = contiguous(target.detach());
  const int64_t rows = x.size(0);
  Tensor row_loss = Tensor::empty({rows}, x.dtype(), x.device());
  Tensor stats = Tensor::empty({rows, 2}, x.dtype(), x.device());  // per row: max and log-sum-exp of x - max
  const int64_t kept = kCrossEntropyForward.get(x.device(), "cross_entropy")(row_loss, stats, x, t, ignore_index);
  Tensor out;
  double scale = 1.0;
  {
    NoGradGuard no_grad;
    switch (reduction) {
      case Reduction::none: out = row_loss; break;
      case Reduction::sum: out = sum(row_loss); break;
      case Reduction::mean:  // 0 / 0 = NaN when every target is ignored (as PyTorch)
        out = div(sum(row_loss), static_cast<double>(kept));
        scale = 1.0 / static_cast<double>(kept);
        break;
    }
  }
  // dlogits = (softmax(logits) - onehot(target)) g (/ kept for mean), 0 on ignored rows
  autograd::record("cross_entropy", out, {logits},
                   [x, t, stats, scale, ignore_index](const Tensor& g, const autograd::Node&) {
                     Tensor dx = Tensor::empty(x.shape(), x.dtype(), x.device());
                     kCrossEntropyBackward.get(x.device(), "cross_entropy backward")(dx, x, t, stats, contiguous(g), scale,
                                                                                     ignore_index);
                     return std::vector<Tensor>{dx};
                   });
  return out;
}

Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction) {
  require_floating_input(input, "mse_loss");
  NF_CHECK(target.defined(), "mse_loss: target is undefined");
  NF_CHECK(input.shape() == target.shape(), "mse_loss: input shape ", shape_str(input.shape()),
           " and target shape ", shape_str(target.shape()), " differ");
  NF_CHECK(input.dtype() == target.dtype(), "mse_loss: input dtype ", dtype_name(input.dtype()), " and target dtype ",
           dtype_name(target.dtype()), " differ");
  Tensor diff, out;
  {
    NoGradGuard no_grad;
    diff = sub(input, target);
    const Tensor squared = mul(diff, diff);
    out = reduction == Reduction::none ? squared : reduction == Reduction::sum ? sum(squared) : mean(squared);
  }
  // d/dinput = 2 (input - target) g (/ N for mean) = -d/dtarget
  const double factor = reduction == Reduction::mean ? 2.0 / static_cast<double>(input.numel()) : 2.0;
  autograd::record("mse_loss", out, {input, target}, [diff, factor](const Tensor& g, const autograd::Node& n) {
    const Tensor d_input = mul(diff, mul(g, factor));
    return std::vector<Tensor>{n.needs_input_grad(0) ? d_input : Tensor(),
                               n.needs_input_grad(1) ? neg(d_input) : Tensor()};
  });
  return out;
}

}  // namespace nf
