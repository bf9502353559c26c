// A sequence in its KV cache and the context shift (infer/cached_sequence.h).
#include "nanoformer/infer/cached_sequence.h"

#include <algorithm>

#include "nanoformer/core/error.h"

namespace nf::infer {

CachedSequence::CachedSequence(models::DecoderLM& model, int64_t max_len, ContextShift shift, QuantType cache_type,
                               int64_t block_len)
    : model_(model), cache_(model.make_cache(1, max_len, cache_type, block_len)), shift_(shift) {
  NF_CHECK(shift.keep >= 0, "--keep ", shift.keep, ": must be >= 0");
  // keeping the whole context leaves nothing to drop: generation would end at the context's end
  NF_CHECK(shift.keep < this->max_len(), "--keep ", shift.keep, " must be less than --context ", this->max_len(),
           max_len == 0 ? " (the model's max_seq_len)" : "", ": the context shift drops what --keep leaves");
}

void CachedSequence::copy_from(const CachedSequence& other) {
  cache_.copy_from(other.cache_);
  tokens_ = other.tokens_;
  exact_ = other.exact_;
}

std::vector<nn::KVBlockRef> CachedSequence::shareable_blocks() const {
  std::vector<nn::KVBlockRef> blocks = cache_.full_blocks();
  blocks.resize(std::min(blocks.size(), static_cast<size_t>(exact_ / cache_.shape().block_len)));
  return blocks;
}

void CachedSequence::adopt(const std::vector<int64_t>& tokens, const std::vector<nn::KVBlockRef>& blocks) {
  NF_CHECK(static_cast<int64_t>(tokens.size()) == static_cast<int64_t>(blocks.size()) * cache_.shape().block_len,
           "CachedSequence::adopt: ", tokens.size(), " tokens for ", blocks.size(), " blocks of ", cache_.shape().block_len);
  cache_.adopt(blocks);
  tokens_ = tokens;
  exact_ = static_cast<int64_t>(tokens.size());
}

void CachedSequence::reset() {
  cache_.reset();
  tokens_.clear();
  exact_ = 0;
}

int64_t CachedSequence::keep_common_prefix(const std::vector<int64_t>& sequence) {
  const auto common = static_cast<int64_t>(
      std::mismatch(tokens_.begin(), tokens_.end(), sequence.begin(), sequence.end()).first - tokens_.begin());
  int64_t keep = std::min(common, static_cast<int64_t>(sequence.size()) - 1);
  if (!cache_.can_truncate(keep)) keep = 0;  // a sliding-window ring no longer holds what that needs
  cache_.truncate(keep);
  tokens_.resize(static_cast<size_t>(keep));
  exact_ = std::min(exact_, keep);
  return keep;
}

bool CachedSequence::truncate(int64_t n) {
  NF_CHECK(n >= 0 && n <= static_cast<int64_t>(tokens_.size()), "CachedSequence::truncate: ", n, " tokens of ",
           tokens_.size());
  if (!cache_.can_truncate(n)) return false;
  cache_.truncate(n);
  tokens_.resize(static_cast<size_t>(n));
  exact_ = std::min(exact_, n);
  return true;
}

bool CachedSequence::make_room(int64_t n) {
  const auto length = static_cast<int64_t>(tokens_.size());
  const int64_t over = length + n - max_len();
  if (over <= 0) return true;
  // crop: just what must go; else the oldest half of what --keep leaves, at least what must go
  const int64_t discard = shift_.crop ? over : std::max(over, (length - shift_.keep) / 2);
  if (shift_.keep + discard > length) return false;
  std::vector<int64_t> kept(tokens_.begin(), tokens_.begin() + shift_.keep);
  kept.insert(kept.end(), tokens_.begin() + shift_.keep + discard, tokens_.end());
  if (shift_.crop || !model_.shift_context(cache_, shift_.keep, discard)) {
    cache_.reset();  // re-encode the kept tokens at their new positions
    if (!kept.empty()) model_.forward_cached(Tensor::from_vector(kept, {1, static_cast<int64_t>(kept.size())}), cache_, true);
    exact_ = static_cast<int64_t>(kept.size());
  } else {
    exact_ = std::min(exact_, shift_.keep);  // the moved keys were computed beside the dropped tokens
  }
  tokens_ = std::move(kept);
  return true;
}

Tensor CachedSequence::feed(const std::vector<int64_t>& ids, bool all_positions) {
  const auto T = static_cast<int64_t>(ids.size());
  const Tensor logits = model_.forward_cached(Tensor::from_vector(ids, {1, T}), cache_, /*last_only=*/!all_positions);
  if (exact_ == static_cast<int64_t>(tokens_.size())) exact_ += T;
  tokens_.insert(tokens_.end(), ids.begin(), ids.end());
  return logits;
}

Tensor CachedSequence::feed(std::span<CachedSequence* const> sequences, const std::vector<std::vector<int64_t>>& ids,
                            bool all_positions) {
  NF_CHECK(!sequences.empty() && ids.size() == sequences.size(), "CachedSequence::feed: ", ids.size(),
           " rows of ids for ", sequences.size(), " sequences");
  models::DecoderLM& model = sequences[0]->model_;
  const auto T = static_cast<int64_t>(ids[0].size());
  std::vector<int64_t> flat;
  std::vector<nn::KVCache*> caches;
  for (size_t i = 0; i < sequences.size(); ++i) {
    NF_CHECK(&sequences[i]->model_ == &model && static_cast<int64_t>(ids[i].size()) == T,
             "CachedSequence::feed: sequence ", i, " has another model or ", ids[i].size(), " ids, not ", T);
    flat.insert(flat.end(), ids[i].begin(), ids[i].end());
    caches.push_back(&sequences[i]->cache_);
  }
  const auto n = static_cast<int64_t>(sequences.size());
  const Tensor logits = model.forward_cached(Tensor::from_vector(flat, {n, T}), caches, /*last_only=*/!all_positions);
  for (size_t i = 0; i < sequences.size(); ++i) {
    CachedSequence& s = *sequences[i];
    if (s.exact_ == static_cast<int64_t>(s.tokens_.size())) s.exact_ += T;
    s.tokens_.insert(s.tokens_.end(), ids[i].begin(), ids[i].end());
  }
  return logits;
}

}  // namespace nf::infer
