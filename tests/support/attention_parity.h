#pragma once
// What the attention tests share: the fused kernel against the plain composition, forward and
// backward (tests/ops/test_attention.cpp, test_attention_window.cpp).
#include <algorithm>

#include "nanoformer/ops/attention.h"
#include "ops/cpu/attention/attention.h"  // the tile sizes, to choose lengths across tile borders
#include "support/testing.h"

namespace nf::testing {

// A length past one tile of queries and of keys.
inline constexpr int64_t kTile = std::max(cpu::kQueryBlock, cpu::kKeyBlock);

inline Tensor randn_leaf(const Shape& shape, uint64_t seed, DType dtype = DType::f32) {
  Generator gen(seed);
  return randn(shape, gen, dtype).set_requires_grad();
}

// Random bool (true with probability `p_true`) of `shape`.
inline Tensor random_mask(const Shape& shape, uint64_t seed, double p_true) {
  Generator gen(seed);
  return lt(rand(shape, gen, DType::f64), p_true);
}

struct AttentionResult {
  Tensor out, dq, dk, dv, dmask;
};

// Forward with `kernel`, then backward of sum(out * grad_out).
inline AttentionResult run_attention(AttentionKernel kernel, const Tensor& q, const Tensor& k, const Tensor& v,
                                     AttentionOptions options, uint64_t dropout_seed = 0) {
  for (const Tensor* t : {&q, &k, &v, const_cast<const Tensor*>(&options.mask)}) {
    if (t->defined() && t->requires_grad()) t->zero_grad();
  }
  options.kernel = kernel;
  Generator gen(dropout_seed);
  const Tensor out = scaled_dot_product_attention(q, k, v, options, gen);
  Generator g_gen(99);
  out.backward(randn(out.shape(), g_gen, out.dtype()));
  const bool mask_grad = options.mask.defined() && options.mask.requires_grad();
  return {out.detach(), q.grad(), k.grad(), v.grad(), mask_grad ? options.mask.grad() : Tensor()};
}

// The fused kernel's output and gradients equal the plain path's (1e-5 in f32, 1e-12 in f64).
inline void expect_fused_equals_plain(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionOptions& options,
                                      uint64_t dropout_seed = 0) {
  const bool wide = q.dtype() == DType::f64;
  const double atol = wide ? 1e-12 : 1e-5, rtol = wide ? 1e-10 : 1e-5;
  const AttentionResult plain = run_attention(AttentionKernel::plain, q, k, v, options, dropout_seed);
  const AttentionResult fused = run_attention(AttentionKernel::fused, q, k, v, options, dropout_seed);
  EXPECT_TENSOR_CLOSE(fused.out, plain.out, atol, rtol);
  EXPECT_TENSOR_CLOSE(fused.dq, plain.dq, atol, rtol);
  EXPECT_TENSOR_CLOSE(fused.dk, plain.dk, atol, rtol);
  EXPECT_TENSOR_CLOSE(fused.dv, plain.dv, atol, rtol);
  if (plain.dmask.defined()) {
    EXPECT_TENSOR_CLOSE(fused.dmask, plain.dmask, atol, rtol);
  }
}

}  // namespace nf::testing
