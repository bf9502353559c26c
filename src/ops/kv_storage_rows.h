#pragma once
// A KV cache layer's storage as the rows its kernels read and write (ops/problems/attention.h).
#include "nanoformer/ops/kv_storage.h"
#include "ops/problems/attention.h"

namespace nf {

// The rows of `t` from column `column` on: key j of head h in batch row b is column + j.
inline KVRows kv_rows_of(const KVStorage& t, int64_t column) {
  const auto row = static_cast<int64_t>(t.row_bytes());
  // a KVStorage is a handle to its storage, as a Tensor is: writing through a const one is allowed
  auto* data = const_cast<unsigned char*>(static_cast<const unsigned char*>(t.row(0, 0, column)));
  return {data, t.type(), t.heads() * t.columns() * row, t.columns() * row, row};
}

}  // namespace nf
