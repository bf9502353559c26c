// scaled_dot_product_attention, causal, f32: the fused kernel against the plain composition of our
// own ops (matmul -> mask -> softmax -> matmul) in the same run, forward and forward+backward, at
// (B, H, T, D) = (1, 8, 512, 64), (4, 8, 256, 64), and a GQA case (1, 8 query heads over 2 kv
// heads, 512, 64). Compare with tools/bench/torch_attention.py at the same thread count.
#include <benchmark/benchmark.h>

#include "bench_support.h"
#include "nanoformer/nanoformer.h"

namespace {

using nf::Tensor;

struct Inputs {
  Tensor q, k, v, grad_out;
};

// args: B, H, Hkv, T, D
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
  for (auto _ : state) {
    const Tensor out = nf::scaled_dot_product_attention(in.q, in.k, in.v, {.causal = true, .kernel = kernel});
    benchmark::DoNotOptimize(out.raw_data());
  }
}

void forward_backward(benchmark::State& state, nf::AttentionKernel kernel) {
  const Inputs in = make_inputs(state, true);
  for (auto _ : state) {
    nf::scaled_dot_product_attention(in.q, in.k, in.v, {.causal = true, .kernel = kernel}).backward(in.grad_out);
    benchmark::DoNotOptimize(in.q.grad().raw_data());
    for (const Tensor* t : {&in.q, &in.k, &in.v}) t->zero_grad();
  }
}

void BM_nf_attention_fused(benchmark::State& state) { forward(state, nf::AttentionKernel::fused); }
void BM_nf_attention_plain(benchmark::State& state) { forward(state, nf::AttentionKernel::plain); }
void BM_nf_attention_fused_fwd_bwd(benchmark::State& state) { forward_backward(state, nf::AttentionKernel::fused); }
void BM_nf_attention_plain_fwd_bwd(benchmark::State& state) { forward_backward(state, nf::AttentionKernel::plain); }

void shapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"B", "H", "Hkv", "T", "D"})
      ->Args({1, 8, 8, 512, 64})
      ->Args({4, 8, 8, 256, 64})
      ->Args({1, 8, 2, 512, 64})
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
