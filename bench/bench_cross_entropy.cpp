// cross_entropy forward + backward (reduction mean) over f32 logits, (N=4096, C=6400) and
// (N=1024, C=50304), against a plain unfused baseline in the same run: log_softmax materialised as
// an (N, C) tensor with std::exp / std::log, the loss gathered from it, and the gradient
// e^logp - onehot, rows split over the same threads. Bytes counted once per (N, C) tensor touched:
// logits read by forward and by backward, dlogits written.
#include <benchmark/benchmark.h>

#include <cmath>

#include "bench_support.h"
#include "nanoformer/nanoformer.h"

namespace {

using nf::Tensor;

struct Problem {
  Tensor logits, target;
};

Problem make_problem(const benchmark::State& state) {
  nf::Generator gen(1);
  return {nf::randn({state.range(0), state.range(1)}, gen), nf::randint(0, state.range(1), {state.range(0)}, gen)};
}

void count_bytes(benchmark::State& state) {
  state.SetBytesProcessed(state.iterations() * 3 * state.range(0) * state.range(1) * static_cast<int64_t>(sizeof(float)));
}

void BM_nf_cross_entropy(benchmark::State& state) {
  Problem p = make_problem(state);
  p.logits.set_requires_grad(true);
  for (auto _ : state) {
    nf::cross_entropy(p.logits, p.target).backward();
    benchmark::DoNotOptimize(p.logits.grad().raw_data());
    p.logits.zero_grad();
  }
  count_bytes(state);
}

void BM_plain_cross_entropy(benchmark::State& state) {
  const Problem p = make_problem(state);
  const int64_t rows = state.range(0), n = state.range(1);
  for (auto _ : state) {
    Tensor logp = Tensor::empty(p.logits.shape()), dx = Tensor::empty(p.logits.shape());
    const float* px = p.logits.data<float>();
    const int64_t* pt = p.target.data<int64_t>();
    float *pl = logp.data<float>(), *pd = dx.data<float>();
    double loss = 0;
#pragma omp parallel for num_threads(nf::num_threads()) reduction(+ : loss)
    for (int64_t r = 0; r < rows; ++r) {
      const float* a = px + r * n;
      float* b = pl + r * n;
      float m = a[0], s = 0;
      for (int64_t i = 1; i < n; ++i) m = std::max(m, a[i]);
      for (int64_t i = 0; i < n; ++i) s += std::exp(a[i] - m);
      const float lse = m + std::log(s);
      for (int64_t i = 0; i < n; ++i) b[i] = a[i] - lse;
      loss -= b[pt[r]];
    }
    const float scale = 1.0f / static_cast<float>(rows);
#pragma omp parallel for num_threads(nf::num_threads())
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t i = 0; i < n; ++i) pd[r * n + i] = std::exp(pl[r * n + i]) * scale;
      pd[r * n + pt[r]] -= scale;
    }
    benchmark::DoNotOptimize(loss);
    benchmark::DoNotOptimize(dx.raw_data());
  }
  count_bytes(state);
}

void shapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"N", "C"})->Args({4096, 6400})->Args({1024, 50304})->Unit(benchmark::kMillisecond)->UseRealTime();
}

BENCHMARK(BM_nf_cross_entropy)->Apply(shapes);
BENCHMARK(BM_plain_cross_entropy)->Apply(shapes);

}  // namespace

int main(int argc, char** argv) {
  return nf::bench::run_benchmarks(argc, argv, {{"BM_nf_cross_entropy", "BM_plain_cross_entropy"}});
}
