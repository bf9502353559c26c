#include "ops/cpu/matmul.h"

#include "core/blas_library.h"
#include "nanoformer/core/error.h"
#include "nanoformer/ops/view.h"

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

template <class T>
void matmul_typed(const Tensor& out, Tensor a, Tensor b) {
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
  T* c = out.data<T>();
  if (K == 0) {
    for (int64_t i = 0; i < out.numel(); ++i) c[i] = T(0);
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
    gemm<T>(la.trans, lb.trans, M, N, K, a.data<T>() + off_a, la.ld, b.data<T>() + off_b, lb.ld, c + i * M * N,
            std::max<int64_t>(N, 1));
    for (size_t d = batch.size(); d-- > 0;) {
      if (++idx[d] < batch[d]) break;
      idx[d] = 0;
    }
  }
}

}  // namespace

void matmul(const Tensor& out, const Tensor& a, const Tensor& b) {
  if (out.numel() == 0) return;
  switch (a.dtype()) {
    case DType::f32: matmul_typed<float>(out, a, b); break;
    case DType::f64: matmul_typed<double>(out, a, b); break;
    default: NF_FAIL("matmul: dtype ", dtype_name(a.dtype()), " is not supported (expects f32 or f64)");
  }
}

}  // namespace nf::cpu
