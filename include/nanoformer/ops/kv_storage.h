#pragma once
// One layer's keys or values in a KV cache (nn/kv_cache.h), whatever its cache type: a (batch,
// heads, columns) array of rows of head_dim values, every row stored in one type (core/quant_type.h):
// a float type (f32, f64, f16, bf16) as those values, or Q8_0 or Q4_0 as blocks (per 32 values
// Q8_0: d = max|x| / 127 as f16 and q = round(x / d) as int8; Q4_0: d = max / -8 as f16 and 4-bit
// q = min(15, trunc(x / d + 8.5)), x = d (q - 8); core/quant_type.h, ops/cpu/quant/quant_blocks.h). Rows one after another: (b, h, j) is row (b heads + h)
// columns + j, so the rows of a float type are a (batch, heads, columns, head_dim) array, which
// read() returns as a strided view where q's dtype is theirs. Values take the rows' type as they
// are written (exactly where it is theirs); attention over a cache reads the rows in place
// (ops/attention.h). A shared handle like Tensor: copies share the bytes, and the writes below are
// const, as Tensor's copy_into.
//
// Paged (nn/kv_cache.h's blocks): each batch row's columns are those of a list of pages of page_len
// columns each, pages that other storages may hold too (a shared prefix); row (b, h, j) is row (h, j
// % page_len) of page j / page_len of row b. The kernels read and write it through that table
// (KVRows::at), in the same order as a contiguous storage, so attention over it gives the same bits.
#include <cstdint>
#include <memory>
#include <vector>

#include "nanoformer/core/quantized_tensor.h"
#include "nanoformer/core/tensor.h"

namespace nf {

struct KVRows;  // the kernels' view of the rows (src/ops/problems/attention.h)

// One page of a paged storage: heads x page_len rows, row (h, c) being rows.row(first + h page_len + c).
struct KVPage {
  QuantizedTensor rows;
  int64_t first = 0;
};

class KVStorage {
 public:
  KVStorage() = default;
  // Zeros; head_dim must be whole blocks of `type`.
  KVStorage(QuantType type, int64_t batch, int64_t heads, int64_t columns, int64_t head_dim);
  // Paged: batch row b's columns are those of pages[b] in order (every row the same number of pages,
  // all of one type and head_dim); columns() = that number x page_len.
  KVStorage(int64_t heads, int64_t page_len, const std::vector<std::vector<KVPage>>& pages);

  bool defined() const { return rows_.defined() || paging_ != nullptr; }
  bool paged() const { return paging_ != nullptr; }
  QuantType type() const { return type_; }
  int64_t batch() const { return batch_; }
  int64_t heads() const { return heads_; }
  int64_t columns() const { return columns_; }
  int64_t head_dim() const { return head_dim_; }
  size_t row_bytes() const { return row_bytes_; }
  int64_t bytes() const { return batch_ * heads_ * columns_ * static_cast<int64_t>(row_bytes_); }
  const void* row(int64_t b, int64_t h, int64_t j) const;
  // The rows as its kernels take them (ops/problems/attention.h's KVRows), from column `column` on.
  KVRows rows_from(int64_t column) const;

  // x (B, heads, T, head_dim), floating, B <= batch -> columns column .. column + T - 1 of rows b < B,
  // in the rows' type (float rows: converted as Tensor::to converts; Q8_0, Q4_0: quantised from f32 as
  // quantize_row quantises, gguf.quants' bytes).
  void write(int64_t column, const Tensor& x) const;
  // Columns from .. from + n - 1 of rows b < batch as dtype (batch, heads, n, head_dim): where the
  // rows are dtype's values, a strided view of them (no copy: a later write shows through it); else
  // a new tensor of their values (dequantised, converted).
  Tensor read(int64_t batch, int64_t from, int64_t n, DType dtype = DType::f32) const;
  // Rows b < batch: columns from .. from + n - 1 copied as they are (no requantising) to to .. to + n - 1;
  // the two ranges may overlap.
  void move_columns(int64_t batch, int64_t from, int64_t to, int64_t n) const;
  // Row r becomes what row rows[r] held in columns 0 .. n - 1 (rows may repeat). Not paged (a paged
  // cache shares its rows' pages instead).
  void select_rows(const std::vector<int64_t>& rows, int64_t n) const;
  // Rows b < batch, columns 0 .. n - 1: copied as they are from `other` (the same type, heads and
  // head_dim; at least n columns). Neither paged.
  void copy_columns_from(const KVStorage& other, int64_t batch, int64_t n) const;

 private:
  struct Paging;
  void* mutable_row(int64_t b, int64_t h, int64_t j) const { return const_cast<void*>(row(b, h, j)); }
  // that rows b < batch and columns [from, from + n) lie in the storage
  void check_range(const char* what, int64_t batch, int64_t from, int64_t n) const;
  // columns from .. from + n - 1 of rows b < batch of a float type's rows, as a view of its dtype
  Tensor view(DType dtype, int64_t batch, int64_t from, int64_t n) const;
  // columns from .. from + n - 1 of row b of a paged float type's rows, page by page: fn(view of
  // dtype (1, heads, count, head_dim), the first of its columns counted from `from`)
  template <class Fn>
  void each_page_view(DType dtype, int64_t b, int64_t from, int64_t n, Fn fn) const;

  QuantizedTensor rows_;
  std::shared_ptr<const Paging> paging_;
  QuantType type_ = QuantType::f32;
  int64_t batch_ = 0, heads_ = 0, columns_ = 0, head_dim_ = 0;
  size_t row_bytes_ = 0;
};

}  // namespace nf
