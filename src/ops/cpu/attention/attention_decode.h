#pragma once
// Attention for decoding: a few query rows per KV head (one new token, or a short chunk, after a
// cached prefix). One task per (batch row, KV head) stacks the query rows of every head that shares
// that KV head (grouped-query attention), so each cached key and value row is read once for all of
// them, and the products are vectorised dot products and AXPYs instead of sgemm calls with M = 1
// (whose packing costs more than the arithmetic). Keys and values are read where they are stored,
// as f32, f16, bf16, Q8_0 or Q4_0 rows (a KV cache of that type, ops/kv_storage.h), never converted
// as a whole.
#include <span>

#include "core/thread_team.h"
#include "nanoformer/core/quant_type.h"
#include "ops/cpu/attention/attention.h"
#include "ops/cpu/matmul/gemv.h"
#include "ops/cpu/quant/quant_gemv.h"

namespace nf::cpu {

// Rows of scores (queries x the query heads of a KV head) the decoding kernel computes in one pass,
// and the most queries it takes: as many as the matrix-vector products take rows (gemv.h,
// quant_gemv.h), so that a verifying forward of a speculative draft gives each row the bits of a
// one-token decode (longer queries, prefill's, go to the fused kernel, whose sums differ in their
// last bits)
inline constexpr int64_t kDecodeMaxRows = 16;
inline constexpr int64_t kDecodeMaxQueries = kGemvMaxRows;
static_assert(kGemvMaxRows == kQuantGemvMaxRows, "a verifying forward's linears stay on one kind of kernel");
// A step held as one team of threads (core/thread_team.h) must take these kernels, never BLAS,
// which would run on one thread inside the team's region.
static_assert(kTeamMaxRows == kGemvMaxRows, "a team's step takes decode's kernels only");

// k or v (B, Hkv, Tk, D), f32 with the last dim contiguous, as rows; and f32 rows as such a tensor
// (a view of their memory: valid while what holds them lives).
KVRows kv_rows(const Tensor& t);
Tensor rows_tensor(const KVRows& rows, int64_t B, int64_t heads, int64_t n, int64_t D);

// Whether attention_decode_forward computes p: f32 queries, no dropout, Tq <= kDecodeMaxQueries.
bool attention_decode_applies(const AttentionProblem& p, DType dtype);
// Whether it reads keys and values stored as `type`: f32, f16, bf16, Q8_0 and Q4_0.
bool attention_decode_reads(QuantType type);

// attention_forward's contract (out and lse as there), with an exact two-pass softmax over each
// row's keys: s = scale q k^T (+ bias, masks), p = e^(s - max s), out = p v / sum p.
void attention_decode_forward(const AttentionProblem& p, const Tensor& q, const KVRows& k, const KVRows& v,
                              const Tensor& out, const Tensor& lse);
inline void attention_decode_forward(const AttentionProblem& p, const Tensor& q, const Tensor& k, const Tensor& v,
                                     const Tensor& out, const Tensor& lse) {
  attention_decode_forward(p, q, kv_rows(k), kv_rows(v), out, lse);
}

// One cache's part of attention over several (continuous batching: each sequence in its own
// cache, ops/attention.h): problem p over its keys and values k, v, its batch rows the rows
// row0 .. row0 + p.B - 1 of q, out and lse.
struct CachedPart {
  AttentionProblem p;
  KVRows k, v;
  int64_t row0 = 0;
};

// The CPU entry of attention over KV caches' rows (ops/attention_cache.cpp's table): where every
// part is decoding's (attention_decode_applies, a type it reads), all the parts' tasks in one
// parallel region; else each part alone, the fused kernel over its first Tk columns where the
// decoding kernel does not apply: f32 rows in place (a strided view), others dequantised. q f32
// (R, H, Tq, D) with unit stride along D; out and lse as attention_forward's, R rows.
void attention_cached_forward(std::span<const CachedPart> parts, const Tensor& q, const Tensor& out, const Tensor& lse);

// A KV cache's rows (B, heads, n, D) written from x (B, heads, n, D) f32 with unit stride along D,
// each row quantised to the rows' type; and read back into out (B, heads, n, D) f32 contiguous.
// `rows` names column 0 of the columns written or read.
void kv_write(const KVRows& rows, const Tensor& x);
void kv_read(const Tensor& out, const KVRows& rows);

}  // namespace nf::cpu
