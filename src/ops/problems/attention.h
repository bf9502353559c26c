#pragma once
// One attention problem, on any device (ops/attention*.cpp fill it once; every kernel reads it):
// q (B, H, Tq, D) against keys and values (B, Hkv, Tk, D), H a multiple of Hkv (grouped-query).
#include <algorithm>
#include <cstdint>

#include "nanoformer/core/quant_type.h"
#include "nanoformer/core/tensor.h"

namespace nf {

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

// Keys or values as rows of D values of `type` (a KV cache, ops/kv_storage.h): key j of KV head h
// in batch row b starts at data + b batch_stride + h head_stride + j row_stride (bytes); or, paged
// (a block table: pages set), column c = first + j of row b lies in page pages[b pages_per_row + c /
// page_len] at h head_stride + (c % page_len) row_stride. A handle, as a Tensor is: the rows it
// names are written through it by kv_write, read by the others.
struct KVRows {
  unsigned char* data = nullptr;
  QuantType type = QuantType::f32;
  int64_t batch_stride = 0, head_stride = 0, row_stride = 0;
  unsigned char* const* pages = nullptr;
  int64_t page_len = 0, pages_per_row = 0, first = 0;

  unsigned char* at(int64_t b, int64_t h, int64_t j) const {
    if (!pages) return data + b * batch_stride + h * head_stride + j * row_stride;
    const int64_t c = first + j;
    return pages[b * pages_per_row + c / page_len] + h * head_stride + (c % page_len) * row_stride;
  }
  // at(b, h, j) for j < n into out[j], a page at a time
  void each_row(int64_t b, int64_t h, int64_t n, const unsigned char** out) const {
    for (int64_t j = 0; j < n;) {
      const unsigned char* row = at(b, h, j);
      const int64_t run = pages ? std::min(n - j, page_len - (first + j) % page_len) : n;
      for (int64_t i = 0; i < run; ++i) out[j + i] = row + i * row_stride;
      j += run;
    }
  }
};

}  // namespace nf
