// Elementwise kernels over (2048, 2048) f32: gelu (erf and tanh forms) forward and backward, a plain
// std::erf / std::tanh loop as the baseline for gelu, and add with broadcasting. Throughput is
// bytes read + written per second, each tensor counted once: gelu forward reads x, writes y;
// backward reads dy and x, writes dx; add reads both operands and writes the result.
#include <benchmark/benchmark.h>

#include <cmath>
#include <string>

#include "nanoformer/nanoformer.h"

namespace {

using nf::Tensor;

constexpr int64_t kRows = 2048, kCols = 2048;

Tensor random_tensor(const nf::Shape& shape, uint64_t seed) {
  nf::Generator gen(seed);
  return nf::randn(shape, gen);
}

void count_bytes(benchmark::State& state, int64_t elements) {
  state.SetBytesProcessed(state.iterations() * elements * static_cast<int64_t>(sizeof(float)));
}

nf::GeluApprox approx_of(const benchmark::State& state) {
  return state.range(0) == 0 ? nf::GeluApprox::none : nf::GeluApprox::tanh;
}

void BM_gelu_forward(benchmark::State& state) {
  const Tensor x = random_tensor({kRows, kCols}, 1);
  const nf::GeluApprox approx = approx_of(state);
  for (auto _ : state) benchmark::DoNotOptimize(nf::gelu(x, approx).raw_data());
  count_bytes(state, 2 * x.numel());
}

// y = gelu(x) recorded once; each iteration runs its backward (the fused dx = dy gelu'(x) kernel).
void BM_gelu_backward(benchmark::State& state) {
  Tensor x = random_tensor({kRows, kCols}, 1).set_requires_grad(true);
  const Tensor dy = random_tensor({kRows, kCols}, 2);
  const Tensor y = nf::gelu(x, approx_of(state));
  for (auto _ : state) {
    y.backward(dy, /*retain_graph=*/true);
    benchmark::DoNotOptimize(x.grad().raw_data());
    x.zero_grad();
  }
  count_bytes(state, 3 * x.numel());
}

// The textbook formulas with std:: math, threaded the same way: what a scalar kernel costs.
void BM_plain_gelu_forward(benchmark::State& state) {
  const Tensor x = random_tensor({kRows, kCols}, 1);
  const bool exact = approx_of(state) == nf::GeluApprox::none;
  const int64_t n = x.numel();
  for (auto _ : state) {
    Tensor y = Tensor::empty(x.shape());
    const float* px = x.data<float>();
    float* py = y.data<float>();
#pragma omp parallel for num_threads(nf::num_threads())
    for (int64_t i = 0; i < n; ++i) {
      const float v = px[i];
      py[i] = exact ? 0.5f * v * (1.0f + std::erf(v * 0.70710678f))
                    : 0.5f * v * (1.0f + std::tanh(0.79788456f * (v + 0.044715f * v * v * v)));
    }
    benchmark::DoNotOptimize(y.raw_data());
  }
  count_bytes(state, 2 * n);
}

// (2048, 2048) + (2048): a bias added to every row
void BM_add_row_broadcast(benchmark::State& state) {
  const Tensor a = random_tensor({kRows, kCols}, 1), b = random_tensor({kCols}, 2);
  for (auto _ : state) benchmark::DoNotOptimize(nf::add(a, b).raw_data());
  count_bytes(state, 2 * a.numel() + b.numel());
}

// (2048, 1) + (1, 2048): both operands broadcast (an outer sum)
void BM_add_outer_broadcast(benchmark::State& state) {
  const Tensor a = random_tensor({kRows, 1}, 1), b = random_tensor({1, kCols}, 2);
  for (auto _ : state) benchmark::DoNotOptimize(nf::add(a, b).raw_data());
  count_bytes(state, kRows * kCols + kRows + kCols);
}

// (2048, 2048) + (2048, 2048): no broadcasting, for reference
void BM_add_same_shape(benchmark::State& state) {
  const Tensor a = random_tensor({kRows, kCols}, 1), b = random_tensor({kRows, kCols}, 2);
  for (auto _ : state) benchmark::DoNotOptimize(nf::add(a, b).raw_data());
  count_bytes(state, 3 * a.numel());
}

void gelu_forms(benchmark::internal::Benchmark* b) {
  b->ArgName("tanh")->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();
}

BENCHMARK(BM_gelu_forward)->Apply(gelu_forms);
BENCHMARK(BM_plain_gelu_forward)->Apply(gelu_forms);
BENCHMARK(BM_gelu_backward)->Apply(gelu_forms);
BENCHMARK(BM_add_row_broadcast)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_add_outer_broadcast)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_add_same_shape)->Unit(benchmark::kMillisecond)->UseRealTime();

// Recorded before BENCHMARK_MAIN's main runs, so every report states the BLAS and thread count.
const bool kContextAdded = [] {
  benchmark::AddCustomContext("blas", nf::blas_info());
  benchmark::AddCustomContext("threads", std::to_string(nf::num_threads()));
  return true;
}();

}  // namespace

BENCHMARK_MAIN();
