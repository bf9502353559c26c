// KVBlock: block_len positions of a paged KV cache's layers (nn/kv_block.h).
#include "nanoformer/nn/kv_block.h"

#include <cstring>

#include "nanoformer/core/error.h"

namespace nf::nn {

KVBlock::KVBlock(QuantType type, int64_t layers, int64_t heads, int64_t block_len, int64_t head_dim)
    : layers_(layers), heads_(heads), block_len_(block_len) {
  NF_CHECK(layers > 0 && heads > 0 && block_len > 0 && head_dim > 0, "KVBlock: layers ", layers, ", heads ", heads,
           ", block_len ", block_len, " and head_dim ", head_dim, " must all be positive");
  rows_ = QuantizedTensor::empty(type, 2 * layers * heads * block_len, head_dim);
  std::memset(rows_.mutable_data(), 0, rows_.nbytes());  // zero bytes are zeros in every type
}

std::shared_ptr<KVBlock> KVBlock::clone() const {
  std::shared_ptr<KVBlock> copy(new KVBlock());
  copy->layers_ = layers_, copy->heads_ = heads_, copy->block_len_ = block_len_;
  copy->rows_ = QuantizedTensor::empty(rows_.type(), rows_.rows(), rows_.cols());
  std::memcpy(copy->rows_.mutable_data(), rows_.data(), rows_.nbytes());
  return copy;
}

}  // namespace nf::nn
