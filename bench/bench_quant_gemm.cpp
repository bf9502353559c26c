// The prefill product over quantised weights (src/ops/cpu/quant/quant_gemm.h) against OpenBLAS's sgemm
// on f32 operands of the same shape, in one run: y (M, N) = x (M, K) W^T with W (N, K), M = 512
// prompt tokens, at the Linear shapes of minimind2-small (dim 512, MLP hidden 1408: q/o, k/v,
// gate/up, down) and of a dim-768 / hidden-2048 model. GFLOP/s counts 2 M N K for every side.
// quant_gemm alone takes x already quantised; the _with_x variants quantise x each iteration
// (quantize_activation_blocks), what a Linear's forward pays. Run with --benchmark_repetitions
// (and --benchmark_enable_random_interleaving) and read the median ratios printed at the end.
#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstring>
#include <random>
#include <vector>

#include "bench_support.h"
#include "core/blas_library.h"
#include "nanoformer/nanoformer.h"
#include "ops/cpu/quant/activation_quant.h"
#include "ops/cpu/quant/int8_isa.h"
#include "ops/cpu/quant/quant_gemm.h"
#include "ops/cpu/quant/quant_rows.h"
#include "ops/cpu/quant/type_traits.h"

namespace {

using nf::QuantType;
using nf::Tensor;

void report(benchmark::State& state) {
  const double flops = 2.0 * static_cast<double>(state.range(0) * state.range(1) * state.range(2));
  state.counters["GFLOP/s"] = benchmark::Counter(flops * static_cast<double>(state.iterations()),
                                                 benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
}

// y (M, N) = x (M, K) @ W^T, f32
void BM_sgemm_nt(benchmark::State& state) {
  const int64_t M = state.range(0), N = state.range(1), K = state.range(2);
  nf::Generator gen(0);
  Tensor x = nf::randn({M, K}, gen), w = nf::randn({N, K}, gen), y = nf::zeros({M, N});
  const auto sgemm = nf::blas::library().sgemm;
  for (auto _ : state) {
    sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(M), static_cast<int>(N), static_cast<int>(K), 1.0f,
          x.data<float>(), static_cast<int>(K), w.data<float>(), static_cast<int>(K), 0.0f, y.data<float>(),
          static_cast<int>(N));
    benchmark::ClobberMemory();
  }
  report(state);
}

// the byte offsets of a block's f16 scales (d, and m or dmin)
std::vector<size_t> scale_offsets(QuantType type) {
  switch (type) {
    case QuantType::q4_1:
    case QuantType::q5_1:
    case QuantType::q4_k: return {0, 2};
    case QuantType::q6_k: return {offsetof(nf::cpu::BlockQ6_K, d)};
    default: return {0};
  }
}

// n rows of k values of `type`: random integers (the time does not depend on them) and scales of
// a trained layer's size
std::vector<uint8_t> random_weights(QuantType type, int64_t n, int64_t k) {
  std::mt19937 rng(0);
  std::vector<uint8_t> w(nf::quant_row_bytes(type, k) * static_cast<size_t>(n));
  for (uint8_t& byte : w) byte = static_cast<uint8_t>(rng());
  const uint16_t scale = nf::float_to_f16_bits(0.01f);
  for (size_t at = 0; at < w.size(); at += static_cast<size_t>(nf::quant_type_info(type).block_bytes))
    for (size_t offset : scale_offsets(type)) std::memcpy(&w[at + offset], &scale, 2);
  return w;
}

// x quantised as linear does (quantize_activation_blocks: Q8_0, or Q8_K for the K types), once or
// every iteration (_with_x); "W bytes/s" counts the weight's bytes read per product
void quant_gemm(benchmark::State& state, QuantType wtype, bool quantize_x) {
  const int64_t M = state.range(0), N = state.range(1), K = state.range(2);
  nf::Generator gen(0);
  const Tensor x = nf::randn({M, K}, gen);
  const std::vector<uint8_t> w = random_weights(wtype, N, K);
  const int64_t block = nf::cpu::activation_block(wtype);
  std::vector<std::byte> xq(static_cast<size_t>(M * K / block) *
                            (block == nf::cpu::kQK8_0 ? sizeof(nf::cpu::BlockQ8_0) : sizeof(nf::cpu::BlockQ8_K)));
  const auto quantize = [&] { nf::cpu::quantize_activation_blocks(x.data<float>(), K, M, K, block, xq.data()); };
  quantize();
  std::vector<float> y(static_cast<size_t>(M * N));
  for (auto _ : state) {
    if (quantize_x) quantize();
    nf::cpu::quant_gemm(wtype, w.data(), N, K, xq.data(), M, y.data(), N);
    benchmark::ClobberMemory();
  }
  report(state);
  state.counters["W bytes/s"] = benchmark::Counter(static_cast<double>(w.size()) * static_cast<double>(state.iterations()),
                                                   benchmark::Counter::kIsRate, benchmark::Counter::kIs1024);
}

void BM_quant_gemm_q8_0(benchmark::State& state) { quant_gemm(state, QuantType::q8_0, false); }
void BM_quant_gemm_q4_0(benchmark::State& state) { quant_gemm(state, QuantType::q4_0, false); }
void BM_quant_gemm_q5_0(benchmark::State& state) { quant_gemm(state, QuantType::q5_0, false); }
void BM_quant_gemm_q4_1(benchmark::State& state) { quant_gemm(state, QuantType::q4_1, false); }
void BM_quant_gemm_q5_1(benchmark::State& state) { quant_gemm(state, QuantType::q5_1, false); }
void BM_quant_gemm_q4_k(benchmark::State& state) { quant_gemm(state, QuantType::q4_k, false); }
void BM_quant_gemm_q6_k(benchmark::State& state) { quant_gemm(state, QuantType::q6_k, false); }
void BM_quant_gemm_q8_0_with_x(benchmark::State& state) { quant_gemm(state, QuantType::q8_0, true); }
void BM_quant_gemm_q4_0_with_x(benchmark::State& state) { quant_gemm(state, QuantType::q4_0, true); }
void BM_quant_gemm_q4_k_with_x(benchmark::State& state) { quant_gemm(state, QuantType::q4_k, true); }

void shapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"M", "N", "K"});
  b->Args({512, 512, 512})->Args({512, 128, 512})->Args({512, 1408, 512})->Args({512, 512, 1408});
  b->Args({512, 2048, 768})->Args({512, 768, 2048});
  b->Unit(benchmark::kMillisecond)->UseRealTime();
}

// the shapes whose K is whole super-blocks of 256 (1408 is not: a K-type model keeps its MLP's
// down projection in a 32-value type)
void k_shapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"M", "N", "K"});
  b->Args({512, 512, 512})->Args({512, 128, 512})->Args({512, 1408, 512});
  b->Args({512, 2048, 768})->Args({512, 768, 2048});
  b->Unit(benchmark::kMillisecond)->UseRealTime();
}

BENCHMARK(BM_sgemm_nt)->Apply(shapes);
BENCHMARK(BM_quant_gemm_q8_0)->Apply(shapes);
BENCHMARK(BM_quant_gemm_q4_0)->Apply(shapes);
BENCHMARK(BM_quant_gemm_q5_0)->Apply(shapes);
BENCHMARK(BM_quant_gemm_q4_1)->Apply(shapes);
BENCHMARK(BM_quant_gemm_q5_1)->Apply(shapes);
BENCHMARK(BM_quant_gemm_q4_k)->Apply(k_shapes);
BENCHMARK(BM_quant_gemm_q6_k)->Apply(k_shapes);
BENCHMARK(BM_quant_gemm_q8_0_with_x)->Apply(shapes);
BENCHMARK(BM_quant_gemm_q4_0_with_x)->Apply(shapes);
BENCHMARK(BM_quant_gemm_q4_k_with_x)->Apply(k_shapes);

}  // namespace

int main(int argc, char** argv) {
  benchmark::AddCustomContext("int8 kernels", std::string(nf::cpu::int8_isa_name(nf::cpu::int8_isa())));
  return nf::bench::run_benchmarks(argc, argv,
                                   {{"BM_quant_gemm_q8_0", "BM_sgemm_nt"},
                                    {"BM_quant_gemm_q4_0", "BM_sgemm_nt"},
                                    {"BM_quant_gemm_q5_0", "BM_sgemm_nt"},
                                    {"BM_quant_gemm_q4_1", "BM_sgemm_nt"},
                                    {"BM_quant_gemm_q5_1", "BM_sgemm_nt"},
                                    {"BM_quant_gemm_q4_k", "BM_sgemm_nt"},
                                    {"BM_quant_gemm_q6_k", "BM_sgemm_nt"},
                                    {"BM_quant_gemm_q4_k", "BM_quant_gemm_q4_0"},
                                    {"BM_quant_gemm_q8_0_with_x", "BM_sgemm_nt"},
                                    {"BM_quant_gemm_q4_0_with_x", "BM_sgemm_nt"},
                                    {"BM_quant_gemm_q4_k_with_x", "BM_sgemm_nt"}});
}
