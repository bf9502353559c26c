#pragma once
// Building blocks of the fused attention kernels (cpu/attention/attention.cpp): the tile GEMM, the masking
// of a row of scores, the dropout draw, and the order in which tiles are handed to threads.
#include <cstdint>
#include <limits>
#include <type_traits>

#include "core/blas_library.h"
#include "nanoformer/core/generator.h"
#include "ops/cpu/attention/attention.h"
#include "ops/cpu/loops/loops.h"

namespace nf::cpu::attention_tiles {

// C (M, N) = alpha op(A) op(B) + beta C, row-major with leading dimensions lda, ldb, ldc.
template <class T>
void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, T alpha, const T* a, int64_t lda, const T* b,
          int64_t ldb, T beta, T* c, int64_t ldc) {
  const CBLAS_TRANSPOSE ta = trans_a ? CblasTrans : CblasNoTrans, tb = trans_b ? CblasTrans : CblasNoTrans;
  const auto i = [](int64_t n) { return static_cast<int>(n); };
  if constexpr (std::is_same_v<T, float>) {
    blas::library().sgemm(CblasRowMajor, ta, tb, i(M), i(N), i(K), alpha, a, i(lda), b, i(ldb), beta, c, i(ldc));
  } else {
    blas::library().dgemm(CblasRowMajor, ta, tb, i(M), i(N), i(K), alpha, a, i(lda), b, i(ldb), beta, c, i(ldc));
  }
}

// Tile t of n in an order that pairs the first with the last (0, n-1, 1, n-2, ...): with causal
// masking early query tiles (forward) or late key tiles (backward) are cheap, and contiguous
// ranges of this order carry about equal work.
inline int64_t balanced_tile(int64_t t, int64_t n) { return t % 2 == 0 ? t / 2 : n - 1 - t / 2; }

// Whether element `counter` of a dropout draw survives: the draw of cpu::dropout_apply.
template <class T>
inline bool dropout_keeps(uint64_t seed, uint64_t counter, double keep_prob) {
  const auto r = philox4x32(counter, 0, seed);
  const double u = std::is_same_v<T, double> ? uniform01_f64(r[0], r[1]) : uniform01(r[0]);
  return u < keep_prob;
}

// The masks of one problem, read through broadcast strides over (B, H, Tq, Tk).
template <class T>
class ScoreMasks {
 public:
  explicit ScoreMasks(const AttentionProblem& p)
      : scale_(static_cast<T>(p.scale)), causal_(p.causal), offset_(p.Tk - p.Tq), tk_(p.Tk), tq_(p.Tq),
        window_(p.causal ? p.window : 0) {
    const Shape full{p.B, p.H, p.Tq, p.Tk};
    if (p.keep.defined()) {
      keep_ = p.keep.data<bool>();
      keep_strides_ = broadcast_strides(p.keep, full);
    }
    if (p.bias.defined()) {
      bias_ = p.bias.data<T>();
      bias_strides_ = broadcast_strides(p.bias, full);
    }
    if (p.key_padding.defined()) {
      pad_ = p.key_padding.data<bool>();
      pad_strides_ = p.key_padding.strides();
    }
  }

  // Keys [key_begin(i0), key_end(i0, nq)) hold every key some query of [i0, i0 + nq) may see: the
  // causal diagonal bounds them above, the window below (query i0's first key, i0 + offset - window + 1).
  int64_t key_begin(int64_t i0) const { return window_ > 0 ? clamp(i0 + offset_ - window_ + 1, tk_) : 0; }
  int64_t key_end(int64_t i0, int64_t nq) const { return causal_ ? clamp(i0 + nq + offset_, tk_) : tk_; }
  // Queries [first_query(j0), query_end(j0, nk)) hold every query that may see a key of [j0, j0 + nk).
  int64_t first_query(int64_t j0) const { return causal_ ? clamp(j0 - offset_, tq_) : 0; }
  int64_t query_end(int64_t j0, int64_t nk) const { return window_ > 0 ? clamp(j0 + nk - 1 - offset_ + window_, tq_) : tq_; }

  // s[c] = scale s[c] + bias[b, h, i, j0 + c], or -inf where key j0 + c is masked for query i.
  void apply(T* s, int64_t nk, int64_t b, int64_t h, int64_t i, int64_t j0) const {
    constexpr T kMasked = -std::numeric_limits<T>::infinity();
    for (int64_t c = 0; c < nk; ++c) s[c] *= scale_;
    if (bias_) {
      const T* row = bias_ + b * bias_strides_[0] + h * bias_strides_[1] + i * bias_strides_[2] + j0 * bias_strides_[3];
      for (int64_t c = 0; c < nk; ++c) s[c] += row[c * bias_strides_[3]];
    }
    if (keep_) {
      const bool* row = keep_ + b * keep_strides_[0] + h * keep_strides_[1] + i * keep_strides_[2] + j0 * keep_strides_[3];
      for (int64_t c = 0; c < nk; ++c) s[c] = row[c * keep_strides_[3]] ? s[c] : kMasked;
    }
    if (pad_) {
      const bool* row = pad_ + b * pad_strides_[0] + j0 * pad_strides_[1];
      for (int64_t c = 0; c < nk; ++c) s[c] = row[c * pad_strides_[1]] ? s[c] : kMasked;
    }
    if (causal_) {  // j <= i + offset
      for (int64_t c = clamp(i + offset_ + 1 - j0, nk); c < nk; ++c) s[c] = kMasked;
    }
    if (window_ > 0) {  // j > i + offset - window
      for (int64_t c = 0, end = clamp(i + offset_ - window_ + 1 - j0, nk); c < end; ++c) s[c] = kMasked;
    }
  }

 private:
  static int64_t clamp(int64_t x, int64_t hi) { return x < 0 ? 0 : (x > hi ? hi : x); }

  T scale_;
  bool causal_;
  int64_t offset_, tk_, tq_, window_;
  const bool* keep_ = nullptr;
  const T* bias_ = nullptr;
  const bool* pad_ = nullptr;
  Shape keep_strides_, bias_strides_, pad_strides_;
};

}  // namespace nf::cpu::attention_tiles
