#include "ops/cpu/matmul/matmul.h"

#include <atomic>
#include <cstdlib>
#include <string_view>

#include "core/blas_library.h"
#include "nanoformer/core/error.h"
#include "nanoformer/ops/view.h"
#include "ops/cpu/copy.h"
#include "ops/cpu/matmul/onednn_gemm.h"

namespace nf::cpu {
namespace {

// How BLAS can read a (rows, cols) matrix with strides (s_row, s_col): row-major with leading
// dimension ld, either as stored (NoTrans) or as the transpose of a stored (cols, rows) matrix.
struct BlasOperand {
  bool ok = false;
  CBLAS_TRANSPOSE trans = CblasNoTrans;
  int64_t ld = 0;
};

BlasOperand blas_layout(int64_t rows, int64_t cols, int64_t s_row, int64_t s_col) {
  // The stride of a size-1 dim never matters, so either reading may hold for it.
  if ((cols == 1 || s_col == 1) && (rows == 1 || s_row >= cols)) {
    return {true, CblasNoTrans, rows == 1 ? std::max<int64_t>(cols, 1) : s_row};
  }
  if ((rows == 1 || s_row == 1) && (cols == 1 || s_col >= rows)) {
    return {true, CblasTrans, cols == 1 ? std::max<int64_t>(rows, 1) : s_col};
  }
  return {};
}

template <class T>
void gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int64_t M, int64_t N, int64_t K, const T* a, int64_t lda,
          const T* b, int64_t ldb, T* c, int64_t ldc) {
  if constexpr (std::is_same_v<T, float>) {
    blas::library().sgemm(CblasRowMajor, ta, tb, static_cast<int>(M), static_cast<int>(N), static_cast<int>(K), 1.0f, a,
                static_cast<int>(lda), b, static_cast<int>(ldb), 0.0f, c, static_cast<int>(ldc));
  } else {
    blas::library().dgemm(CblasRowMajor, ta, tb, static_cast<int>(M), static_cast<int>(N), static_cast<int>(K), 1.0, a,
                static_cast<int>(lda), b, static_cast<int>(ldb), 0.0, c, static_cast<int>(ldc));
  }
}

void bf16_gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int64_t M, int64_t N, int64_t K, const bf16* a, int64_t lda,
               const bf16* b, int64_t ldb, float* c, int64_t ldc) {
  onednn_gemm_bf16(ta == CblasTrans, tb == CblasTrans, M, N, K, &a->bits, lda, &b->bits, ldb, c, ldc);
}

// Calls gemm(trans_a, trans_b, M, N, K, a, lda, b, ldb, c, ldc) for every batch entry of
// out = a @ b (operands of element type In, out of type Out); an operand whose matrix dims BLAS
// cannot read in place is packed first.
template <class In, class Out, class Gemm>
void for_each_gemm(const Tensor& out, Tensor a, Tensor b, Gemm gemm) {
  const int64_t nd = a.dim();
  const int64_t M = a.shape()[nd - 2], K = a.shape()[nd - 1], N = b.shape()[nd - 1];
  BlasOperand la = blas_layout(M, K, a.strides()[nd - 2], a.strides()[nd - 1]);
  if (!la.ok) {  // e.g. a stepped slice: pack the matrices once
    a = contiguous(a);
    la = blas_layout(M, K, a.strides()[nd - 2], a.strides()[nd - 1]);
  }
  BlasOperand lb = blas_layout(K, N, b.strides()[nd - 2], b.strides()[nd - 1]);
  if (!lb.ok) {
    b = contiguous(b);
    lb = blas_layout(K, N, b.strides()[nd - 2], b.strides()[nd - 1]);
  }
  Out* c = out.data<Out>();
  if (K == 0) {
    for (int64_t i = 0; i < out.numel(); ++i) c[i] = Out(0);
    return;
  }
  const Shape batch(out.shape().begin(), out.shape().end() - 2);
  const int64_t batches = shape_numel(batch);
  std::vector<int64_t> idx(batch.size(), 0);
  for (int64_t i = 0; i < batches; ++i) {
    int64_t off_a = 0, off_b = 0;
    for (size_t d = 0; d < batch.size(); ++d) {
      off_a += idx[d] * a.strides()[d];
      off_b += idx[d] * b.strides()[d];
    }
    gemm(la.trans, lb.trans, M, N, K, a.data<In>() + off_a, la.ld, b.data<In>() + off_b, lb.ld, c + i * M * N,
         std::max<int64_t>(N, 1));
    for (size_t d = batch.size(); d-- > 0;) {
      if (++idx[d] < batch[d]) break;
      idx[d] = 0;
    }
  }
}

std::atomic<bool>& bf16_fallback_forced() {
  static std::atomic<bool> forced = [] {
    const char* env = std::getenv("NANOFORMER_BF16_GEMM");
    return env != nullptr && std::string_view(env) == "fallback";
  }();
  return forced;
}

}  // namespace

void matmul(const Tensor& out, const Tensor& a, const Tensor& b) {
  if (out.numel() == 0) return;
  switch (a.dtype()) {
    case DType::f32: for_each_gemm<float, float>(out, a, b, gemm<float>); break;
    case DType::f64: for_each_gemm<double, double>(out, a, b, gemm<double>); break;
    case DType::bf16:
      if (bf16_gemm_native()) {
        for_each_gemm<bf16, float>(out, a, b, bf16_gemm);
        break;
      }
      [[fallthrough]];
    case DType::f16:  // the 16-bit operands widened to f32 (exactly) on sgemm: the same products and f32 sums
      for_each_gemm<float, float>(out, convert_keeping_layout(a, DType::f32), convert_keeping_layout(b, DType::f32), gemm<float>);
      break;
    default: NF_FAIL("matmul: dtype ", dtype_name(a.dtype()), " is not supported (expects f32, f64, bf16 or f16)");
  }
}

bool bf16_gemm_native() { return !bf16_fallback_forced().load() && onednn_bf16_native(); }

void force_bf16_gemm_fallback(bool force) { bf16_fallback_forced().store(force); }

std::string bf16_gemm_info() {
  if (bf16_gemm_native()) return onednn_bf16_info();
  return std::string("fallback: bf16 operands widened to f32 on the BLAS sgemm (") +
         (onednn_bf16_native() ? "forced" : "oneDNN finds no bf16 instructions on this CPU") + ")";
}

}  // namespace nf::cpu
