// softmax forward and backward over f32 rows, (4096, 2048) (attention-sized rows) and (512, 50304)
// (vocabulary-sized rows), against a plain baseline in the same run: the textbook three-pass loop
// with std::exp, rows split over the same threads. Bytes counted once per tensor touched: forward
// reads x and writes y; backward reads dy and y and writes dx.
#include <benchmark/benchmark.h>

#include <cmath>

#include "bench_support.h"
#include "nanoformer/nanoformer.h"

namespace {

using nf::Tensor;

Tensor random_rows(const benchmark::State& state, uint64_t seed) {
  nf::Generator gen(seed);
  return nf::randn({state.range(0), state.range(1)}, gen);
}

void count_bytes(benchmark::State& state, int64_t tensors) {
  state.SetBytesProcessed(state.iterations() * tensors * state.range(0) * state.range(1) *
                          static_cast<int64_t>(sizeof(float)));
}

void BM_nf_softmax(benchmark::State& state) {
  const Tensor x = random_rows(state, 1);
  for (auto _ : state) benchmark::DoNotOptimize(nf::softmax(x, -1).raw_data());
  count_bytes(state, 2);
}

void BM_plain_softmax(benchmark::State& state) {
  const Tensor x = random_rows(state, 1);
  const int64_t rows = state.range(0), n = state.range(1);
  for (auto _ : state) {
    Tensor y = Tensor::empty(x.shape());
    const float* px = x.data<float>();
    float* py = y.data<float>();
#pragma omp parallel for num_threads(nf::num_threads())
    for (int64_t r = 0; r < rows; ++r) {
      const float* a = px + r * n;
      float* b = py + r * n;
      float m = a[0], s = 0;
      for (int64_t i = 1; i < n; ++i) m = std::max(m, a[i]);
      for (int64_t i = 0; i < n; ++i) s += b[i] = std::exp(a[i] - m);
      for (int64_t i = 0; i < n; ++i) b[i] /= s;
    }
    benchmark::DoNotOptimize(y.raw_data());
  }
  count_bytes(state, 2);
}

void BM_nf_log_softmax(benchmark::State& state) {
  const Tensor x = random_rows(state, 1);
  for (auto _ : state) benchmark::DoNotOptimize(nf::log_softmax(x, -1).raw_data());
  count_bytes(state, 2);
}

// y = softmax(x) recorded once; each iteration runs its backward node (the fused kernel).
void BM_nf_softmax_backward(benchmark::State& state) {
  Tensor x = random_rows(state, 1).set_requires_grad(true);
  const Tensor dy = random_rows(state, 2);
  const Tensor y = nf::softmax(x, -1);
  for (auto _ : state) {
    y.backward(dy, /*retain_graph=*/true);
    benchmark::DoNotOptimize(x.grad().raw_data());
    x.zero_grad();
  }
  count_bytes(state, 3);
}

// dx = y (dy - sum(dy y)), plain loops
void BM_plain_softmax_backward(benchmark::State& state) {
  const Tensor y = nf::softmax(random_rows(state, 1), -1), dy = random_rows(state, 2);
  const int64_t rows = state.range(0), n = state.range(1);
  for (auto _ : state) {
    Tensor dx = Tensor::empty(y.shape());
    const float *py = y.data<float>(), *pg = dy.data<float>();
    float* pd = dx.data<float>();
#pragma omp parallel for num_threads(nf::num_threads())
    for (int64_t r = 0; r < rows; ++r) {
      float s = 0;
      for (int64_t i = 0; i < n; ++i) s += pg[r * n + i] * py[r * n + i];
      for (int64_t i = 0; i < n; ++i) pd[r * n + i] = py[r * n + i] * (pg[r * n + i] - s);
    }
    benchmark::DoNotOptimize(dx.raw_data());
  }
  count_bytes(state, 3);
}

void shapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"rows", "n"})->Args({4096, 2048})->Args({512, 50304})->Unit(benchmark::kMillisecond)->UseRealTime();
}

BENCHMARK(BM_nf_softmax)->Apply(shapes);
BENCHMARK(BM_plain_softmax)->Apply(shapes);
BENCHMARK(BM_nf_log_softmax)->Apply(shapes);
BENCHMARK(BM_nf_softmax_backward)->Apply(shapes);
BENCHMARK(BM_plain_softmax_backward)->Apply(shapes);

}  // namespace

int main(int argc, char** argv) {
  return nf::bench::run_benchmarks(argc, argv, {{"BM_nf_softmax", "BM_plain_softmax"},
                                                {"BM_nf_softmax_backward", "BM_plain_softmax_backward"}});
}
