// Decoding's product over quantised weights (ops/cpu/quant/quant_gemv.h), y (m, n) = x (m, k) W^T,
// beside the f32 matrix-vector kernel (ops/cpu/matmul/gemv.h), for W in f32, Q8_0, Q4_0, Q5_0, Q5_1
// and the K types Q6_K, Q5_K, Q4_K, Q3_K (x quantised to Q8_K); W as a loaded GGUF file's (with_kernel_layout:
// Q8_0, Q4_0, Q5_0, Q5_1 and Q4_K on their panels where the CPU has AVX512-VNNI; NANOFORMER_PANELS=1 / 0 forces
// them on / off). Decoding is
// bound by the bytes of W read, so each case reports the GB/s of weight bytes against two limits:
//   of_read  against a plain read of the same bytes (floats summed, the same threads and copies),
//            timed call by call alternately with the product, so both meet the same machine;
//   of_bw    against the read bandwidth measured at start-up (bench/memory_bandwidth.h, one long
//            pass over 1 GiB per thread, what bench_inference's limits use; on a shared VM it can
//            read well below what short reads of a few MiB get, so of_bw may exceed 1).
// Times are the 10th percentile of the calls (`GB/s`, `read_GB/s`): on a machine shared with other
// work, the call as it runs undisturbed (a descheduled thread stalls a parallel call for
// milliseconds); `mean_GB/s` is the plain mean.
//   BM_<type>_matrix/n/k/m/cold   one matrix at the linear shapes of minimind2-small (dim 512,
//                            kv 128, hidden 1408, vocab 6400) and gpt2-124m (768, qkv 2304, 3072),
//                            m rows of x; cold 1: the calls cycle through copies of W totalling
//                            256 MiB (8x the last-level cache), so no copy is cached when read;
//                            cold 0: one copy, cached (the kernel's own speed);
//   BM_<type>_token/preset   one token's linear layers of a whole model (every 2-D weight but the
//                            embedding lookup, the tied head included) in layer order, as decode
//                            reads them: per-call fixed costs included, caches as decode finds them.
//   NANOFORMER_THREADS=2 ./build/bench_quant_gemv --benchmark_repetitions=5 --benchmark_enable_random_interleaving=true
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>

#include "bench_support.h"
#include "memory_bandwidth.h"
#include "nanoformer/autograd/grad_mode.h"
#include "nanoformer/models/config/model_config.h"
#include "nanoformer/models/decoder_lm.h"
#include "nanoformer/nanoformer.h"
#include "nanoformer/ops/quantized.h"
#include "ops/cpu/loops/loops.h"
#include "ops/cpu/simd/simd.h"

namespace {

using namespace nf;
using Clock = std::chrono::steady_clock;

constexpr int64_t kColdBytes = int64_t{256} << 20;

double read_bandwidth() {
  static const double gb_per_s = bench::measure_read_bandwidth(num_threads()).read_gb_per_s;
  return gb_per_s;
}

// A weight in one of the benchmarked types: an f32 Tensor (the f32 gemv) or a QuantizedTensor.
struct Weight {
  Tensor f32;
  QuantizedTensor q;
  double bytes() const { return f32.defined() ? 4.0 * static_cast<double>(f32.numel()) : static_cast<double>(q.nbytes()); }
  // the bytes the product reads (a quantised weight's panels where it has them)
  const void* data() const { return f32.defined() ? f32.raw_data() : q.panels() ? q.panels()->data() : q.data(); }
  Tensor linear(const Tensor& x) const { return f32.defined() ? nf::linear(x, f32) : nf::linear(x, q); }
};

// (with the kernels' layout, as a loader makes it: with_kernel_layout)
Weight make_weight(const Tensor& w, QuantType type) {
  return type == QuantType::f32 ? Weight{contiguous(w), {}} : Weight{{}, with_kernel_layout(quantize(w, type))};
}

Weight copy_of(const Weight& w) {
  if (w.f32.defined()) return {clone(w.f32), {}};
  QuantizedTensor q = QuantizedTensor::empty(w.q.type(), w.q.rows(), w.q.cols());
  std::memcpy(q.mutable_data(), w.q.data(), w.q.nbytes());
  return {{}, with_kernel_layout(q)};
}

// The sum of w's bytes read as floats, split across the engine's threads: what reading them costs.
float read_sum(const Weight& w) {
  using cpu::Simd;
  const auto* p = static_cast<const float*>(w.data());
  const int64_t n = static_cast<int64_t>(w.bytes()) / 4;
  std::vector<float> parts(static_cast<size_t>(num_threads()), 0.0f);
  cpu::parallel_for(n, kParallelGrain, [&](int64_t begin, int64_t end) {
    Simd::V a[4] = {Simd::zero(), Simd::zero(), Simd::zero(), Simd::zero()};
    int64_t i = begin;
    for (; i + 4 * Simd::width <= end; i += 4 * Simd::width)
      for (int j = 0; j < 4; ++j) a[j] = Simd::fma(Simd::load(p + i + j * Simd::width), Simd::broadcast(1.0f), a[j]);
    float s = Simd::sum(a[0]) + Simd::sum(a[1]) + Simd::sum(a[2]) + Simd::sum(a[3]);
    for (; i < end; ++i) s += p[i];
    parts[static_cast<size_t>(omp_get_thread_num()) % parts.size()] += s;
  });
  float total = 0;
  for (float v : parts) total += v;
  return total;
}

double seconds(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

double percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(q * static_cast<double>(v.size() - 1))];
}

// Per iteration: `product(i)` timed, then `read(i)` timed; counters as the header says.
template <class Product, class Read>
void measure(benchmark::State& state, double bytes, Product product, Read read) {
  std::vector<double> product_s, read_s;
  int64_t i = 0;
  for (auto _ : state) {
    const auto t0 = Clock::now();
    product(i);
    const auto t1 = Clock::now();
    read(i);
    product_s.push_back(seconds(t0, t1)), read_s.push_back(seconds(t1, Clock::now()));
    ++i;
  }
  const double p = percentile(product_s, 0.1), r = percentile(read_s, 0.1);
  double mean = 0;
  for (double s : product_s) mean += s / static_cast<double>(product_s.size());
  state.counters["GB/s"] = bytes / p / 1e9;
  state.counters["read_GB/s"] = bytes / r / 1e9;
  state.counters["of_read"] = r / p;
  state.counters["of_bw"] = bytes / p / 1e9 / read_bandwidth();
  state.counters["mean_GB/s"] = bytes / mean / 1e9;
}

void matrix(benchmark::State& state, QuantType type) {
  const int64_t n = state.range(0), k = state.range(1), m = state.range(2);
  const bool cold = state.range(3) != 0;
  Generator gen(1);
  NoGradGuard no_grad;
  std::vector<Weight> copies{make_weight(randn({n, k}, gen), type)};
  while (cold && static_cast<double>(copies.size()) * copies[0].bytes() < static_cast<double>(kColdBytes))
    copies.push_back(copy_of(copies[0]));
  const Tensor x = randn({m, k}, gen);
  const auto copy = [&](int64_t i) -> const Weight& { return copies[static_cast<size_t>(i) % copies.size()]; };
  // the read takes the copy half the cycle away: not the one the product just brought in
  measure(
      state, copies[0].bytes(), [&](int64_t i) { benchmark::DoNotOptimize(copy(i).linear(x).raw_data()); },
      [&](int64_t i) { benchmark::DoNotOptimize(read_sum(copy(i + static_cast<int64_t>(copies.size()) / 2))); });
}

// one token's linear layers of `preset` in the model's order
const std::vector<Tensor>& token_weights(const std::string& preset) {
  static std::map<std::string, std::vector<Tensor>> cache;
  auto [it, added] = cache.try_emplace(preset);
  if (added) {
    Generator gen(1);
    const models::DecoderLM lm(models::preset_config(preset), gen);
    for (const auto& [name, w] : lm.named_parameters())
      if (w.dim() == 2 && name.rfind("pos_embeddings", 0) != 0 && (name.rfind("tok_embeddings", 0) != 0 || !lm.output))
        it->second.push_back(w.detach());
  }
  return it->second;
}

const char* kPresets[] = {"minimind2-small", "gpt2-124m"};

void token(benchmark::State& state, QuantType type) {
  NoGradGuard no_grad;
  std::vector<Weight> weights;
  std::vector<Tensor> inputs;
  double bytes = 0;
  Generator gen(2);
  for (const Tensor& w : token_weights(kPresets[state.range(0)])) {
    weights.push_back(make_weight(w, type));
    inputs.push_back(randn({1, w.size(1)}, gen));
    bytes += weights.back().bytes();
  }
  measure(
      state, bytes,
      [&](int64_t) {
        for (size_t i = 0; i < weights.size(); ++i) benchmark::DoNotOptimize(weights[i].linear(inputs[i]).raw_data());
      },
      [&](int64_t) {
        for (const Weight& w : weights) benchmark::DoNotOptimize(read_sum(w));
      });
  state.SetLabel(kPresets[state.range(0)]);
}

#define NF_QUANT_BENCH(type)                                                            \
  void BM_##type##_matrix(benchmark::State& state) { matrix(state, QuantType::type); } \
  void BM_##type##_token(benchmark::State& state) { token(state, QuantType::type); }
NF_QUANT_BENCH(f32)
NF_QUANT_BENCH(q8_0)
NF_QUANT_BENCH(q4_0)
NF_QUANT_BENCH(q5_0)
NF_QUANT_BENCH(q5_1)
NF_QUANT_BENCH(q6_k)
NF_QUANT_BENCH(q5_k)
NF_QUANT_BENCH(q4_k)
NF_QUANT_BENCH(q3_k)

void matrix_shapes(benchmark::internal::Benchmark* b) {
  // minimind2-small: attention (512, 512), kv (128, 512), MLP (1408, 512) and (512, 1408), head (6400, 512);
  // gpt2-124m: (768, 768), qkv (2304, 768), MLP (3072, 768) and (768, 3072)
  const int64_t shapes[][2] = {{512, 512}, {128, 512}, {1408, 512}, {512, 1408}, {6400, 512},
                               {768, 768}, {2304, 768}, {3072, 768}, {768, 3072}};
  for (const auto& s : shapes) b->Args({s[0], s[1], 1, 1});
  for (int64_t m : {2, 4, 8}) b->Args({1408, 512, m, 1});  // a verified draft, the server's batched rows
  for (int64_t m : {1, 2, 4}) b->Args({1408, 512, m, 0});   // one copy, cached: the kernel's own speed
  b->ArgNames({"n", "k", "m", "cold"})->UseRealTime();
}

// the K types' super-blocks of 256: the shapes whose k is whole super-blocks (not minimind2-small's
// k = 1408), and gpt2-124m's token
void k_matrix_shapes(benchmark::internal::Benchmark* b) {
  const int64_t shapes[][2] = {{512, 512}, {128, 512}, {1408, 512}, {6400, 512}, {768, 768}, {2304, 768}, {3072, 768}, {768, 3072}};
  for (const auto& s : shapes) b->Args({s[0], s[1], 1, 1});
  for (int64_t m : {2, 4, 8}) b->Args({1408, 512, m, 1});
  for (int64_t m : {1, 2, 4}) b->Args({1408, 512, m, 0});
  b->ArgNames({"n", "k", "m", "cold"})->UseRealTime();
}

void k_token_presets(benchmark::internal::Benchmark* b) { b->Arg(1)->ArgName("preset")->Unit(benchmark::kMillisecond)->UseRealTime(); }

void token_presets(benchmark::internal::Benchmark* b) { b->Arg(0)->Arg(1)->ArgName("preset")->Unit(benchmark::kMillisecond)->UseRealTime(); }

}  // namespace

BENCHMARK(BM_f32_matrix)->Apply(matrix_shapes);
BENCHMARK(BM_q8_0_matrix)->Apply(matrix_shapes);
BENCHMARK(BM_q4_0_matrix)->Apply(matrix_shapes);
BENCHMARK(BM_q5_0_matrix)->Apply(matrix_shapes);
BENCHMARK(BM_q5_1_matrix)->Apply(matrix_shapes);
BENCHMARK(BM_q6_k_matrix)->Apply(k_matrix_shapes);
BENCHMARK(BM_q5_k_matrix)->Apply(k_matrix_shapes);
BENCHMARK(BM_q4_k_matrix)->Apply(k_matrix_shapes);
BENCHMARK(BM_q3_k_matrix)->Apply(k_matrix_shapes);
BENCHMARK(BM_f32_token)->Apply(token_presets);
BENCHMARK(BM_q8_0_token)->Apply(token_presets);
BENCHMARK(BM_q4_0_token)->Apply(token_presets);
BENCHMARK(BM_q5_0_token)->Apply(token_presets);
BENCHMARK(BM_q5_1_token)->Apply(token_presets);
BENCHMARK(BM_q6_k_token)->Apply(k_token_presets);
BENCHMARK(BM_q5_k_token)->Apply(k_token_presets);
BENCHMARK(BM_q4_k_token)->Apply(k_token_presets);
BENCHMARK(BM_q3_k_token)->Apply(k_token_presets);

int main(int argc, char** argv) {
  benchmark::AddCustomContext("read_gb_per_s", std::to_string(read_bandwidth()));
  return nf::bench::run_benchmarks(argc, argv);
}
