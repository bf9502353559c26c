// KVStorage: a KV cache layer's rows in the cache's type, converted or quantised as written
// (ops/kv_storage.h).
#include "nanoformer/ops/kv_storage.h"

#include <algorithm>
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

// A paged storage's pages, flat (row b's page i at b pages_per_row + i), and where each begins.
struct KVStorage::Paging {
  std::vector<KVPage> pages;
  std::vector<unsigned char*> bases;
  int64_t page_len = 0, pages_per_row = 0;
};

KVStorage::KVStorage(QuantType type, int64_t batch, int64_t heads, int64_t columns, int64_t head_dim)
    : type_(type), batch_(batch), heads_(heads), columns_(columns), head_dim_(head_dim) {
  NF_CHECK(batch > 0 && heads > 0 && columns > 0 && head_dim > 0, "KVStorage: batch ", batch, ", heads ", heads,
           ", columns ", columns, " and head_dim ", head_dim, " must all be positive");
  const int64_t block = quant_type_info(type).block_size;
  NF_CHECK(head_dim % block == 0, "KVStorage: ", quant_type_name(type), " stores rows in blocks of ", block,
           " values; head_dim ", head_dim, " is not a multiple of ", block);
  rows_ = QuantizedTensor::empty(type, batch * heads * columns, head_dim);
  std::memset(rows_.mutable_data(), 0, rows_.nbytes());  // zero bytes are zeros in every type
  row_bytes_ = rows_.row_bytes();
}

KVStorage::KVStorage(int64_t heads, int64_t page_len, const std::vector<std::vector<KVPage>>& pages)
    : batch_(static_cast<int64_t>(pages.size())), heads_(heads) {
  NF_CHECK(heads > 0 && page_len > 0 && !pages.empty() && !pages[0].empty(), "KVStorage: a paged storage needs heads (",
           heads, "), a page length (", page_len, "), rows (", pages.size(), ") and pages");
  auto paging = std::make_shared<Paging>();
  paging->page_len = page_len;
  paging->pages_per_row = static_cast<int64_t>(pages[0].size());
  const QuantizedTensor& first = pages[0][0].rows;
  type_ = first.type(), head_dim_ = first.cols(), row_bytes_ = first.row_bytes();
  for (const std::vector<KVPage>& row : pages) {
    NF_CHECK(static_cast<int64_t>(row.size()) == paging->pages_per_row, "KVStorage: rows of ", row.size(), " and ",
             paging->pages_per_row, " pages");
    for (const KVPage& page : row) {
      NF_CHECK(page.rows.defined() && page.rows.type() == type_ && page.rows.cols() == head_dim_ && page.first >= 0 &&
                   page.first + heads * page_len <= page.rows.rows(),
               "KVStorage: a page is not ", heads, " x ", page_len, " rows of ", quant_type_name(type_), " (", head_dim_,
               ")");
      paging->pages.push_back(page);
      paging->bases.push_back(const_cast<unsigned char*>(static_cast<const unsigned char*>(page.rows.row(page.first))));
    }
  }
  columns_ = paging->pages_per_row * page_len;
  paging_ = std::move(paging);
}

const void* KVStorage::row(int64_t b, int64_t h, int64_t j) const {
  if (!paging_) return rows_.row((b * heads_ + h) * columns_ + j);
  return rows_from(0).at(b, h, j);
}

KVRows KVStorage::rows_from(int64_t column) const {
  const auto row = static_cast<int64_t>(row_bytes_);
  if (paging_)
    return {.data = nullptr, .type = type_, .batch_stride = 0, .head_stride = paging_->page_len * row, .row_stride = row,
            .pages = paging_->bases.data(), .page_len = paging_->page_len, .pages_per_row = paging_->pages_per_row,
            .first = column};
  // a KVStorage is a handle to its storage, as a Tensor is: writing through a const one is allowed
  auto* data = const_cast<unsigned char*>(static_cast<const unsigned char*>(rows_.row((column))));
  return {.data = data, .type = type_, .batch_stride = heads_ * columns_ * row, .head_stride = columns_ * row,
          .row_stride = row};
}

template <class Fn>
void KVStorage::each_page_view(DType dtype, int64_t b, int64_t from, int64_t n, Fn fn) const {
  const int64_t L = paging_->page_len, D = head_dim_;
  for (int64_t done = 0; done < n;) {
    const int64_t c = from + done, offset = c % L, count = std::min(n - done, L - offset);
    const KVPage& page = paging_->pages[static_cast<size_t>(b * paging_->pages_per_row + c / L)];
    fn(Tensor::from_storage(page.rows.storage(), {1, heads_, count, D}, {heads_ * L * D, L * D, D, 1},
                            (page.first + offset) * D, dtype),
       done);
    done += count;
  }
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
  if (const std::optional<DType> dtype = float_type_dtype(type())) {
    if (!paging_) return copy_into(view(*dtype, x.size(0), column, x.size(2)), x);
    for (int64_t b = 0; b < x.size(0); ++b)
      each_page_view(*dtype, b, column, x.size(2), [&](const Tensor& page, int64_t j) {
        copy_into(page, narrow(narrow(x, 0, b, 1), 2, j, page.size(2)));
      });
    return;
  }
  // blocks: rows of contiguous f32 values, at any strides, quantised
  Tensor f = x.to(DType::f32);
  if (f.stride(3) != 1) f = f.contiguous();
  kWrite.get(f.device(), "kv cache write")(kv_rows_of(*this, column), f);
}

Tensor KVStorage::read(int64_t batch, int64_t from, int64_t n, DType dtype) const {
  check_range("read", batch, from, n);
  if (const std::optional<DType> stored = float_type_dtype(type())) {
    if (!paging_) return view(*stored, batch, from, n).to(dtype);
    Tensor out = Tensor::empty({batch, heads_, n, head_dim_}, *stored);  // gathered page by page
    for (int64_t b = 0; b < batch; ++b)
      each_page_view(*stored, b, from, n, [&](const Tensor& page, int64_t j) {
        copy_into(narrow(narrow(out, 0, b, 1), 2, j, page.size(2)), page);
      });
    return out.to(dtype);
  }
  Tensor out = Tensor::empty({batch, heads_, n, head_dim()});
  kRead.get(out.device(), "kv cache read")(out, kv_rows_of(*this, from));
  return out.to(dtype);
}

void KVStorage::move_columns(int64_t batch, int64_t from, int64_t to, int64_t n) const {
  check_range("move", batch, from, n);
  check_range("move", batch, to, n);
  if (n == 0 || from == to) return;
  if (paging_) {  // row by row, in the order that reads each before it is overwritten
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t h = 0; h < heads_; ++h)
        for (int64_t i = 0; i < n; ++i) {
          const int64_t j = to < from ? i : n - 1 - i;
          std::memcpy(mutable_row(b, h, to + j), row(b, h, from + j), row_bytes_);
        }
    return;
  }
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t h = 0; h < heads_; ++h)  // a head's columns are consecutive rows
      std::memmove(mutable_row(b, h, to), row(b, h, from), static_cast<size_t>(n) * row_bytes());
}

void KVStorage::select_rows(const std::vector<int64_t>& rows, int64_t n) const {
  const auto count = static_cast<int64_t>(rows.size());
  NF_CHECK(!paging_, "KVStorage: select_rows of a paged storage (share its rows' pages instead)");
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
  NF_CHECK(!paging_ && !other.paging_, "KVStorage: copy_columns_from with a paged storage (share its pages instead)");
  check_range("copy", batch, 0, n);
  other.check_range("copy", batch, 0, n);
  NF_CHECK(other.type() == type() && other.heads_ == heads_ && other.head_dim() == head_dim(),
           "KVStorage: cannot copy columns between caches of different types or shapes");
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t h = 0; h < heads_; ++h)  // a head's columns are consecutive rows
      std::memcpy(mutable_row(b, h, 0), other.row(b, h, 0), static_cast<size_t>(n) * row_bytes());
}

}  // namespace nf
