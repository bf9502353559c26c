// scaled_dot_product_attention, causal, f32: the fused kernel against the plain composition of our
// own ops (matmul -> mask -> softmax -> matmul) in the same run, forward and forward+backward, at
// (B, H, T, D) = (1, 8, 512, 64), (4, 8, 256, 64), a GQA case (1, 8 query heads over 2 kv heads,
// 512, 64), and (1, 8, 1024, 64) with every earlier key (W = 0) beside a sliding window of 128 keys
// (W = 128): the fused kernel skips the key tiles outside the window, so W = 128 should take about
// a quarter of the full-causal time. Compare with tools/bench/torch_attention.py at the same thread count.
#include <benchmark/benchmark.h>

#include "bench_support.h"
#include "nanoformer/nanoformer.h"

namespace {

using nf::Tensor;

struct Inputs {
  Tensor q, k, v, grad_out;
};

// args: B, H, Hkv, T, D, W (the window; 0 = every earlier key)
Inputs make_inputs(const benchmark::State& state, bool requires_grad) {
  const int64_t B = state.range(0), H = state.range(1), Hkv = state.range(2), T = state.range(3), D = state.range(4);
  nf::Generator gen(1);
  Inputs in{nf::randn({B, H, T, D}, gen), nf::randn({B, Hkv, T, D}, gen), nf::randn({B, Hkv, T, D}, gen),
            nf::randn({B, H, T, D}, gen)};
  for (Tensor* t : {&in.q, &in.k, &in.v}) t->set_requires_grad(requires_grad);
  return in;
}

void forward(benchmark::State& state, nf::AttentionKernel kernel) {
  const Inputs in = make_inputs(state, false);
  const nf::AttentionOptions options{.causal = true, .window = state.range(5), .kernel = kernel};
  for (auto _ : state) {
    const Tensor out = nf::scaled_dot_product_attention(in.q, in.k, in.v, options);
    benchmark::DoNotOptimize(out.raw_data());
  }
}

void forward_backward(benchmark::State& state, nf::AttentionKernel kernel) {
  const Inputs in = make_inputs(state, true);
  const nf::AttentionOptions options{.causal = true, .window = state.range(5), .kernel = kernel};
  for (auto _ : state) {
    nf::scaled_dot_product_attention(in.q, in.k, in.v, options).backward(in.grad_out);
    benchmark::DoNotOptimize(in.q.grad().raw_data());
    for (const Tensor* t : {&in.q, &in.k, &in.v}) t->zero_grad();
  }
}

void BM_nf_attention_fused(benchmark::State& state) { forward(state, nf::AttentionKernel::fused); }
void BM_nf_attention_plain(benchmark::State& state) { forward(state, nf::AttentionKernel::plain); }
void BM_nf_attention_fused_fwd_bwd(benchmark::State& state) { forward_backward(state, nf::AttentionKernel::fused); }
void BM_nf_attention_plain_fwd_bwd(benchmark::State& state) { forward_backward(state, nf::AttentionKernel::plain); }

void shapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"B", "H", "Hkv", "T", "D", "W"})
      ->Args({1, 8, 8, 512, 64, 0})
      ->Args({4, 8, 8, 256, 64, 0})
      ->Args({1, 8, 2, 512, 64, 0})
      ->Args({1, 8, 8, 1024, 64, 0})
      ->Args({1, 8, 8, 1024, 64, 128})
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
}

BENCHMARK(BM_nf_attention_fused)->Apply(shapes);
BENCHMARK(BM_nf_attention_plain)->Apply(shapes);
BENCHMARK(BM_nf_attention_fused_fwd_bwd)->Apply(shapes);
BENCHMARK(BM_nf_attention_plain_fwd_bwd)->Apply(shapes);

}  // namespace

int main(int argc, char** argv) {
  return nf::bench::run_benchmarks(argc, argv, {{"BM_nf_attention_fused", "BM_nf_attention_plain"},
                                                {"BM_nf_attention_fused_fwd_bwd", "BM_nf_attention_plain_fwd_bwd"}});
}
