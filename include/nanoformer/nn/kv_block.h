#pragma once
// One block of a paged KV cache (nn/kv_cache.h with a block_len): block_len consecutive positions of
// every paged layer's keys and values, rows of the cache's type. Blocks are held by reference count
// (shared_ptr): a sequence's cache is a list of blocks per batch row, and the blocks of a common
// prefix are held by every sequence that starts with it (and by a prefix cache, serve/prefix_cache.h).
// A block held more than once is never written: a cache that must write into one copies it first
// (copy on write), so what a sharer reads never changes. vLLM's blocks (Kwon et al., "Efficient
// Memory Management for Large Language Model Serving with PagedAttention", SOSP 2023) are the model.
#include <cstdint>
#include <memory>

#include "nanoformer/core/quantized_tensor.h"
#include "nanoformer/ops/kv_storage.h"

namespace nf::nn {

class KVBlock {
 public:
  // Zeros: `layers` paged layers of keys and values, each heads x block_len rows of head_dim values of `type`.
  KVBlock(QuantType type, int64_t layers, int64_t heads, int64_t block_len, int64_t head_dim);
  // A new block holding what this one holds.
  std::shared_ptr<KVBlock> clone() const;

  // Paged layer `slot`'s keys (or values) in this block, as a page of a paged KVStorage.
  KVPage page(int64_t slot, bool values) const { return {rows_, (2 * slot + (values ? 1 : 0)) * heads_ * block_len_}; }
  int64_t bytes() const { return static_cast<int64_t>(rows_.nbytes()); }
  const QuantizedTensor& rows() const { return rows_; }
  int64_t layers() const { return layers_; }
  int64_t heads() const { return heads_; }
  int64_t block_len() const { return block_len_; }

 private:
  KVBlock() = default;
  QuantizedTensor rows_;  // (2 layers heads block_len, head_dim): layer slot i's keys, then its values
  int64_t layers_ = 0, heads_ = 0, block_len_ = 0;
};

using KVBlockRef = std::shared_ptr<KVBlock>;

}  // namespace nf::nn
