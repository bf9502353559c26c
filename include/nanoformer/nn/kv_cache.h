#pragma once
// The key/value cache of a decoder: for every layer, the keys and values of the tokens seen so far,
// so that a new token attends to them without recomputing them.
//
// Storage: per layer, keys and values (max_batch, n_kv_heads, max_len, head_dim), preallocated
// (zeros) for the whole context: only the KV heads (GQA/MQA keep H / Hkv times less than H heads
// would), keys stored after rotation (RoPE) and QK-norm, so a step rotates only its new tokens.
// A forward of T new tokens writes them in place at columns length .. length + T - 1 and attends
// over the prefix as a view (no reallocation, no copy of old entries); `commit` then advances
// `length`. truncate(n) rolls back to the first n columns; reset() empties the cache.
//
// Ragged batches use left padding: all rows share the columns, and row r's tokens start at column
// start[r] (0 when the row is not padded); the columns before it are masked for every query by a
// key-padding mask, and column t of row r sits at position t - start[r]. A decode step appends one
// column to every row, at per-row positions, so each row computes exactly what it would alone.
// (Right-aligning the prompts keeps the causal mask bottom-right aligned for every row, which
// per-row lengths with right padding would not.) A ragged prompt batch is prefilled row by row into
// row views (`row_view`), then `set_row_starts` marks the padding.
#include <cstdint>
#include <functional>
#include <vector>

#include "nanoformer/core/tensor.h"

namespace nf::nn {

struct KVCacheShape {
  int64_t n_layers = 0;
  int64_t max_batch = 1;
  int64_t n_kv_heads = 0;
  int64_t head_dim = 0;
  int64_t max_len = 0;  // columns: the longest context the cache holds
  DType dtype = DType::f32;
};

// One layer's storage: keys and values (max_batch, n_kv_heads, max_len, head_dim).
struct LayerKV {
  Tensor keys, values;
};

// What every layer of one cached forward shares: T new tokens for the first `batch` rows.
struct KVCacheStep {
  int64_t batch = 0, new_tokens = 0;
  int64_t column = 0;               // the new tokens go to columns column .. column + new_tokens - 1
  std::vector<int64_t> positions;   // per row: the position of column `column` (column - start[r])
  Tensor key_padding;               // bool (batch, column + new_tokens), true at real tokens; undefined when no row is padded
};

// A layer's part of a cached forward: its storage and the shared step.
struct CachedAttention {
  LayerKV kv;
  const KVCacheStep* step = nullptr;
};

class KVCache {
 public:
  explicit KVCache(const KVCacheShape& shape);

  const KVCacheShape& shape() const { return shape_; }
  int64_t length() const { return length_; }   // columns filled
  int64_t batch() const { return batch_; }     // rows in use (0 when empty)
  const std::vector<int64_t>& row_starts() const { return starts_; }
  const LayerKV& layer(int64_t i) const;
  int64_t bytes() const;                       // of the storage: 2 n_layers max_batch Hkv max_len D elements

  // Checks that `new_tokens` more tokens for `batch` rows fit (naming the numbers when not) and
  // describes that forward; `commit` records it once every layer has written its columns.
  KVCacheStep begin(int64_t batch, int64_t new_tokens) const;
  void commit(const KVCacheStep& step);

  void truncate(int64_t n);  // keeps the first n columns (n >= every row's start, or 0)
  void reset();
  // Row r becomes what row rows[r] held, for every layer (beam search: each beam continues from
  // its parent): the cache then holds rows.size() rows. A gather of the filled columns.
  void select_rows(const std::vector<int64_t>& rows);

  // A cache over row `row` alone whose column 0 is this cache's column `first_column`, sharing
  // this cache's storage (empty: length 0). Prefilling a shorter prompt into it right-aligns it.
  KVCache row_view(int64_t row, int64_t first_column) const;
  // After row views were filled: `length` columns in use, row r's tokens starting at starts[r].
  void set_row_starts(int64_t length, const std::vector<int64_t>& starts);

 private:
  KVCache(const KVCacheShape& shape, std::vector<LayerKV> layers);

  KVCacheShape shape_;
  std::vector<LayerKV> layers_;
  int64_t length_ = 0, batch_ = 0;
  std::vector<int64_t> starts_;  // per row in use; all 0 unless a ragged batch was set
};

// f(first_row, rows, position) applied where rows sit at the per-row `positions` of a step: one call
// over every row when they share a position, else one call per row, the results joined on dim 0
// (an undefined result stays undefined). Positional schemes take one offset per call, so this is
// how they see a ragged batch.
Tensor at_row_positions(const std::vector<int64_t>& positions,
                        const std::function<Tensor(int64_t first_row, int64_t rows, int64_t position)>& f);

}  // namespace nf::nn
