#pragma once
// The linear layer of decoding: y (R, N) = x (R, K) W^T + b for a few input rows (R <= 16, batch x
// new tokens at decode time), as matrix-vector products that stream W (N, K) from memory once per
// 4 rows. At such R, sgemm packs and blocks for reuse that does not exist and reaches a fraction of
// the memory bandwidth; here every element of W is loaded once and multiplied into 4 rows. Above 4
// rows (continuous batching), groups of 4 rows each stream W: a minimind2-small decode step of 8
// rows reads W twice and still takes half of sgemm's time.
#include <span>

#include "nanoformer/core/tensor.h"
#include "ops/problems/linear.h"

namespace nf::cpu {

inline constexpr int64_t kGemvMaxRows = 16;
inline constexpr int64_t kGemvRowsPerPass = 4;  // rows multiplied into each pass over W

// Whether linear_gemv computes y = x W^T + b for these operands: f32, 1 <= R <= kGemvMaxRows rows
// of x, and x and W each with unit stride along K (any row stride).
bool gemv_applies(const Tensor& x, const Tensor& weight);

// y (R, N) contiguous = x (R, K) W^T + b, b (N) or undefined; f32 sums in a fixed order whatever
// the thread count. Vectorised for AVX-512 or AVX2 (as compiled, -march=native), else scalar;
// output rows split across the engine's threads.
void linear_gemv(const Tensor& y, const Tensor& x, const Tensor& weight, const Tensor& bias);

// One x times several weights (decoding's q, k and v; gate and up): y_i = x W_i^T + b_i, one
// hand-off between the threads for all of them; each y_i as above.
void linear_gemv(std::span<const GemvProduct> products, const Tensor& x);

}  // namespace nf::cpu
