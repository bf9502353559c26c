#include "ops/cpu/gemv.h"

#include <immintrin.h>

#include <algorithm>

#include "nanoformer/core/error.h"
#include "ops/cpu/loops.h"
#include "ops/cpu/simd.h"


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

template <int R>
void gemv_rows(const float* x, int64_t ldx, const float* w, int64_t ldw, int64_t N, int64_t K, const float* bias, float* y) {
  const int64_t blocks = (N + kBlockRows - 1) / kBlockRows;
  const int64_t grain = std::max<int64_t>(1, kParallelGrain / (kBlockRows * std::max<int64_t>(K, 1)));
  parallel_for(blocks, grain, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) {
      const int64_t n0 = b * kBlockRows;
      if (n0 + kBlockRows <= N) {
        const bool next_is_full = b + 1 < end && n0 + 2 * kBlockRows <= N;  // else the block prefetches itself
        const float* ahead = w + (next_is_full ? n0 + kBlockRows : n0) * ldw;
        dot_block<R, kBlockRows>(x, ldx, w + n0 * ldw, ldw, K, bias ? bias + n0 : nullptr, y + n0, N, ahead);
        continue;
      }
      for (int64_t n = n0; n < N; ++n) dot_block<R, 1>(x, ldx, w + n * ldw, ldw, K, bias ? bias + n : nullptr, y + n, N, w + n * ldw);
    }
  });
}

}  // namespace

bool gemv_applies(const Tensor& x, const Tensor& weight) {
  return x.dtype() == DType::f32 && weight.dtype() == DType::f32 && x.dim() == 2 && weight.dim() == 2 &&
         x.size(0) >= 1 && x.size(0) <= kGemvMaxRows && (x.size(1) <= 1 || x.stride(1) == 1) &&
         (weight.size(1) <= 1 || weight.stride(1) == 1);
}

void linear_gemv(const Tensor& y, const Tensor& x, const Tensor& weight, const Tensor& bias) {
  NF_CHECK(gemv_applies(x, weight) && y.is_contiguous(), "linear_gemv: unsupported operands x ", shape_str(x.shape()),
           " and weight ", shape_str(weight.shape()));
  const int64_t R = x.size(0), N = weight.size(0), K = x.size(1);
  const Tensor b = bias.defined() ? bias.contiguous() : Tensor();
  for (int64_t r0 = 0; r0 < R; r0 += kGemvRowsPerPass) {  // one pass over W per 4 rows
    const auto run = [&]<int Rows>() {
      gemv_rows<Rows>(x.data<float>() + r0 * x.stride(0), x.stride(0), weight.data<float>(), weight.stride(0), N, K,
                      b.defined() ? b.data<float>() : nullptr, y.data<float>() + r0 * N);
    };
    switch (std::min(R - r0, kGemvRowsPerPass)) {
      case 1: run.operator()<1>(); break;
      case 2: run.operator()<2>(); break;
      case 3: run.operator()<3>(); break;
      default: run.operator()<4>(); break;
    }
  }
}

}  // namespace nf::cpu
