// Smear: y_t = x_t + lambda sigmoid(x_t[:24] . w) x_{t-1} (see smear.h).
#include "nanoformer/nn/smear.h"

#include "nanoformer/core/error.h"
#include "nanoformer/ops/elementwise.h"
#include "nanoformer/ops/factory.h"
#include "nanoformer/ops/join.h"
#include "nanoformer/ops/matmul.h"
#include "nanoformer/ops/view.h"

namespace nf::nn {

Smear::Smear(int64_t dim, Generator& gen) : Module("Smear"), dim_(dim) {
  NF_CHECK(dim >= kChannels, "Smear: dim ", dim, " must be at least its ", kChannels, " gate channels");
  gate_weight = register_parameter("gate_weight", uniform({1, kChannels}, 0.0, 0.02, gen));  // nanochat's init
  lambda = register_parameter("lambda", zeros({1}));
}

Tensor Smear::forward(const Tensor& x, const Tensor& previous) {
  NF_CHECK(x.dim() == 3 && x.size(2) == dim_, "Smear: x must be (B, T, dim = ", dim_, "), got ", shape_str(x.shape()));
  NF_CHECK(!previous.defined() || previous.shape() == (Shape{x.size(0), 1, dim_}), "Smear: previous must be (B = ",
           x.size(0), ", 1, dim = ", dim_, "), got ", shape_str(previous.shape()));
  const int64_t T = x.size(1);
  // current: the rows that take in a previous one; before: those previous rows, aligned with them
  const Tensor current = previous.defined() ? x : narrow(x, 1, 1, T - 1);
  const Tensor before = previous.defined() ? cat({previous, narrow(x, 1, 0, T - 1)}, 1) : narrow(x, 1, 0, T - 1);
  if (current.size(1) == 0) return x;
  // lambda sigmoid(x_t[:channels] . w): (B, T', 1)
  const Tensor gate = lambda * sigmoid(linear(narrow(current, 2, 0, kChannels), gate_weight));
  const Tensor smeared = current + gate * before;
  return previous.defined() ? smeared : cat({narrow(x, 1, 0, 1), smeared}, 1);
}

}  // namespace nf::nn
