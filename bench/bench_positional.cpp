// Rotary embedding on q of (B, H, T, D) = (4, 8, 512, 64) f32, the fused op against the unfused
// composition of our own ops (narrow, mul, add/sub, cat or stack) in the same run, for each
// layout (0 interleaved, 1 half, 2 half_negative): forward alone, and forward + backward.
// Bytes counted once per tensor touched: forward reads x and writes y; backward reads dy, writes dx.
// The CPU column is the whole process's CPU time (all threads): on a loaded machine it is steadier
// than wall time, and comparable with tools/bench/torch_positional.py's CPU column.
#include <benchmark/benchmark.h>

#include "bench_support.h"
#include "nanoformer/nanoformer.h"

namespace {

using nf::Tensor;

constexpr int64_t kB = 4, kH = 8, kT = 512, kD = 64;

using RopeFn = Tensor (*)(const Tensor&, const Tensor&, const Tensor&, int64_t, nf::RopeLayout);

struct Setup {
  Tensor x, grad;
  nf::RopeTables tables = nf::rope_tables(2 * kT, kD, 1e4);
  nf::RopeLayout layout;
  explicit Setup(const benchmark::State& state) : layout(static_cast<nf::RopeLayout>(state.range(0))) {
    nf::Generator gen(1);
    x = nf::randn({kB, kH, kT, kD}, gen);
    grad = nf::randn({kB, kH, kT, kD}, gen);
  }
};

void count_bytes(benchmark::State& state, int64_t tensors) {
  state.SetBytesProcessed(state.iterations() * tensors * kB * kH * kT * kD * static_cast<int64_t>(sizeof(float)));
}

void forward(benchmark::State& state, RopeFn fn) {
  const Setup s(state);
  for (auto _ : state) benchmark::DoNotOptimize(fn(s.x, s.tables.cos, s.tables.sin, kT, s.layout).raw_data());
  count_bytes(state, 2);
}

void forward_backward(benchmark::State& state, RopeFn fn) {
  Setup s(state);
  s.x.set_requires_grad(true);
  for (auto _ : state) {
    fn(s.x, s.tables.cos, s.tables.sin, kT, s.layout).backward(s.grad);
    benchmark::DoNotOptimize(s.x.grad().raw_data());
    s.x.zero_grad();
  }
  count_bytes(state, 4);
}

void BM_nf_rope(benchmark::State& state) { forward(state, nf::rope); }
void BM_unfused_rope(benchmark::State& state) { forward(state, nf::rope_unfused); }
void BM_nf_rope_fwd_bwd(benchmark::State& state) { forward_backward(state, nf::rope); }
void BM_unfused_rope_fwd_bwd(benchmark::State& state) { forward_backward(state, nf::rope_unfused); }

}  // namespace

BENCHMARK(BM_nf_rope)->DenseRange(0, 2)->ArgName("layout")->Unit(benchmark::kMicrosecond)->MeasureProcessCPUTime()->UseRealTime();
BENCHMARK(BM_unfused_rope)->DenseRange(0, 2)->ArgName("layout")->Unit(benchmark::kMicrosecond)->MeasureProcessCPUTime()->UseRealTime();
BENCHMARK(BM_nf_rope_fwd_bwd)->DenseRange(0, 2)->ArgName("layout")->Unit(benchmark::kMicrosecond)->MeasureProcessCPUTime()->UseRealTime();
BENCHMARK(BM_unfused_rope_fwd_bwd)->DenseRange(0, 2)->ArgName("layout")->Unit(benchmark::kMicrosecond)->MeasureProcessCPUTime()->UseRealTime();

int main(int argc, char** argv) {
  return nf::bench::run_benchmarks(argc, argv,
                                   {{"BM_nf_rope", "BM_unfused_rope"}, {"BM_nf_rope_fwd_bwd", "BM_unfused_rope_fwd_bwd"}});
}
