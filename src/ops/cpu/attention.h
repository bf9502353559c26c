#pragma once
// The fused attention kernels (FlashAttention-2 style) for f32 and f64. Work is split into tiles of
// kQueryBlock queries x kKeyBlock keys; each tile's q k^T and p v products are small GEMMs, the
// softmax is computed online across key tiles, and the (Tq, Tk) scores never exist in memory.
//
// q (B, H, Tq, D), k and v (B, Hkv, Tk, D): any strides with the last dim contiguous. Optional
// masks are read through broadcast strides over (B, H, Tq, Tk). See ops/attention.h.
#include <cstdint>

#include "nanoformer/core/tensor.h"

namespace nf::cpu {

inline constexpr int64_t kQueryBlock = 64;
inline constexpr int64_t kKeyBlock = 128;

struct AttentionProblem {
  int64_t B = 0, H = 0, Hkv = 0, Tq = 0, Tk = 0, D = 0;
  double scale = 1.0;
  bool causal = false;     // key j visible to query i iff j <= i + (Tk - Tq)
  int64_t window = 0;      // with causal and > 0: also j > i + (Tk - Tq) - window
  Tensor keep;             // bool, broadcastable to (B, H, Tq, Tk): true = attend; or undefined
  Tensor bias;             // q's dtype, broadcastable to (B, H, Tq, Tk), added to the scores; or undefined
  Tensor key_padding;      // bool (B, Tk): true = real key; or undefined
  double keep_prob = 1.0;  // dropout: element e of the (B, H, Tq, Tk) weights survives when the
  uint64_t seed = 0;       // Philox draw at counter (first + e) with key seed is below keep_prob
  uint64_t first = 0;
};

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
