// KVStorage: a KV cache layer's rows in the cache's type, converted or quantised as written
// (ops/kv_storage.h).
#include "nanoformer/ops/kv_storage.h"

#include <cstring>
#include <optional>

#include "nanoformer/core/dispatch.h"
#include "nanoformer/core/error.h"
#include "nanoformer/ops/view.h"
#include "ops/cpu/attention/attention_decode.h"
#include "ops/kv_storage_rows.h"

namespace nf {
namespace {

using WriteKernel = void (*)(const KVRows& rows, const Tensor& x);
const DeviceKernels<WriteKernel> kWrite{.cpu = cpu::kv_write};
using ReadKernel = void (*)(const Tensor& out, const KVRows& rows);
const DeviceKernels<ReadKernel> kRead{.cpu = cpu::kv_read};

}  // namespace

KVStorage::KVStorage(QuantType type, int64_t batch, int64_t heads, int64_t columns, int64_t head_dim)
    : batch_(batch), heads_(heads), columns_(columns) {
  NF_CHECK(batch > 0 && heads > 0 && columns > 0 && head_dim > 0, "KVStorage: batch ", batch, ", heads ", heads,
           ", columns ", columns, " and head_dim ", head_dim, " must all be positive");
  const int64_t block = quant_type_info(type).block_size;
  NF_CHECK(head_dim % block == 0, "KVStorage: ", quant_type_name(type), " stores rows in blocks of ", block,
           " values; head_dim ", head_dim, " is not a multiple of ", block);
  rows_ = QuantizedTensor::empty(type, batch * heads * columns, head_dim);
  std::memset(rows_.mutable_data(), 0, rows_.nbytes());  // zero bytes are zeros in every type
}

void KVStorage::check_range(const char* what, int64_t batch, int64_t from, int64_t n) const {
  NF_CHECK(defined() && batch >= 0 && batch <= batch_ && from >= 0 && n >= 0 && from + n <= columns_, "KVStorage: ",
           what, " of rows 0 .. ", batch - 1, ", columns ", from, " .. ", from + n - 1, " outside (", batch_, ", ",
           heads_, ", ", columns_, ")");
}

Tensor KVStorage::view(DType dtype, int64_t batch, int64_t from, int64_t n) const {
  const int64_t D = head_dim();
  return Tensor::from_storage(rows_.storage(), {batch, heads_, n, D}, {heads_ * columns_ * D, columns_ * D, D, 1},
                              from * D, dtype);
}

void KVStorage::write(int64_t column, const Tensor& x) const {
  NF_CHECK(x.dim() == 4 && x.size(1) == heads_ && x.size(3) == head_dim(), "KVStorage: writes (B, heads = ", heads_,
           ", T, head_dim = ", head_dim(), "), got ", shape_str(x.shape()));
  check_range("write", x.size(0), column, x.size(2));
  if (const std::optional<DType> dtype = float_type_dtype(type()))
    return copy_into(view(*dtype, x.size(0), column, x.size(2)), x);
  // blocks: rows of contiguous f32 values, at any strides, quantised
  Tensor f = x.to(DType::f32);
  if (f.stride(3) != 1) f = f.contiguous();
  kWrite.get(f.device(), "kv cache write")(kv_rows_of(*this, column), f);
}

Tensor KVStorage::read(int64_t batch, int64_t from, int64_t n, DType dtype) const {
  check_range("read", batch, from, n);
  if (const std::optional<DType> stored = float_type_dtype(type())) return view(*stored, batch, from, n).to(dtype);
  Tensor out = Tensor::empty({batch, heads_, n, head_dim()});
  kRead.get(out.device(), "kv cache read")(out, kv_rows_of(*this, from));
  return out.to(dtype);
}

void KVStorage::move_columns(int64_t batch, int64_t from, int64_t to, int64_t n) const {
  check_range("move", batch, from, n);
  check_range("move", batch, to, n);
  if (n == 0 || from == to) return;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t h = 0; h < heads_; ++h)  // a head's columns are consecutive rows
      std::memmove(mutable_row(b, h, to), row(b, h, from), static_cast<size_t>(n) * row_bytes());
}

void KVStorage::select_rows(const std::vector<int64_t>& rows, int64_t n) const {
  const auto count = static_cast<int64_t>(rows.size());
  check_range("select", count, 0, n);
  for (const int64_t r : rows) NF_CHECK(r >= 0 && r < batch_, "KVStorage: row ", r, " selected of ", batch_);
  const size_t head_bytes = static_cast<size_t>(n) * row_bytes();
  std::vector<unsigned char> copy(static_cast<size_t>(count * heads_) * head_bytes);  // first: rows may repeat
  for (int64_t r = 0; r < count; ++r)
    for (int64_t h = 0; h < heads_; ++h)
      std::memcpy(copy.data() + static_cast<size_t>(r * heads_ + h) * head_bytes, row(rows[static_cast<size_t>(r)], h, 0),
                  head_bytes);
  for (int64_t r = 0; r < count; ++r)
    for (int64_t h = 0; h < heads_; ++h)
      std::memcpy(mutable_row(r, h, 0), copy.data() + static_cast<size_t>(r * heads_ + h) * head_bytes, head_bytes);
}

void KVStorage::copy_columns_from(const KVStorage& other, int64_t batch, int64_t n) const {
  check_range("copy", batch, 0, n);
  other.check_range("copy", batch, 0, n);
  NF_CHECK(other.type() == type() && other.heads_ == heads_ && other.head_dim() == head_dim(),
           "KVStorage: cannot copy columns between caches of different types or shapes");
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t h = 0; h < heads_; ++h)  // a head's columns are consecutive rows
      std::memcpy(mutable_row(b, h, 0), other.row(b, h, 0), static_cast<size_t>(n) * row_bytes());
}

}  // namespace nf
