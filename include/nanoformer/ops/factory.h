#pragma once
// Tensors made from nothing: constants, ranges and seeded random draws. Random draws are the same
// for the same generator state whatever the thread count (see core/generator.h).
#include "nanoformer/core/generator.h"
#include "nanoformer/core/tensor.h"

namespace nf {

Tensor zeros(const Shape& shape, DType dtype = DType::f32);
Tensor ones(const Shape& shape, DType dtype = DType::f32);
Tensor full(const Shape& shape, double value, DType dtype = DType::f32);
Tensor zeros_like(const Tensor& x);
Tensor ones_like(const Tensor& x);
Tensor full_like(const Tensor& x, double value);
// Uninitialised tensors in a given memory order (torch.empty_like's preserve_format): of x's shape
// and dtype with x's strides when x is dense (a permutation of a contiguous layout, as a transposed
// view is), else contiguous; empty_in_order takes the shape and strides themselves.
Tensor empty_like(const Tensor& x);
Tensor empty_in_order(const Shape& shape, const Shape& strides, DType dtype = DType::f32, Device device = {});
// start, start + step, ... < end (as torch.arange)
Tensor arange(double start, double end, double step = 1.0, DType dtype = DType::i64);
Tensor arange(int64_t end, DType dtype = DType::i64);
Tensor eye(int64_t n, DType dtype = DType::f32);

// Random draws (floating dtypes for rand/randn; integer dtypes for randint).
Tensor rand(const Shape& shape, Generator& gen, DType dtype = DType::f32);   // uniform [0, 1)
Tensor uniform(const Shape& shape, double low, double high, Generator& gen, DType dtype = DType::f32);
Tensor randn(const Shape& shape, Generator& gen, DType dtype = DType::f32);  // normal(0, 1)
Tensor normal(const Shape& shape, double mean, double std, Generator& gen, DType dtype = DType::f32);
// Draws normal(mean, std) into t in place (contiguous, floating): the values normal(t.shape(), ...)
// would return from the same generator state, without the temporary (weight initialisation).
void normal_(const Tensor& t, double mean, double std, Generator& gen);
Tensor randint(int64_t low, int64_t high, const Shape& shape, Generator& gen, DType dtype = DType::i64);  // [low, high)
Tensor bernoulli(const Shape& shape, double p, Generator& gen, DType dtype = DType::f32);  // 1 with probability p

// While one lives on this thread, uniform, normal and normal_ (rand, randn) reserve their counters
// as always, so every later draw is unchanged, but leave the values unset: for a model built only
// to have every weight overwritten (load_checkpoint, as transformers' no_init_weights), which would
// otherwise spend most of a load drawing them.
class SkipRandomInitGuard {
 public:
  SkipRandomInitGuard();
  ~SkipRandomInitGuard();
  SkipRandomInitGuard(const SkipRandomInitGuard&) = delete;
  SkipRandomInitGuard& operator=(const SkipRandomInitGuard&) = delete;

 private:
  bool previous_;
};

}  // namespace nf
