// Ranges and seeded random draws.
#include <cmath>

#include "nanoformer/core/dispatch.h"
#include "nanoformer/core/error.h"
#include "nanoformer/ops/factory.h"
#include "ops/cpu/random.h"

namespace nf {
namespace {

using RandomKernel = void (*)(const Tensor&, Distribution, double, double, uint64_t, uint64_t);
const DeviceKernels<RandomKernel> kRandom{.cpu = cpu::random_fill};

thread_local bool t_skip_random_init = false;  // SkipRandomInitGuard

Tensor draw(const char* op, const Shape& shape, DType dtype, Distribution dist, double a, double b, Generator& gen) {
  Tensor t = Tensor::empty(shape, dtype);
  const uint64_t first = gen.reserve(static_cast<uint64_t>(t.numel()));
  const bool floating = dist == Distribution::uniform || dist == Distribution::normal;
  if (!(floating && t_skip_random_init)) kRandom.get(t.device(), op)(t, dist, a, b, gen.seed(), first);
  return t;
}

void require_floating(const char* op, DType dtype) {
  NF_CHECK(dtype == DType::f32 || dtype == DType::f64 || dtype == DType::bf16 || dtype == DType::f16, op,
           ": dtype ", dtype_name(dtype), " is not a floating dtype");
}

}  // namespace

Tensor arange(double start, double end, double step, DType dtype) {
  NF_CHECK(std::isfinite(start) && std::isfinite(end) && std::isfinite(step), "arange: unsupported range ", start,
           " -> ", end, " with step ", step);
  NF_CHECK(step != 0.0, "arange: step must be non-zero");
  NF_CHECK(step > 0 ? end >= start : end <= start, "arange: end ", end, " lies on the wrong side of start ", start,
           " for step ", step, " (as torch.arange: the bounds must agree with the step's sign)");
  const double count = std::ceil((end - start) / step);
  const int64_t n = count > 0 ? static_cast<int64_t>(count) : 0;
  Tensor t = Tensor::empty({n}, dtype);
  char* p = static_cast<char*>(t.raw_data());
  for (int64_t i = 0; i < n; ++i) store_from_double(p + i * static_cast<int64_t>(t.itemsize()), dtype, start + step * static_cast<double>(i));
  return t;
}

Tensor arange(int64_t end, DType dtype) { return arange(0.0, static_cast<double>(end), 1.0, dtype); }

Tensor eye(int64_t n, DType dtype) {
  Tensor t = zeros({n, n}, dtype);
  for (int64_t i = 0; i < n; ++i) t.set({i, i}, 1.0);
  return t;
}

Tensor rand(const Shape& shape, Generator& gen, DType dtype) { return uniform(shape, 0.0, 1.0, gen, dtype); }

Tensor uniform(const Shape& shape, double low, double high, Generator& gen, DType dtype) {
  require_floating("uniform", dtype);
  NF_CHECK(low <= high, "uniform: low ", low, " exceeds high ", high);
  return draw("uniform", shape, dtype, Distribution::uniform, low, high, gen);
}

Tensor randn(const Shape& shape, Generator& gen, DType dtype) { return normal(shape, 0.0, 1.0, gen, dtype); }

Tensor normal(const Shape& shape, double mean, double std, Generator& gen, DType dtype) {
  require_floating("normal", dtype);
  NF_CHECK(std >= 0.0, "normal: std must be non-negative, got ", std);
  return draw("normal", shape, dtype, Distribution::normal, mean, std, gen);
}

void normal_(const Tensor& t, double mean, double std, Generator& gen) {
  require_floating("normal_", t.dtype());
  NF_CHECK(std >= 0.0, "normal_: std must be non-negative, got ", std);
  NF_CHECK(t.is_contiguous(), "normal_: the tensor must be contiguous, got shape ", shape_str(t.shape()), " strides ",
           shape_str(t.strides()));
  const uint64_t first = gen.reserve(static_cast<uint64_t>(t.numel()));
  if (!t_skip_random_init) kRandom.get(t.device(), "normal_")(t, Distribution::normal, mean, std, gen.seed(), first);
}

SkipRandomInitGuard::SkipRandomInitGuard() : previous_(t_skip_random_init) { t_skip_random_init = true; }
SkipRandomInitGuard::~SkipRandomInitGuard() { t_skip_random_init = previous_; }

Tensor randint(int64_t low, int64_t high, const Shape& shape, Generator& gen, DType dtype) {
  NF_CHECK(dtype == DType::i32 || dtype == DType::i64, "randint: dtype ", dtype_name(dtype), " is not an integer dtype");
  NF_CHECK(low < high, "randint: empty range [", low, ", ", high, ")");
  return draw("randint", shape, dtype, Distribution::randint, static_cast<double>(low), static_cast<double>(high), gen);
}

Tensor bernoulli(const Shape& shape, double p, Generator& gen, DType dtype) {
  NF_CHECK(p >= 0.0 && p <= 1.0, "bernoulli: probability ", p, " outside [0, 1]");
  return draw("bernoulli", shape, dtype, Distribution::bernoulli, p, 0.0, gen);
}

}  // namespace nf
