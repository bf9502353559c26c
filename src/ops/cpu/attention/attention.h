#pragma once
// The fused attention kernels (FlashAttention-2 style) for f32 and f64. Work is split into tiles of
// kQueryBlock queries x kKeyBlock keys; each tile's q k^T and p v products are small GEMMs, the
// softmax is computed online across key tiles, and the (Tq, Tk) scores never exist in memory.
//
// q (B, H, Tq, D), k and v (B, Hkv, Tk, D): any strides with the last dim contiguous. Optional
// masks are read through broadcast strides over (B, H, Tq, Tk). See ops/attention.h.
#include <cstdint>

#include "nanoformer/core/tensor.h"
#include "ops/problems/attention.h"

namespace nf::cpu {

inline constexpr int64_t kQueryBlock = 64;
inline constexpr int64_t kKeyBlock = 128;

// out (B, H, Tq, D) with the last dim contiguous (rows at any strides); lse (B, H, Tq) contiguous:
// the logsumexp of each row's scores (+inf for a row whose keys are all masked, whose output is 0).
void attention_forward(const AttentionProblem& p, const Tensor& q, const Tensor& k, const Tensor& v,
                       const Tensor& out, const Tensor& lse);

// Gradients from dout (like out, rows at any strides): dq (like q), dk and dv (B, Hkv, Tk, D), each
// dense (a permutation of a contiguous layout, e.g. its input's) with the last dim contiguous, and
// written whole; dbias, when defined, (B, H, Tq, Tk) contiguous, receives the gradient of the
// scores (the caller sums it down to the bias's shape).
void attention_backward(const AttentionProblem& p, const Tensor& q, const Tensor& k, const Tensor& v,
                        const Tensor& out, const Tensor& lse, const Tensor& dout, const Tensor& dq,
                        const Tensor& dk, const Tensor& dv, const Tensor& dbias);

}  // namespace nf::cpu
