// matmul and linear against a direct cblas_sgemm call (into the same BLAS library the engine
// loaded, src/core/blas_library.h) on the same operands, in one run. The
// acceptance bar is that our wrapper costs nothing: >= 95% of the direct call's GFLOP/s.
// scripts/run-bench.sh runs this with repetitions and random interleaving and prints the median
// ratios.
#include <benchmark/benchmark.h>
#include "bench_support.h"
#include "core/blas_library.h"
#include "nanoformer/nanoformer.h"

namespace {

using nf::Tensor;

struct Shapes {
  int64_t M, N, K;
};

Shapes shapes_of(const benchmark::State& state) { return {state.range(0), state.range(1), state.range(2)}; }

void report(benchmark::State& state) {
  const auto [M, N, K] = shapes_of(state);
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * static_cast<double>(M * N * K) * static_cast<double>(state.iterations()),
                                                 benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
}

// C (M, N) = A (M, K) @ B (K, N), all row-major
void BM_cblas_sgemm(benchmark::State& state) {
  const auto [M, N, K] = shapes_of(state);
  nf::Generator gen(0);
  Tensor a = nf::randn({M, K}, gen), b = nf::randn({K, N}, gen), c = nf::zeros({M, N});
  const auto sgemm = nf::blas::library().sgemm;
  for (auto _ : state) {
    sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1.0f, a.data<float>(), K, b.data<float>(), N, 0.0f,
                c.data<float>(), N);
    benchmark::ClobberMemory();
  }
  report(state);
}

void BM_nf_matmul(benchmark::State& state) {
  const auto [M, N, K] = shapes_of(state);
  nf::Generator gen(0);
  Tensor a = nf::randn({M, K}, gen), b = nf::randn({K, N}, gen);
  for (auto _ : state) {
    Tensor c = nf::matmul(a, b);
    benchmark::DoNotOptimize(c.raw_data());
  }
  report(state);
}

// y (M, N) = x (M, K) @ W^T with W (N, K): the layout of a Linear layer
void BM_cblas_sgemm_nt(benchmark::State& state) {
  const auto [M, N, K] = shapes_of(state);
  nf::Generator gen(0);
  Tensor x = nf::randn({M, K}, gen), w = nf::randn({N, K}, gen), y = nf::zeros({M, N});
  const auto sgemm = nf::blas::library().sgemm;
  for (auto _ : state) {
    sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1.0f, x.data<float>(), K, w.data<float>(), K, 0.0f,
                y.data<float>(), N);
    benchmark::ClobberMemory();
  }
  report(state);
}

void BM_nf_linear(benchmark::State& state) {
  const auto [M, N, K] = shapes_of(state);
  nf::Generator gen(0);
  Tensor x = nf::randn({M, K}, gen), w = nf::randn({N, K}, gen);
  for (auto _ : state) {
    Tensor y = nf::linear(x, w);
    benchmark::DoNotOptimize(y.raw_data());
  }
  report(state);
}

void shapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"M", "N", "K"});
  b->Args({2048, 512, 512})->Args({2048, 1408, 512})->Args({2048, 6400, 512})->Args({2048, 2048, 2048});
  b->Unit(benchmark::kMillisecond)->UseRealTime();
}

BENCHMARK(BM_cblas_sgemm)->Apply(shapes);
BENCHMARK(BM_nf_matmul)->Apply(shapes);
BENCHMARK(BM_cblas_sgemm_nt)->Apply(shapes);
BENCHMARK(BM_nf_linear)->Apply(shapes);

}  // namespace

int main(int argc, char** argv) {
  return nf::bench::run_benchmarks(argc, argv, {{"BM_nf_matmul", "BM_cblas_sgemm"}, {"BM_nf_linear", "BM_cblas_sgemm_nt"}});
}
