#pragma once
// Attention for decoding: a few query rows per KV head (one new token, or a short chunk, after a
// cached prefix). One task per (batch row, KV head) stacks the query rows of every head that shares
// that KV head (grouped-query attention), so each cached key and value row is read once for all of
// them, and the products are vectorised dot products and AXPYs instead of sgemm calls with M = 1
// (whose packing costs more than the arithmetic). Keys and values are read where they are stored,
// as f32, f16, bf16 or Q8_0 rows (a KV cache of that type, ops/quantized_kv.h), never converted
// as a whole.
#include "nanoformer/core/quant_type.h"
#include "ops/cpu/attention.h"

namespace nf::cpu {

inline constexpr int64_t kDecodeMaxRows = 16;

// Keys or values as rows of D values of `type`: key j of KV head h in batch row b starts at
// data + b batch_stride + h head_stride + j row_stride (bytes).
struct KVRows {
  const unsigned char* data = nullptr;
  QuantType type = QuantType::f32;
  int64_t batch_stride = 0, head_stride = 0, row_stride = 0;
};
// k or v (B, Hkv, Tk, D), f32 with the last dim contiguous, as rows.
KVRows kv_rows(const Tensor& t);

// Whether attention_decode_forward computes p: f32 queries, no dropout, Tq x (H / Hkv) <= kDecodeMaxRows.
bool attention_decode_applies(const AttentionProblem& p, DType dtype);
// Whether it reads keys and values stored as `type`: f32, f16, bf16 and Q8_0.
bool attention_decode_reads(QuantType type);

// attention_forward's contract (out and lse as there), with an exact two-pass softmax over each
// row's keys: s = scale q k^T (+ bias, masks), p = e^(s - max s), out = p v / sum p.
void attention_decode_forward(const AttentionProblem& p, const Tensor& q, const KVRows& k, const KVRows& v,
                              const Tensor& out, const Tensor& lse);
inline void attention_decode_forward(const AttentionProblem& p, const Tensor& q, const Tensor& k, const Tensor& v,
                                     const Tensor& out, const Tensor& lse) {
  attention_decode_forward(p, q, kv_rows(k), kv_rows(v), out, lse);
}

}  // namespace nf::cpu
