#pragma once
// The GEMM limits of a training step: the machine's measured fp32 SGEMM and bf16 GEMM speeds at
// the GEMM shapes of one step of a DecoderLM (every Linear's forward, input-gradient and weight-gradient products,
// the head, and attention's six products per head), and the tokens/s that speed allows.
//
// FLOPs per token = 6 x parameters + 12 x layers x T x dim  (Kaplan et al.; PaLM's attention term:
// forward 2 flops per multiply-add, backward twice the forward; attention counted without the
// causal half). Tokens/s allowed = measured GFLOP/s / FLOPs per token.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "nanoformer/nanoformer.h"
#include "ops/cpu/matmul/matmul.h"

namespace nf::bench {

// One GEMM C (M, N) = op(A) (M, K) op(B) (K, N), run `count` times per training step; `per_head`
// GEMMs are small ones issued once per (batch, head).
struct StepGemm {
  std::string what;
  int64_t M, N, K;
  bool trans_a, trans_b;
  int64_t count;
  bool per_head = false;
  double flops() const { return 2.0 * static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K); }
};

// The GEMMs of one training step of `lm` at batch B, length T.
inline std::vector<StepGemm> step_gemms(const models::DecoderLM& lm, int64_t B, int64_t T) {
  const models::DecoderLMConfig& c = lm.config();
  const int64_t rows = B * T;
  // Linear (in -> out) over `rows` rows: y = x W^T, dx = dy W, dW = dy^T x
  struct Shape2 {
    int64_t in, out, count;
  };
  std::vector<Shape2> linears;
  for (const auto& [name, m] : lm.named_modules()) {
    const auto* fc = dynamic_cast<const nn::Linear*>(m);
    if (fc == nullptr) continue;
    auto same = std::find_if(linears.begin(), linears.end(),
                             [&](const Shape2& s) { return s.in == fc->in_features() && s.out == fc->out_features(); });
    if (same != linears.end()) ++same->count;
    else linears.push_back({fc->in_features(), fc->out_features(), 1});
  }
  if (c.tie_embeddings) linears.push_back({c.dim, c.vocab_size, 1});  // the head reads the embedding
  std::vector<StepGemm> gemms;
  for (const Shape2& l : linears) {
    const std::string name = "linear " + std::to_string(l.in) + "->" + std::to_string(l.out);
    gemms.push_back({name + " y=xW^T", rows, l.out, l.in, false, true, l.count});
    gemms.push_back({name + " dx=dyW", rows, l.in, l.out, false, false, l.count});
    gemms.push_back({name + " dW=dy^Tx", l.out, l.in, rows, true, false, l.count});
  }
  // attention per (batch, head): S = Q K^T, O = P V; dP = dO V^T, dV = P^T dO, dQ = dS K, dK = dS^T Q
  const int64_t hd = c.head_dim > 0 ? c.head_dim : c.dim / c.n_heads, heads = B * c.n_heads * c.n_layers;
  gemms.push_back({"attention S=QK^T, dP=dOV^T", T, T, hd, false, true, 2 * heads, true});
  gemms.push_back({"attention O=PV, dQ=dSK", T, hd, T, false, false, 2 * heads, true});
  gemms.push_back({"attention dV=P^TdO, dK=dS^TQ", T, hd, T, true, false, 2 * heads, true});
  return gemms;
}

// 6 x parameters + 12 x layers x T x dim
inline double flops_per_token(const models::DecoderLM& lm, int64_t T) {
  const models::DecoderLMConfig& c = lm.config();
  return 6.0 * static_cast<double>(lm.num_parameters()) + 12.0 * static_cast<double>(c.n_layers * T * c.dim);
}

struct GemmLimit {
  double gflops = 0;            // FLOPs of the step's GEMMs / their measured time
  double seconds_per_step = 0;  // measured time of one step's GEMMs
};

// Times every GEMM of the step with our GEMM kernel (cpu::matmul: the BLAS sgemm for f32; for
// bf16 operands the bf16 GEMM autocast uses, oneDNN on the CPU's bf16 instructions or the
// fallback, f32 out), at the current thread count: the median of `reps` runs of each shape, the
// per-head GEMMs one per thread in parallel as the fused attention kernel issues them, weighted
// by how often a step runs each shape.
inline GemmLimit measure_gemm_limit(const std::vector<StepGemm>& gemms, DType dtype, int reps = 3) {
  GemmLimit limit;
  double flops = 0;
  for (const StepGemm& g : gemms) {
    // per-head GEMMs: one set of operands per thread, `batch` GEMMs per timed run
    const int64_t threads = g.per_head ? num_threads() : 1, batch = g.per_head ? std::min<int64_t>(g.count, 64) : 1;
    Generator gen(7);
    std::vector<Tensor> a, b, c;
    for (int64_t t = 0; t < threads; ++t) {
      // op(A) (M, K), op(B) (K, N): a transposed operand is stored transposed and passed as a view
      a.push_back(g.trans_a ? randn({g.K, g.M}, gen).to(dtype).t() : randn({g.M, g.K}, gen).to(dtype));
      b.push_back(g.trans_b ? randn({g.N, g.K}, gen).to(dtype).t() : randn({g.K, g.N}, gen).to(dtype));
      c.push_back(Tensor::empty({g.M, g.N}));
    }
    std::vector<double> times;
    for (int r = 0; r <= reps; ++r) {  // the first run warms up
      const auto start = std::chrono::steady_clock::now();
      if (g.per_head) {
#pragma omp parallel for num_threads(threads) schedule(static)
        for (int64_t i = 0; i < batch; ++i) cpu::matmul(c[i % threads], a[i % threads], b[i % threads]);
      } else {
        cpu::matmul(c[0], a[0], b[0]);
      }
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (r > 0) times.push_back(s / static_cast<double>(batch));
    }
    std::nth_element(times.begin(), times.begin() + static_cast<std::ptrdiff_t>(times.size() / 2), times.end());
    limit.seconds_per_step += times[times.size() / 2] * static_cast<double>(g.count);
    flops += g.flops() * static_cast<double>(g.count);
  }
  limit.gflops = flops / limit.seconds_per_step / 1e9;
  return limit;
}

}  // namespace nf::bench
