#pragma once
// Attention for decoding: a few query rows per KV head (one new token, or a short chunk, after a
// cached prefix). One task per (batch row, KV head) stacks the query rows of every head that shares
// that KV head (grouped-query attention), so each cached key and value row is read once for all of
// them, and the products are vectorised dot products and AXPYs instead of sgemm calls with M = 1
// (whose packing costs more than the arithmetic).
#include "ops/cpu/attention.h"

namespace nf::cpu {

inline constexpr int64_t kDecodeMaxRows = 16;

// Whether attention_decode_forward computes p: f32, no dropout, Tq x (H / Hkv) <= kDecodeMaxRows.
bool attention_decode_applies(const AttentionProblem& p, DType dtype);

// attention_forward's contract (out and lse as there), with an exact two-pass softmax over each
// row's keys: s = scale q k^T (+ bias, masks), p = e^(s - max s), out = p v / sum p.
void attention_decode_forward(const AttentionProblem& p, const Tensor& q, const Tensor& k, const Tensor& v,
                              const Tensor& out, const Tensor& lse);

}  // namespace nf::cpu
