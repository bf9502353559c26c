// KVCache: per-layer keys and values in the cache type, grown as positions are filled (so a model
// that claims a million positions costs what its sequences use), ring-buffered sliding-window
// layers, the step a cached forward takes, rollback, and the context shift.
#include "nanoformer/nn/kv_cache.h"

#include <algorithm>
#include <iterator>
#include <unordered_set>

#include "nanoformer/core/error.h"
#include "nanoformer/ops/indexing.h"

namespace nf::nn {
namespace {

constexpr int64_t kFirstColumns = 256;  // a layer's storage at first; doubled as it fills

constexpr QuantType kCacheTypes[] = {QuantType::f32, QuantType::f16, QuantType::bf16, QuantType::q8_0, QuantType::q4_0};
constexpr const char* kCacheTypeNames = "f32, f16, bf16, q8_0 or q4_0";

}  // namespace

QuantType kv_cache_type_from_name(std::string_view name) {
  for (const QuantType type : kCacheTypes)
    if (name == quant_type_name(type)) return type;
  NF_FAIL("--cache-type: '", name, "' is not a KV cache type (", kCacheTypeNames, ")");
}

KVCache::KVCache(const KVCacheShape& s)
    : shape_(s), storage_type_(s.cache_type == QuantType::f32 ? float_type_of(s.dtype) : s.cache_type) {
  NF_CHECK(s.n_layers > 0 && s.max_batch > 0 && s.n_kv_heads > 0 && s.head_dim > 0 && s.max_len > 0,
           "KVCache: n_layers ", s.n_layers, ", max_batch ", s.max_batch, ", n_kv_heads ", s.n_kv_heads, ", head_dim ",
           s.head_dim, " and max_len ", s.max_len, " must all be positive");
  NF_CHECK(s.windows.empty() || static_cast<int64_t>(s.windows.size()) == s.n_layers, "KVCache: ", s.windows.size(),
           " windows for ", s.n_layers, " layers");
  NF_CHECK(std::find(std::begin(kCacheTypes), std::end(kCacheTypes), s.cache_type) != std::end(kCacheTypes),
           "KVCache: cache type ", quant_type_name(s.cache_type), " is not one of ", kCacheTypeNames);
  const int64_t block = quant_type_info(s.cache_type).block_size;
  NF_CHECK(s.head_dim % block == 0, "--cache-type ", quant_type_name(s.cache_type), " stores keys and values in blocks of ",
           block, "; the model's head_dim ", s.head_dim, " is not a multiple of ", block, " (f32, f16 and bf16 take any)");
  NF_CHECK(s.block_len >= 0, "KVCache: block_len ", s.block_len, " must be >= 0 (0: contiguous layers)");
  for (int64_t i = 0; i < s.n_layers; ++i) {
    const int64_t window = s.windows.empty() ? 0 : s.windows[static_cast<size_t>(i)];
    NF_CHECK(window >= 0, "KVCache: layer ", i, " has window ", window, "; it must be >= 0 (0 = full attention)");
    Layer layer;  // a ring of 2 W columns when that is less than the context: W - 1 kept + up to W + 1 new per step
    layer.window = window;
    layer.capacity = window > 0 && 2 * window < s.max_len ? 2 * window : s.max_len;
    if (paged() && layer.capacity == s.max_len) {
      layer.slot = paged_layers_++;  // in blocks; a ring stays contiguous
    } else {
      grow(layer, std::min(layer.capacity, kFirstColumns));
    }
    layers_.push_back(layer);
  }
  if (paged()) blocks_.resize(static_cast<size_t>(s.max_batch));
}

KVBlockRef KVCache::new_block() const {
  return std::make_shared<KVBlock>(storage_type_, paged_layers_, shape_.n_kv_heads, shape_.block_len, shape_.head_dim);
}

bool KVCache::make_private(int64_t b, int64_t from) {
  std::vector<KVBlockRef>& row = blocks_[static_cast<size_t>(b)];
  bool copied = false;
  for (size_t i = static_cast<size_t>(std::max<int64_t>(from, 0)); i < row.size(); ++i)
    if (row[i].use_count() > 1) row[i] = row[i]->clone(), copied = true;
  return copied;
}

bool KVCache::cover(int64_t b, int64_t positions) {
  std::vector<KVBlockRef>& row = blocks_[static_cast<size_t>(b)];
  const auto n = static_cast<size_t>((positions + shape_.block_len - 1) / shape_.block_len);
  const size_t before = row.size();
  if (row.size() > n) row.resize(n);
  while (row.size() < n) row.push_back(new_block());
  return row.size() != before;
}

void KVCache::refresh(int64_t rows) {
  table_rows_ = rows;
  for (Layer& l : layers_) {
    if (l.slot < 0) continue;
    l.kv = {};
    if (rows == 0 || blocks_[0].empty()) continue;
    std::vector<std::vector<KVPage>> keys(static_cast<size_t>(rows)), values(static_cast<size_t>(rows));
    for (int64_t b = 0; b < rows; ++b)
      for (const KVBlockRef& block : blocks_[static_cast<size_t>(b)]) {
        keys[static_cast<size_t>(b)].push_back(block->page(l.slot, false));
        values[static_cast<size_t>(b)].push_back(block->page(l.slot, true));
      }
    l.kv = {KVStorage(shape_.n_kv_heads, shape_.block_len, keys), KVStorage(shape_.n_kv_heads, shape_.block_len, values)};
  }
}

bool KVCache::shares_prefixes() const { return paged() && paged_layers_ == shape_.n_layers; }

const std::vector<KVBlockRef>& KVCache::blocks(int64_t row) const {
  NF_CHECK(paged() && row >= 0 && row < shape_.max_batch, "KVCache: blocks of row ", row, " of a ",
           paged() ? "paged" : "contiguous", " cache of ", shape_.max_batch, " rows");
  return blocks_[static_cast<size_t>(row)];
}

int64_t KVCache::contiguous_bytes() const {
  int64_t n = 0;
  for (const Layer& l : layers_)
    if (l.slot < 0) n += l.kv.keys.bytes() + l.kv.values.bytes();
  return n;
}

std::vector<KVBlockRef> KVCache::full_blocks() const {
  NF_CHECK(shares_prefixes(), "KVCache: full_blocks needs a paged cache without ring-buffered layers");
  // what a model carries belongs to the last position, which a sharer of these blocks lacks
  if (batch_ == 0 || carried_.defined()) return {};
  NF_CHECK(batch_ == 1, "KVCache: full_blocks of a cache of ", batch_, " rows (one sequence's only)");
  const std::vector<KVBlockRef>& row = blocks_[0];
  return {row.begin(), row.begin() + position_ / shape_.block_len};
}

void KVCache::adopt(const std::vector<KVBlockRef>& blocks) {
  NF_CHECK(shares_prefixes(), "KVCache: adopt needs a paged cache without ring-buffered layers");
  const auto positions = static_cast<int64_t>(blocks.size()) * shape_.block_len;
  NF_CHECK(positions <= shape_.max_len, "KVCache: ", blocks.size(), " blocks of ", shape_.block_len,
           " positions exceed the cache's maximum context ", shape_.max_len);
  for (const KVBlockRef& block : blocks)
    NF_CHECK(block && block->layers() == paged_layers_ && block->heads() == shape_.n_kv_heads &&
                 block->block_len() == shape_.block_len && block->rows().type() == storage_type_ &&
                 block->rows().cols() == shape_.head_dim,
             "KVCache: adopt of a block of another cache's layout");
  reset();
  blocks_[0] = blocks;
  for (Layer& l : layers_) l.length = positions;
  position_ = positions;
  batch_ = positions > 0 ? 1 : 0;
}

void KVCache::grow(Layer& l, int64_t needed) const {
  if (needed <= l.columns) return;
  const int64_t columns = std::min(l.capacity, std::max(needed, 2 * l.columns));
  const KVCacheShape& s = shape_;
  const int64_t rows = l.length > 0 ? batch_ : 0;  // filled columns are kept for the rows in use
  LayerKV grown{KVStorage(storage_type_, s.max_batch, s.n_kv_heads, columns, s.head_dim),
                KVStorage(storage_type_, s.max_batch, s.n_kv_heads, columns, s.head_dim)};
  if (rows > 0) {
    grown.keys.copy_columns_from(l.kv.keys, rows, l.length);
    grown.values.copy_columns_from(l.kv.values, rows, l.length);
  }
  l.kv = std::move(grown);
  l.columns = columns;
}

const LayerKV& KVCache::layer(int64_t i) const {
  NF_CHECK(i >= 0 && i < shape_.n_layers, "KVCache: layer ", i, " outside the cache's ", shape_.n_layers, " layers");
  return layers_[static_cast<size_t>(i)].kv;
}

int64_t KVCache::bytes() const {
  int64_t n = contiguous_bytes();
  std::unordered_set<const KVBlock*> seen;  // a block shared by rows counts once
  for (const std::vector<KVBlockRef>& row : blocks_)
    for (const KVBlockRef& block : row)
      if (seen.insert(block.get()).second) n += block->bytes();
  return n;
}

int64_t KVCache::max_step() const {
  int64_t most = shape_.max_len;
  for (const Layer& l : layers_)
    if (l.capacity < shape_.max_len) most = std::min(most, l.capacity - (l.window - 1));
  return most;
}

void KVCache::check_room(int64_t batch, int64_t new_tokens) const {
  NF_CHECK(batch > 0 && new_tokens > 0, "KVCache: a forward needs at least one row and one token, got batch ", batch,
           " and ", new_tokens, " tokens");
  NF_CHECK(batch <= shape_.max_batch, "KVCache: batch ", batch, " exceeds the cache's maximum batch ", shape_.max_batch);
  NF_CHECK(position_ == 0 || batch == batch_, "KVCache: batch ", batch, " differs from the ", batch_,
           " rows already cached (reset the cache to change it)");
  NF_CHECK(position_ + new_tokens <= shape_.max_len, "KVCache: ", new_tokens, " new tokens after ", position_,
           " cached exceed the cache's maximum context ", shape_.max_len);
}

KVCacheStep KVCache::begin(int64_t batch, int64_t new_tokens) {
  check_room(batch, new_tokens);
  NF_CHECK(new_tokens <= max_step(), "KVCache: ", new_tokens, " new tokens exceed the ", max_step(),
           " a step of this cache's sliding-window layers takes (feed them in chunks)");
  KVCacheStep step{.batch = batch, .new_tokens = new_tokens, .position = position_, .columns = {}};
  for (Layer& l : layers_) {
    if (l.slot >= 0) {  // paged: its blocks below
      step.columns.push_back(l.length);
      continue;
    }
    if (l.length + new_tokens > l.capacity) {  // a ring layer: keep the W - 1 keys the window still reaches
      const int64_t kept = std::min(l.length, l.window - 1);
      for (const KVStorage& storage : {l.kv.keys, l.kv.values}) storage.move_columns(batch, l.length - kept, 0, kept);
      l.length = kept;
    }
    grow(l, l.length + new_tokens);
    step.columns.push_back(l.length);
  }
  if (paged()) {
    bool changed = table_rows_ != batch;
    for (int64_t b = 0; b < batch; ++b) {
      changed = cover(b, position_ + new_tokens) || changed;
      changed = make_private(b, position_ / shape_.block_len) || changed;  // the blocks it writes into: its own
    }
    if (changed) refresh(batch);  // else the tables of the last forward hold these blocks still
  }
  return step;
}

CachedAttention KVCache::at(int64_t i, const KVCacheStep& step) const {
  return {layer(i), step.columns.at(static_cast<size_t>(i)), &step};
}

void KVCache::commit(const KVCacheStep& step) {
  NF_CHECK(step.position == position_ && (position_ == 0 || step.batch == batch_) &&
               step.columns.size() == layers_.size(),
           "KVCache: commit of a step begun at position ", step.position, " for batch ", step.batch,
           ", but the cache holds ", position_, " positions of ", batch_, " rows");
  for (size_t i = 0; i < layers_.size(); ++i) layers_[i].length = step.columns[i] + step.new_tokens;
  batch_ = step.batch;
  position_ += step.new_tokens;
}

bool KVCache::reaches(const Layer& l, int64_t first, int64_t position) {
  return l.window == 0 ? first == 0 : first <= std::max<int64_t>(0, position - (l.window - 1));
}

bool KVCache::can_truncate(int64_t n) const {
  if (n < 0 || n > position_) return false;
  if (carried_.defined() && n != 0 && n != position_) return false;  // what it carries belongs to the last position
  return std::all_of(layers_.begin(), layers_.end(), [&](const Layer& l) {
    return l.length >= position_ - n && reaches(l, position_ - l.length, n);
  });
}

void KVCache::truncate(int64_t n) {
  NF_CHECK(n >= 0 && n <= position_, "KVCache: cannot truncate to ", n, " tokens: the cache holds ", position_);
  if (n == 0) return reset();
  NF_CHECK(can_truncate(n), "KVCache: cannot truncate to ", n, " tokens: a sliding-window layer no longer holds the keys ",
           "its window reaches there (reset instead)");
  for (Layer& l : layers_) l.length -= position_ - n;  // the later columns are overwritten by the next forward
  if (paged()) {  // the blocks past position n go (those shared stay as they are for their other holders)
    for (int64_t b = 0; b < batch_; ++b) cover(b, n);
    refresh(0);
  }
  position_ = n;
}

void KVCache::reset() {
  for (std::vector<KVBlockRef>& row : blocks_) row.clear();
  if (paged()) refresh(0);
  for (Layer& l : layers_) l.length = 0;
  position_ = 0;
  batch_ = 0;
  carried_ = Tensor();
}

bool KVCache::shift(int64_t keep, int64_t discard, const Reposition& reposition) {
  NF_CHECK(keep >= 0 && discard > 0 && keep + discard <= position_, "KVCache: cannot drop positions ", keep, " .. ",
           keep + discard - 1, " of the ", position_, " cached");
  const int64_t after = position_ - discard;
  for (const Layer& l : layers_) {  // where each layer's first column lands
    const int64_t first = position_ - l.length;
    const int64_t moved = first < keep ? first : std::max(keep, first - discard);
    if (!reaches(l, moved, after)) return false;
  }
  if (paged()) {  // the blocks whose keys move: its own
    for (int64_t b = 0; b < batch_; ++b) make_private(b, keep / shape_.block_len);
    refresh(batch_);
  }
  for (Layer& l : layers_) {
    const int64_t first = position_ - l.length;
    // columns of positions [keep, keep + discard) go; those after move down over them, re-positioned
    const int64_t gap_begin = std::clamp<int64_t>(keep - first, 0, l.length);
    const int64_t gap_end = std::clamp<int64_t>(keep + discard - first, 0, l.length);
    const int64_t tail = l.length - gap_end;
    // the tail's keys re-positioned from columns `from` to columns `to` (read as the model's dtype,
    // re-positioned, written back in the rows' type; moved as they are when the scheme returns them
    // unchanged), its values moved as they are
    const auto move = [&](int64_t from, int64_t to) {
      const Tensor keys = l.kv.keys.read(batch_, from, tail, shape_.dtype);
      if (const Tensor moved = reposition(keys, -discard); moved.shares_storage_with(keys)) {
        l.kv.keys.move_columns(batch_, from, to, tail);
      } else {
        l.kv.keys.write(to, moved);
      }
      l.kv.values.move_columns(batch_, from, to, tail);
    };
    if (gap_end > gap_begin && tail > 0) {
      move(gap_end, gap_begin);
    } else if (gap_end == gap_begin && tail > 0 && first >= keep + discard) {  // the whole layer lies after the gap
      move(0, 0);
    }
    l.length -= gap_end - gap_begin;
  }
  if (paged()) {
    for (int64_t b = 0; b < batch_; ++b) cover(b, after);
    refresh(0);
  }
  position_ = after;
  return true;
}

void KVCache::select_rows(const std::vector<int64_t>& rows) {
  const auto count = static_cast<int64_t>(rows.size());
  NF_CHECK(count > 0 && count <= shape_.max_batch, "KVCache: ", count, " rows selected for a cache of maximum batch ",
           shape_.max_batch);
  for (const int64_t r : rows)
    NF_CHECK(r >= 0 && r < batch_, "KVCache: row ", r, " selected, but the cache holds ", batch_, " rows");
  for (const Layer& l : layers_)
    if (l.slot < 0)
      for (const KVStorage& storage : {l.kv.keys, l.kv.values}) storage.select_rows(rows, l.length);
  if (paged()) {  // row r shares row rows[r]'s blocks
    std::vector<std::vector<KVBlockRef>> chosen(blocks_.size());
    for (int64_t r = 0; r < count; ++r) chosen[static_cast<size_t>(r)] = blocks_[static_cast<size_t>(rows[static_cast<size_t>(r)])];
    blocks_ = std::move(chosen);
    refresh(0);
  }
  if (carried_.defined()) carried_ = index_select(carried_, 0, Tensor::from_vector(rows, {count}));
  batch_ = count;
}

void KVCache::copy_from(const KVCache& other) {
  if (&other == this) return;
  const KVCacheShape& a = shape_;
  const KVCacheShape& b = other.shape_;
  NF_CHECK(a.n_layers == b.n_layers && a.max_batch == b.max_batch && a.n_kv_heads == b.n_kv_heads &&
               a.head_dim == b.head_dim && a.max_len == b.max_len && a.dtype == b.dtype &&
               a.cache_type == b.cache_type && a.windows == b.windows && a.block_len == b.block_len,
           "KVCache: cannot copy a cache of another shape");
  for (size_t i = 0; i < layers_.size(); ++i) {
    Layer& to = layers_[i];
    const Layer& from = other.layers_[i];
    if (to.slot >= 0) {  // paged: its blocks shared below
      to.length = from.length;
      continue;
    }
    to.length = 0;  // nothing of its own is kept
    grow(to, from.length);
    to.kv.keys.copy_columns_from(from.kv.keys, other.batch_, from.length);
    to.kv.values.copy_columns_from(from.kv.values, other.batch_, from.length);
    to.length = from.length;
  }
  if (paged()) {
    blocks_ = other.blocks_;
    refresh(0);
  }
  position_ = other.position_;
  batch_ = other.batch_;
  carried_ = other.carried_.defined() ? other.carried_.clone() : Tensor();  // the last position's (smear)
}

}  // namespace nf::nn
