// The fused norm and SwiGLU kernels against the unfused composition of our own ops, in the same
// run, at the shapes of real models: rms_norm and layer_norm over (B*T, D) = (2048, 512) and
// (2048, 768) (MiniMind, GPT-2 small), swiglu over (2048, 1408) (MiniMind's hidden size). Forward
// alone, and forward + backward (every input and parameter gradient, as training runs it).
// PyTorch's timings of the same cases: tools/bench/torch_norms.py.
#include <benchmark/benchmark.h>

#include <vector>

#include "bench_support.h"
#include "nanoformer/nanoformer.h"

namespace {

using nf::Tensor;

constexpr double kEps = 1e-5;

Tensor random(const nf::Shape& shape, uint64_t seed) {
  nf::Generator gen(seed);
  return nf::randn(shape, gen);
}

// Times f() (forward only).
template <class F>
void time_forward(benchmark::State& state, F f) {
  for (auto _ : state) benchmark::DoNotOptimize(f().raw_data());
}

// Times f() followed by backward with a fixed upstream gradient; `leaves` have their gradients
// dropped after each iteration.
template <class F>
void time_forward_backward(benchmark::State& state, const std::vector<Tensor>& leaves, F f) {
  const Tensor dy = random(f().shape(), 99);
  for (auto _ : state) {
    f().backward(dy);
    for (const Tensor& t : leaves) {
      benchmark::DoNotOptimize(t.grad().raw_data());
      t.zero_grad();
    }
  }
}

// ---- rms_norm: y = x * rsqrt(mean(x^2) + eps) * w ----

struct RmsInputs {
  Tensor x, w;
  explicit RmsInputs(const benchmark::State& s)
      : x(random({s.range(0), s.range(1)}, 1).set_requires_grad()), w(random({s.range(1)}, 2).set_requires_grad()) {}
};

Tensor unfused_rms_norm(const Tensor& x, const Tensor& w) {
  return x * nf::rsqrt(nf::mean(x * x, {-1}, true) + kEps) * w;
}

void BM_fused_rms_norm(benchmark::State& state) {
  const RmsInputs in(state);
  nf::NoGradGuard no_grad;
  time_forward(state, [&] { return nf::rms_norm(in.x, in.w, kEps); });
}

void BM_unfused_rms_norm(benchmark::State& state) {
  const RmsInputs in(state);
  nf::NoGradGuard no_grad;
  time_forward(state, [&] { return unfused_rms_norm(in.x, in.w); });
}

void BM_fused_rms_norm_fwd_bwd(benchmark::State& state) {
  const RmsInputs in(state);
  time_forward_backward(state, {in.x, in.w}, [&] { return nf::rms_norm(in.x, in.w, kEps); });
}

void BM_unfused_rms_norm_fwd_bwd(benchmark::State& state) {
  const RmsInputs in(state);
  time_forward_backward(state, {in.x, in.w}, [&] { return unfused_rms_norm(in.x, in.w); });
}

// ---- layer_norm: y = (x - mean) * rsqrt(var + eps) * w + b ----

struct LayerNormInputs {
  Tensor x, w, b;
  explicit LayerNormInputs(const benchmark::State& s)
      : x(random({s.range(0), s.range(1)}, 3).set_requires_grad()),
        w(random({s.range(1)}, 4).set_requires_grad()),
        b(random({s.range(1)}, 5).set_requires_grad()) {}
};

Tensor unfused_layer_norm(const Tensor& x, const Tensor& w, const Tensor& b) {
  return (x - nf::mean(x, {-1}, true)) * nf::rsqrt(nf::var(x, {-1}, 0, true) + kEps) * w + b;
}

void BM_fused_layer_norm(benchmark::State& state) {
  const LayerNormInputs in(state);
  nf::NoGradGuard no_grad;
  time_forward(state, [&] { return nf::layer_norm(in.x, in.w, in.b, kEps); });
}

void BM_unfused_layer_norm(benchmark::State& state) {
  const LayerNormInputs in(state);
  nf::NoGradGuard no_grad;
  time_forward(state, [&] { return unfused_layer_norm(in.x, in.w, in.b); });
}

void BM_fused_layer_norm_fwd_bwd(benchmark::State& state) {
  const LayerNormInputs in(state);
  time_forward_backward(state, {in.x, in.w, in.b}, [&] { return nf::layer_norm(in.x, in.w, in.b, kEps); });
}

void BM_unfused_layer_norm_fwd_bwd(benchmark::State& state) {
  const LayerNormInputs in(state);
  time_forward_backward(state, {in.x, in.w, in.b}, [&] { return unfused_layer_norm(in.x, in.w, in.b); });
}

// ---- swiglu: y = silu(a) * b ----

struct SwigluInputs {
  Tensor a, b;
  explicit SwigluInputs(const benchmark::State& s)
      : a(random({s.range(0), s.range(1)}, 6).set_requires_grad()),
        b(random({s.range(0), s.range(1)}, 7).set_requires_grad()) {}
};

void BM_fused_swiglu(benchmark::State& state) {
  const SwigluInputs in(state);
  nf::NoGradGuard no_grad;
  time_forward(state, [&] { return nf::swiglu(in.a, in.b); });
}

void BM_unfused_swiglu(benchmark::State& state) {
  const SwigluInputs in(state);
  nf::NoGradGuard no_grad;
  time_forward(state, [&] { return nf::silu(in.a) * in.b; });
}

void BM_fused_swiglu_fwd_bwd(benchmark::State& state) {
  const SwigluInputs in(state);
  time_forward_backward(state, {in.a, in.b}, [&] { return nf::swiglu(in.a, in.b); });
}

void BM_unfused_swiglu_fwd_bwd(benchmark::State& state) {
  const SwigluInputs in(state);
  time_forward_backward(state, {in.a, in.b}, [&] { return nf::silu(in.a) * in.b; });
}

void norm_shapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"rows", "d"})->Args({2048, 512})->Args({2048, 768})->Unit(benchmark::kMicrosecond)->UseRealTime();
}

void swiglu_shapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"rows", "hidden"})->Args({2048, 1408})->Unit(benchmark::kMicrosecond)->UseRealTime();
}

BENCHMARK(BM_fused_rms_norm)->Apply(norm_shapes);
BENCHMARK(BM_unfused_rms_norm)->Apply(norm_shapes);
BENCHMARK(BM_fused_rms_norm_fwd_bwd)->Apply(norm_shapes);
BENCHMARK(BM_unfused_rms_norm_fwd_bwd)->Apply(norm_shapes);
BENCHMARK(BM_fused_layer_norm)->Apply(norm_shapes);
BENCHMARK(BM_unfused_layer_norm)->Apply(norm_shapes);
BENCHMARK(BM_fused_layer_norm_fwd_bwd)->Apply(norm_shapes);
BENCHMARK(BM_unfused_layer_norm_fwd_bwd)->Apply(norm_shapes);
BENCHMARK(BM_fused_swiglu)->Apply(swiglu_shapes);
BENCHMARK(BM_unfused_swiglu)->Apply(swiglu_shapes);
BENCHMARK(BM_fused_swiglu_fwd_bwd)->Apply(swiglu_shapes);
BENCHMARK(BM_unfused_swiglu_fwd_bwd)->Apply(swiglu_shapes);

}  // namespace

int main(int argc, char** argv) {
  return nf::bench::run_benchmarks(argc, argv,
                                   {{"BM_fused_rms_norm", "BM_unfused_rms_norm"},
                                    {"BM_fused_rms_norm_fwd_bwd", "BM_unfused_rms_norm_fwd_bwd"},
                                    {"BM_fused_layer_norm", "BM_unfused_layer_norm"},
                                    {"BM_fused_layer_norm_fwd_bwd", "BM_unfused_layer_norm_fwd_bwd"},
                                    {"BM_fused_swiglu", "BM_unfused_swiglu"},
                                    {"BM_fused_swiglu_fwd_bwd", "BM_unfused_swiglu_fwd_bwd"}});
}
