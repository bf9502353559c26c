#include "ops/cpu/matmul/gemv.h"

#include <immintrin.h>

#include <algorithm>
#include <vector>

#include "nanoformer/core/error.h"
#include "ops/cpu/loops/loops.h"
#include "ops/cpu/simd/simd.h"


namespace nf::cpu {
namespace {

// Output rows of W streamed together per block: 4 x 4 accumulators + 4 + 1 loads fit AVX-512's
// 32 registers; four sequential streams are what the hardware prefetchers follow best.
constexpr int64_t kBlockRows = 4;
constexpr int64_t kLineFloats = 16;  // a 64-byte cache line

// y[r, j] = sum_k x[r, k] w[j, k] + b[j] for r < R, j < Cols: Cols rows of W read once each, every
// element multiplied into all R input rows. The same columns of the rows at `ahead` (the next
// block) are prefetched into L2 meanwhile: a row of a few KiB is too short a stream for the
// hardware prefetchers to ramp up on (measured: 11 -> 18 GB/s on one Zen 4 core reading 24).
template <int R, int Cols>
[[gnu::always_inline]] inline void dot_block(const float* x, int64_t ldx, const float* w, int64_t ldw, int64_t K,
                                             const float* bias, float* y, int64_t ldy, const float* ahead) {
  typename Simd::V acc[R][Cols];
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < Cols; ++c) acc[r][c] = Simd::zero();
  const auto step = [&](int64_t k, auto load) {
    typename Simd::V wv[Cols];
    for (int c = 0; c < Cols; ++c) wv[c] = load(w + c * ldw + k);
    if (Simd::width >= kLineFloats || k % kLineFloats == 0)  // once per cache line
      for (int c = 0; c < Cols; ++c) _mm_prefetch(reinterpret_cast<const char*>(ahead + c * ldw + k), _MM_HINT_T1);
    for (int r = 0; r < R; ++r) {
      const typename Simd::V xv = load(x + r * ldx + k);
      for (int c = 0; c < Cols; ++c) acc[r][c] = Simd::fma(xv, wv[c], acc[r][c]);
    }
  };
  int64_t k = 0;
  for (; k + Simd::width <= K; k += Simd::width) step(k, [](const float* p) { return Simd::load(p); });
  if (k < K) step(k, [n = K - k](const float* p) { return Simd::load_first(p, n); });
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < Cols; ++c) y[r * ldy + c] = Simd::sum(acc[r][c]) + (bias ? bias[c] : 0.0f);
}

// One product's operands, r0 the first of this pass's rows of x.
struct GemvOperands {
  const float *x, *w, *bias;
  int64_t ldx, ldw, N, K;
  float* y;
};

// Blocks [begin, end) of kBlockRows rows of W (and outputs) for R rows of x.
template <int R>
void gemv_range(const GemvOperands& o, int64_t begin, int64_t end) {
  for (int64_t b = begin; b < end; ++b) {
    const int64_t n0 = b * kBlockRows;
    if (n0 + kBlockRows <= o.N) {
      const bool next_is_full = b + 1 < end && n0 + 2 * kBlockRows <= o.N;  // else the block prefetches itself
      const float* ahead = o.w + (next_is_full ? n0 + kBlockRows : n0) * o.ldw;
      dot_block<R, kBlockRows>(o.x, o.ldx, o.w + n0 * o.ldw, o.ldw, o.K, o.bias ? o.bias + n0 : nullptr, o.y + n0, o.N, ahead);
      continue;
    }
    for (int64_t n = n0; n < o.N; ++n)
      dot_block<R, 1>(o.x, o.ldx, o.w + n * o.ldw, o.ldw, o.K, o.bias ? o.bias + n : nullptr, o.y + n, o.N, o.w + n * o.ldw);
  }
}

int64_t blocks_of(const GemvOperands& o) { return (o.N + kBlockRows - 1) / kBlockRows; }

// One product: its blocks split across the threads (on one when it is small). Several (q, k and
// v; gate and up): one hand-off for all, each thread taking its share of every one.
template <int R>
void gemv_rows(std::span<const GemvOperands> products) {
  if (products.size() == 1) {
    const GemvOperands& o = products[0];
    const int64_t grain = std::max<int64_t>(1, kParallelGrain / (kBlockRows * std::max<int64_t>(o.K, 1)));
    parallel_for(blocks_of(o), grain, [&](int64_t begin, int64_t end) { gemv_range<R>(o, begin, end); });
    return;
  }
  const int64_t threads = num_threads();
  parallel_for(threads, 1, [&](int64_t first, int64_t last) {
    for (int64_t p = first; p < last; ++p)
      for (const GemvOperands& o : products) gemv_range<R>(o, blocks_of(o) * p / threads, blocks_of(o) * (p + 1) / threads);
  });
}

}  // namespace

bool gemv_applies(const Tensor& x, const Tensor& weight) {
  return x.dtype() == DType::f32 && weight.dtype() == DType::f32 && x.dim() == 2 && weight.dim() == 2 &&
         x.size(0) >= 1 && x.size(0) <= kGemvMaxRows && (x.size(1) <= 1 || x.stride(1) == 1) &&
         (weight.size(1) <= 1 || weight.stride(1) == 1);
}

void linear_gemv(std::span<const GemvProduct> products, const Tensor& x) {
  NF_CHECK(!products.empty(), "linear_gemv: no products");
  std::vector<Tensor> biases;  // contiguous
  for (const GemvProduct& p : products) {
    NF_CHECK(gemv_applies(x, *p.weight) && p.y->is_contiguous() && p.y->numel() == x.size(0) * p.weight->size(0),
             "linear_gemv: unsupported operands x ", shape_str(x.shape()), " and weight ", shape_str(p.weight->shape()));
    biases.push_back(p.bias->defined() ? p.bias->contiguous() : Tensor());
  }
  const int64_t R = x.size(0), K = x.size(1);
  std::vector<GemvOperands> pass(products.size());
  for (int64_t r0 = 0; r0 < R; r0 += kGemvRowsPerPass) {  // one pass over each W per 4 rows
    for (size_t i = 0; i < products.size(); ++i) {
      const Tensor& w = *products[i].weight;
      const int64_t N = w.size(0);
      pass[i] = {x.data<float>() + r0 * x.stride(0), w.data<float>(), biases[i].defined() ? biases[i].data<float>() : nullptr,
                 x.stride(0), w.stride(0), N, K, products[i].y->data<float>() + r0 * N};
    }
    switch (std::min(R - r0, kGemvRowsPerPass)) {
      case 1: gemv_rows<1>(pass); break;
      case 2: gemv_rows<2>(pass); break;
      case 3: gemv_rows<3>(pass); break;
      default: gemv_rows<4>(pass); break;
    }
  }
}

void linear_gemv(const Tensor& y, const Tensor& x, const Tensor& weight, const Tensor& bias) {
  const GemvProduct product{&y, &weight, &bias};
  linear_gemv({&product, 1}, x);
}

}  // namespace nf::cpu
