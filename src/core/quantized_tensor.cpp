// QuantizedTensor: rows of blocks in a Storage.
#include "nanoformer/core/quantized_tensor.h"

#include "nanoformer/core/error.h"

namespace nf {

QuantizedTensor QuantizedTensor::empty(QuantType type, int64_t rows, int64_t cols) {
  NF_CHECK(rows >= 0 && cols >= 0, "QuantizedTensor: negative shape (", rows, ", ", cols, ")");
  const size_t bytes = quant_row_bytes(type, cols) * static_cast<size_t>(rows);
  return from_storage(std::make_shared<Storage>(bytes, Device{}), type, rows, cols);
}

QuantizedTensor QuantizedTensor::from_storage(std::shared_ptr<Storage> storage, QuantType type, int64_t rows,
                                              int64_t cols) {
  NF_CHECK(storage != nullptr, "QuantizedTensor: no storage");
  NF_CHECK(rows >= 0 && cols >= 0, "QuantizedTensor: negative shape (", rows, ", ", cols, ")");
  const size_t need = quant_row_bytes(type, cols) * static_cast<size_t>(rows);
  NF_CHECK(storage->nbytes() >= need, "QuantizedTensor: ", quant_type_name(type), " (", rows, ", ", cols,
           ") needs ", need, " bytes, the storage has ", storage->nbytes());
  QuantizedTensor q;
  q.storage_ = std::move(storage);
  q.type_ = type;
  q.rows_ = rows;
  q.cols_ = cols;
  return q;
}

}  // namespace nf
