// KVCache: preallocated per-layer keys and values, the step a cached forward takes, rollback, and
// the left-padded rows of a ragged batch.
#include "nanoformer/nn/kv_cache.h"

#include <algorithm>

#include "nanoformer/core/error.h"
#include "nanoformer/ops/factory.h"
#include "nanoformer/ops/indexing.h"
#include "nanoformer/ops/join.h"
#include "nanoformer/ops/view.h"

namespace nf::nn {

KVCache::KVCache(const KVCacheShape& s) : shape_(s) {
  NF_CHECK(s.n_layers > 0 && s.max_batch > 0 && s.n_kv_heads > 0 && s.head_dim > 0 && s.max_len > 0,
           "KVCache: n_layers ", s.n_layers, ", max_batch ", s.max_batch, ", n_kv_heads ", s.n_kv_heads, ", head_dim ",
           s.head_dim, " and max_len ", s.max_len, " must all be positive");
  const Shape storage{s.max_batch, s.n_kv_heads, s.max_len, s.head_dim};
  for (int64_t i = 0; i < s.n_layers; ++i) layers_.push_back({zeros(storage, s.dtype), zeros(storage, s.dtype)});
}

KVCache::KVCache(const KVCacheShape& shape, std::vector<LayerKV> layers) : shape_(shape), layers_(std::move(layers)) {}

const LayerKV& KVCache::layer(int64_t i) const {
  NF_CHECK(i >= 0 && i < shape_.n_layers, "KVCache: layer ", i, " outside the cache's ", shape_.n_layers, " layers");
  return layers_[static_cast<size_t>(i)];
}

int64_t KVCache::bytes() const {
  return 2 * shape_.n_layers * shape_.max_batch * shape_.n_kv_heads * shape_.max_len * shape_.head_dim *
         static_cast<int64_t>(dtype_size(shape_.dtype));
}

KVCacheStep KVCache::begin(int64_t batch, int64_t new_tokens) const {
  NF_CHECK(batch > 0 && new_tokens > 0, "KVCache: a forward needs at least one row and one token, got batch ", batch,
           " and ", new_tokens, " tokens");
  NF_CHECK(batch <= shape_.max_batch, "KVCache: batch ", batch, " exceeds the cache's maximum batch ", shape_.max_batch);
  NF_CHECK(length_ == 0 || batch == batch_, "KVCache: batch ", batch, " differs from the ", batch_,
           " rows already cached (reset the cache to change it)");
  NF_CHECK(length_ + new_tokens <= shape_.max_len, "KVCache: ", new_tokens, " new tokens after ", length_,
           " cached exceed the cache's maximum context ", shape_.max_len);
  KVCacheStep step{.batch = batch, .new_tokens = new_tokens, .column = length_, .positions = {}, .key_padding = {}};
  const bool ragged = std::any_of(starts_.begin(), starts_.end(), [](int64_t s) { return s > 0; });
  for (int64_t r = 0; r < batch; ++r) step.positions.push_back(length_ - (ragged ? starts_[r] : 0));
  if (ragged) {  // true at columns >= start[r]: row r's own tokens
    const int64_t columns = length_ + new_tokens;
    step.key_padding = Tensor::empty({batch, columns}, DType::boolean);
    bool* keep = step.key_padding.data<bool>();
    for (int64_t r = 0; r < batch; ++r)
      for (int64_t t = 0; t < columns; ++t) keep[r * columns + t] = t >= starts_[r];
  }
  return step;
}

void KVCache::commit(const KVCacheStep& step) {
  NF_CHECK(step.column == length_ && (length_ == 0 || step.batch == batch_), "KVCache: commit of a step begun at column ",
           step.column, " for batch ", step.batch, ", but the cache holds ", length_, " columns of ", batch_, " rows");
  if (length_ == 0 && starts_.empty()) starts_.assign(static_cast<size_t>(step.batch), 0);
  batch_ = step.batch;
  length_ += step.new_tokens;
}

void KVCache::truncate(int64_t n) {
  NF_CHECK(n >= 0 && n <= length_, "KVCache: cannot truncate to ", n, " tokens: the cache holds ", length_);
  if (n == 0) return reset();
  const int64_t last_start = starts_.empty() ? 0 : *std::max_element(starts_.begin(), starts_.end());
  NF_CHECK(n >= last_start, "KVCache: cannot truncate to ", n, " columns: a padded row starts at column ", last_start,
           " (reset instead)");
  length_ = n;  // the later columns are overwritten by the next forward
}

void KVCache::reset() {
  length_ = 0;
  batch_ = 0;
  starts_.clear();
}

void KVCache::select_rows(const std::vector<int64_t>& rows) {
  const auto count = static_cast<int64_t>(rows.size());
  NF_CHECK(count > 0 && count <= shape_.max_batch, "KVCache: ", count, " rows selected for a cache of maximum batch ",
           shape_.max_batch);
  for (const int64_t r : rows)
    NF_CHECK(r >= 0 && r < batch_, "KVCache: row ", r, " selected, but the cache holds ", batch_, " rows");
  const Tensor index = Tensor::from_vector(rows, {count});
  for (const LayerKV& l : layers_)
    for (const Tensor& storage : {l.keys, l.values}) {
      const Tensor filled = narrow(narrow(storage, 0, 0, batch_), 2, 0, length_);
      copy_into(narrow(narrow(storage, 0, 0, count), 2, 0, length_), index_select(filled, 0, index));  // a copy first: rows may repeat
    }
  std::vector<int64_t> starts;
  for (const int64_t r : rows) starts.push_back(starts_[static_cast<size_t>(r)]);
  starts_ = std::move(starts);
  batch_ = count;
}

KVCache KVCache::row_view(int64_t row, int64_t first_column) const {
  NF_CHECK(row >= 0 && row < shape_.max_batch, "KVCache: row ", row, " outside the cache's maximum batch ",
           shape_.max_batch);
  NF_CHECK(first_column >= 0 && first_column < shape_.max_len, "KVCache: column ", first_column,
           " outside the cache's maximum context ", shape_.max_len);
  KVCacheShape s = shape_;
  s.max_batch = 1;
  s.max_len = shape_.max_len - first_column;
  const auto part = [&](const Tensor& t) { return narrow(narrow(t, 0, row, 1), 2, first_column, s.max_len); };
  std::vector<LayerKV> views;
  for (const LayerKV& l : layers_) views.push_back({part(l.keys), part(l.values)});
  return KVCache(s, std::move(views));
}

void KVCache::set_row_starts(int64_t length, const std::vector<int64_t>& starts) {
  const auto rows = static_cast<int64_t>(starts.size());
  NF_CHECK(rows > 0 && rows <= shape_.max_batch, "KVCache: ", rows, " row starts for a cache of maximum batch ",
           shape_.max_batch);
  NF_CHECK(length > 0 && length <= shape_.max_len, "KVCache: length ", length, " outside the cache's maximum context ",
           shape_.max_len);
  for (int64_t r = 0; r < rows; ++r)
    NF_CHECK(starts[r] >= 0 && starts[r] < length, "KVCache: row ", r, " starts at column ", starts[r],
             ", outside its ", length, " columns");
  length_ = length;
  batch_ = rows;
  starts_ = starts;
}

Tensor at_row_positions(const std::vector<int64_t>& positions,
                        const std::function<Tensor(int64_t first_row, int64_t rows, int64_t position)>& f) {
  const auto rows = static_cast<int64_t>(positions.size());
  if (std::all_of(positions.begin(), positions.end(), [&](int64_t p) { return p == positions[0]; }))
    return f(0, rows, rows > 0 ? positions[0] : 0);
  std::vector<Tensor> parts;
  for (int64_t r = 0; r < rows; ++r) parts.push_back(f(r, 1, positions[r]));
  return parts[0].defined() ? cat(parts, 0) : Tensor();
}

}  // namespace nf::nn
