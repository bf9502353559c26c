#pragma once
#include "nanoformer/core/tensor.h"

namespace nf::cpu {
// out (B..., M, N) = a (B..., M, K) @ b (B..., K, N): identical batch shapes (broadcast batch dims
// arrive as stride 0), any strides; out contiguous. One GEMM per batch entry on CBLAS; an operand
// whose matrix dims are transposed in memory is passed as transposed, never copied.
void matmul(const Tensor& out, const Tensor& a, const Tensor& b);
}  // namespace nf::cpu
