#pragma once
// A KV cache layer's storage as the rows its kernels read and write (ops/problems/attention.h).
#include "nanoformer/ops/kv_storage.h"
#include "ops/problems/attention.h"

namespace nf {

// The rows of `t` from column `column` on: key j of head h in batch row b is column + j.
inline KVRows kv_rows_of(const KVStorage& t, int64_t column) { return t.rows_from(column); }

}  // namespace nf
