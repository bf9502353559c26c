// The MoE / LoRA / vision area, each next to its unfused baseline in the same run:
//  - conv2d (im2col + one GEMM per group) vs a direct 7-loop convolution (threads over (b, o));
//    ResNet-like 3x3 (8, 64, 32, 32) -> 64 and a ViT patchify (8, 3, 64, 64) kernel = stride = 8 -> 192;
//  - MoE forward + backward with tokens grouped per expert (one expert call per expert) vs 002's
//    reference loop (one call per (slot, expert) mask, scattered slot by slot); (B*T, D) = (512, 256),
//    8 experts, top-2, SwiGLU experts of hidden 512;
//  - a LoRA-adapted Linear's forward merged (one product) vs unmerged (base + two thin products), (2048, 512) -> 512, r = 16.
#include <benchmark/benchmark.h>

#include "bench_support.h"
#include "nanoformer/nanoformer.h"

namespace {

using nf::Tensor;

// ---- conv2d ----------------------------------------------------------------------------------

struct ConvShape {
  int64_t B, C, H, O, k, stride, pad;
};
ConvShape conv_shape(const benchmark::State& s) {
  return s.range(0) == 0 ? ConvShape{8, 64, 32, 64, 3, 1, 1} : ConvShape{8, 3, 64, 192, 8, 8, 0};
}

void BM_nf_conv2d(benchmark::State& state) {
  const ConvShape c = conv_shape(state);
  nf::Generator gen(1);
  const Tensor x = nf::randn({c.B, c.C, c.H, c.H}, gen), w = nf::randn({c.O, c.C, c.k, c.k}, gen);
  const nf::Conv2dOptions o{.stride = {c.stride, c.stride}, .padding = {c.pad, c.pad}};
  for (auto _ : state) benchmark::DoNotOptimize(nf::conv2d(x, w, {}, o).raw_data());
}

// out[b, o, i, j] = sum_{c, m, n} x[b, c, i*s - p + m, j*s - p + n] w[o, c, m, n]
void BM_direct_conv2d(benchmark::State& state) {
  const ConvShape c = conv_shape(state);
  nf::Generator gen(1);
  const Tensor x = nf::randn({c.B, c.C, c.H, c.H}, gen), w = nf::randn({c.O, c.C, c.k, c.k}, gen);
  const int64_t Ho = (c.H + 2 * c.pad - c.k) / c.stride + 1;
  for (auto _ : state) {
    Tensor out = Tensor::empty({c.B, c.O, Ho, Ho});
    const float *px = x.data<float>(), *pw = w.data<float>();
    float* po = out.data<float>();
#pragma omp parallel for num_threads(nf::num_threads()) collapse(2)
    for (int64_t b = 0; b < c.B; ++b)
      for (int64_t o = 0; o < c.O; ++o)
        for (int64_t i = 0; i < Ho; ++i)
          for (int64_t j = 0; j < Ho; ++j) {
            float acc = 0;
            for (int64_t ch = 0; ch < c.C; ++ch)
              for (int64_t m = 0; m < c.k; ++m) {
                const int64_t y = i * c.stride - c.pad + m;
                if (y < 0 || y >= c.H) continue;
                for (int64_t n = 0; n < c.k; ++n) {
                  const int64_t z = j * c.stride - c.pad + n;
                  if (z >= 0 && z < c.H) acc += px[((b * c.C + ch) * c.H + y) * c.H + z] * pw[((o * c.C + ch) * c.k + m) * c.k + n];
                }
              }
            po[((b * c.O + o) * Ho + i) * Ho + j] = acc;
          }
    benchmark::DoNotOptimize(out.raw_data());
  }
}

// ---- MoE --------------------------------------------------------------------------------------

struct SwiGLU : nf::nn::UnaryModule {
  std::shared_ptr<nf::nn::Linear> w1, w2, w3;
  SwiGLU(int64_t d, int64_t h, nf::Generator& gen) : UnaryModule("SwiGLU") {
    w1 = register_module("w1", std::make_shared<nf::nn::Linear>(d, h, false, gen));
    w2 = register_module("w2", std::make_shared<nf::nn::Linear>(h, d, false, gen));
    w3 = register_module("w3", std::make_shared<nf::nn::Linear>(d, h, false, gen));
  }
  Tensor forward(const Tensor& x) override { return (*w2)(nf::mul(nf::silu((*w1)(x)), (*w3)(x))); }
};

constexpr int64_t kTokens = 512, kDim = 256, kHidden = 512, kExperts = 8, kTopK = 2;

std::unique_ptr<nf::nn::MoE> make_moe(nf::Generator& gen) {
  return std::make_unique<nf::nn::MoE>(
      nf::nn::MoEConfig{.dim = kDim, .n_experts = kExperts, .top_k = kTopK, .aux_loss_alpha = 0.0},
      [](nf::Generator& g) { return std::make_shared<SwiGLU>(kDim, kHidden, g); }, gen);
}

void BM_nf_moe_grouped(benchmark::State& state) {
  nf::Generator gen(2);
  auto moe = make_moe(gen);
  Tensor x = nf::randn({kTokens, kDim}, gen).set_requires_grad(true);
  for (auto _ : state) {
    nf::sum(moe->forward(x)).backward();
    benchmark::DoNotOptimize(x.grad().raw_data());
    x.zero_grad();
    moe->zero_grad();
  }
}

// 002's loop: for each slot j and expert e, out[mask] += w[mask, j] * E_e(x[mask]), mask = (idx[:, j] == e)
void BM_loop_moe_per_slot(benchmark::State& state) {
  nf::Generator gen(2);
  auto moe = make_moe(gen);
  Tensor x = nf::randn({kTokens, kDim}, gen).set_requires_grad(true);
  for (auto _ : state) {
    const Tensor probs = nf::softmax(moe->gate->forward(x), -1);
    const nf::TopK chosen = nf::topk(probs, kTopK);
    const Tensor weights = nf::div(chosen.values, nf::add(nf::sum(chosen.values, {-1}, true), 1e-20));
    const std::vector<int64_t> idx = chosen.indices.to_vector<int64_t>();
    Tensor out = nf::zeros({kTokens, kDim});
    for (int64_t j = 0; j < kTopK; ++j) {
      for (int64_t e = 0; e < kExperts; ++e) {
        std::vector<int64_t> rows;
        for (int64_t t = 0; t < kTokens; ++t)
          if (idx[static_cast<size_t>(t * kTopK + j)] == e) rows.push_back(t);
        if (rows.empty()) continue;
        const Tensor r = Tensor::from_vector<int64_t>(rows, {static_cast<int64_t>(rows.size())});
        const Tensor w = nf::index_select(nf::narrow(weights, 1, j, 1), 0, r);
        out = nf::index_add(out, 0, r, nf::mul((*moe->experts)[static_cast<size_t>(e)]->forward(nf::index_select(x, 0, r)), w));
      }
    }
    nf::sum(out).backward();
    benchmark::DoNotOptimize(x.grad().raw_data());
    x.zero_grad();
    moe->zero_grad();
  }
}

// ---- LoRA -------------------------------------------------------------------------------------

void lora_forward(benchmark::State& state, bool merged) {
  nf::Generator gen(3);
  nf::nn::Linear layer(512, 512, true, gen);
  layer.add_lora({.rank = 16, .alpha = 32.0}, gen);
  if (merged) layer.merge_lora();
  const Tensor x = nf::randn({2048, 512}, gen);
  nf::autograd::NoGradGuard no_grad;
  for (auto _ : state) benchmark::DoNotOptimize(layer(x).raw_data());
}
void BM_nf_lora_merged(benchmark::State& state) { lora_forward(state, true); }
void BM_nf_lora_unmerged(benchmark::State& state) { lora_forward(state, false); }

}  // namespace

BENCHMARK(BM_nf_conv2d)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_direct_conv2d)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_nf_moe_grouped)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_loop_moe_per_slot)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_nf_lora_merged)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_nf_lora_unmerged)->Unit(benchmark::kMillisecond)->UseRealTime();

int main(int argc, char** argv) {
  return nf::bench::run_benchmarks(argc, argv,
                                   {{"BM_nf_conv2d", "BM_direct_conv2d"},
                                    {"BM_nf_moe_grouped", "BM_loop_moe_per_slot"},
                                    {"BM_nf_lora_merged", "BM_nf_lora_unmerged"}});
}
