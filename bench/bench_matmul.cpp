// matmul and linear against a direct cblas_sgemm call (into the same BLAS library the engine
// loaded, src/core/blas_library.h) on the same operands, in one run. The
// acceptance bar is that our wrapper costs nothing: >= 95% of the direct call's GFLOP/s.
// Mixed precision at the linear shapes of training minimind2-small (batch 8 x 256 = 2048 rows, dim
// 512, kv 128, hidden 1408, vocab 6400), next to sgemm: the bf16 GEMM alone on rounded operands
// (what autocast's products can reach), linear under AutocastGuard(bf16) with its roundings (the
// weight's in every iteration, as in a training step), and with the weight's copy reused (one
// guard around all iterations: what caching the weight per step would save), and one linear's
// training step (forward and both backward GEMMs) in f32 and under autocast.
// scripts/run-bench.sh runs this with repetitions and random interleaving and prints the median
// ratios.
#include <benchmark/benchmark.h>

#include <optional>

#include "bench_support.h"
#include "core/blas_library.h"
#include "nanoformer/nanoformer.h"
#include "nanoformer/ops/autocast.h"
#include "ops/cpu/matmul/matmul.h"

namespace {

using nf::Tensor;

struct Shapes {
  int64_t M, N, K;
};

Shapes shapes_of(const benchmark::State& state) { return {state.range(0), state.range(1), state.range(2)}; }

// GFLOP/s of `gemms` (M, N, K) products per iteration
void report(benchmark::State& state, double gemms = 1) {
  const auto [M, N, K] = shapes_of(state);
  state.counters["GFLOP/s"] = benchmark::Counter(gemms * 2.0 * static_cast<double>(M * N * K) * static_cast<double>(state.iterations()),
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

// C (M, N) = A (M, K) B^T with B (N, K), bf16 operands, f32 out: the GEMM behind autocast's linear
void BM_bf16_gemm(benchmark::State& state) {
  const auto [M, N, K] = shapes_of(state);
  nf::Generator gen(0);
  const Tensor x = nf::randn({M, K}, gen).to(nf::DType::bf16), w = nf::randn({N, K}, gen).to(nf::DType::bf16);
  const Tensor y = nf::zeros({M, N});
  for (auto _ : state) {
    nf::cpu::matmul(y, x, w.t());
    benchmark::ClobberMemory();
  }
  report(state);
}

// linear under AutocastGuard(bf16): a guard per iteration rounds the weight every time (as each
// training step does); one guard around all iterations rounds it once and reuses the copy
void bf16_linear(benchmark::State& state, bool guard_per_iteration) {
  const auto [M, N, K] = shapes_of(state);
  nf::Generator gen(0);
  Tensor x = nf::randn({M, K}, gen), w = nf::randn({N, K}, gen).set_requires_grad(true);
  nf::NoGradGuard no_grad;
  std::optional<nf::AutocastGuard> outer;
  if (!guard_per_iteration) outer.emplace(nf::DType::bf16);
  for (auto _ : state) {
    nf::AutocastGuard guard(nf::DType::bf16);
    Tensor y = nf::linear(x, w);
    benchmark::DoNotOptimize(y.raw_data());
  }
  report(state);
}

void BM_bf16_linear(benchmark::State& state) { bf16_linear(state, true); }
void BM_bf16_linear_cached(benchmark::State& state) { bf16_linear(state, false); }

// A training step's three GEMMs of one linear layer: y = x W^T, dx = dy W, dW = dy^T x
// (6 M N K FLOPs), in f32 and under AutocastGuard(bf16) (roundings of x, W and dy included).
void linear_step(benchmark::State& state, nf::DType autocast) {
  const auto [M, N, K] = shapes_of(state);
  nf::Generator gen(0);
  Tensor x = nf::randn({M, K}, gen).set_requires_grad(true), w = nf::randn({N, K}, gen).set_requires_grad(true);
  const Tensor dy = nf::randn({M, N}, gen);
  for (auto _ : state) {
    nf::AutocastGuard guard(autocast);
    nf::linear(x, w).backward(dy);
    x.zero_grad();
    w.zero_grad();
  }
  report(state, 3);
}

void BM_f32_linear_step(benchmark::State& state) { linear_step(state, nf::DType::f32); }
void BM_bf16_linear_step(benchmark::State& state) { linear_step(state, nf::DType::bf16); }

void training_shapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"M", "N", "K"});
  b->Args({2048, 512, 512})->Args({2048, 128, 512})->Args({2048, 1408, 512})->Args({2048, 512, 1408});
  b->Args({2048, 6400, 512})->Args({512, 1408, 2048});
  b->Unit(benchmark::kMillisecond)->UseRealTime();
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
BENCHMARK(BM_cblas_sgemm_nt)->Name("BM_sgemm_nt_training")->Apply(training_shapes);
BENCHMARK(BM_bf16_gemm)->Apply(training_shapes);
BENCHMARK(BM_bf16_linear)->Apply(training_shapes);
BENCHMARK(BM_bf16_linear_cached)->Apply(training_shapes);
BENCHMARK(BM_f32_linear_step)->Apply(training_shapes);
BENCHMARK(BM_bf16_linear_step)->Apply(training_shapes);

}  // namespace

int main(int argc, char** argv) {
  benchmark::AddCustomContext("bf16 gemm", nf::bf16_gemm_info());
  return nf::bench::run_benchmarks(argc, argv,
                                   {{"BM_nf_matmul", "BM_cblas_sgemm"},
                                    {"BM_nf_linear", "BM_cblas_sgemm_nt"},
                                    {"BM_bf16_gemm", "BM_sgemm_nt_training"},
                                    {"BM_bf16_linear", "BM_sgemm_nt_training"},
                                    {"BM_bf16_linear_cached", "BM_bf16_linear"},
                                    {"BM_bf16_linear_step", "BM_f32_linear_step"}});
}
