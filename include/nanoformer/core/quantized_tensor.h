#pragma once
// A matrix of `rows` x `cols` values stored in one of llama.cpp's weight types (core/quant_type.h):
// each row is cols / block_size blocks, rows one after another, no padding. The bytes live in a
// Storage, owned or a view into a memory-mapped file (a GGUF tensor used in place). Like Tensor it
// is a shared handle: copies share the bytes. It is a weight, never a result of math: ops read it
// (ops/quantized.h: linear, embedding, dequantize) and never write into one after it is made.
// It may also carry its values a second time in a layout of the device's kernels (panels: rows
// interleaved for the decode and prefill products, made once at load by
// ops/quantized.h's with_kernel_layout); the rows stay its values for everything else.
#include <cstdint>
#include <memory>

#include "nanoformer/core/quant_type.h"
#include "nanoformer/core/storage.h"

namespace nf {

class QuantizedTensor {
 public:
  QuantizedTensor() = default;
  // Allocates rows x cols of `type` (uninitialised bytes).
  static QuantizedTensor empty(QuantType type, int64_t rows, int64_t cols);
  // Wraps `storage` (at least rows * row_bytes bytes); throws when it is too small.
  static QuantizedTensor from_storage(std::shared_ptr<Storage> storage, QuantType type, int64_t rows, int64_t cols);

  bool defined() const { return storage_ != nullptr; }
  QuantType type() const { return type_; }
  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }
  size_t row_bytes() const { return quant_row_bytes(type_, cols_); }
  size_t nbytes() const { return row_bytes() * static_cast<size_t>(rows_); }
  const void* data() const { return storage_->data(); }
  void* mutable_data() { return storage_->data(); }  // only while it is being filled
  const void* row(int64_t r) const { return static_cast<const unsigned char*>(data()) + row_bytes() * r; }
  const std::shared_ptr<Storage>& storage() const { return storage_; }
  // The kernels' layout of the same values, or null (its bytes are the device kernels' business).
  const std::shared_ptr<Storage>& panels() const { return panels_; }
  QuantizedTensor with_panels(std::shared_ptr<Storage> panels) const {
    QuantizedTensor q = *this;
    q.panels_ = std::move(panels);
    return q;
  }

 private:
  std::shared_ptr<Storage> storage_;
  std::shared_ptr<Storage> panels_;
  QuantType type_ = QuantType::f32;
  int64_t rows_ = 0, cols_ = 0;
};

}  // namespace nf
