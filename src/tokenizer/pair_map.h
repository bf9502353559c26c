#pragma once
// A hash map from a pair of token ids to a value, private to the tokenizer. The pair is packed
// into one 64-bit key (left << 32 | right); open addressing with linear probing in a
// power-of-two table kept at most half full, so a lookup is usually one cache line.
#include <cstdint>
#include <utility>
#include <vector>

namespace nf::tokenizer::detail {

inline uint64_t pair_key(uint32_t left, uint32_t right) { return (static_cast<uint64_t>(left) << 32) | right; }

template <class V>
class PairMap {
 public:
  explicit PairMap(size_t expected = 16) { rehash(capacity_for(expected)); }

  size_t size() const { return size_; }

  const V* find(uint64_t key) const {
    for (size_t i = slot(key);; i = (i + 1) & mask_) {
      if (!used_[i]) return nullptr;
      if (keys_[i] == key) return &values_[i];
    }
  }
  V* find(uint64_t key) { return const_cast<V*>(std::as_const(*this).find(key)); }

  // The value for key, default-constructed and inserted when missing.
  V& operator[](uint64_t key) {
    if (2 * (size_ + 1) > keys_.size()) rehash(keys_.size() * 2);
    size_t i = slot(key);
    for (; used_[i]; i = (i + 1) & mask_)
      if (keys_[i] == key) return values_[i];
    used_[i] = 1;
    keys_[i] = key;
    values_[i] = V{};
    ++size_;
    return values_[i];
  }

  // Calls f(key, value) for every entry, in table order.
  template <class F>
  void for_each(F&& f) const {
    for (size_t i = 0; i < keys_.size(); ++i)
      if (used_[i]) f(keys_[i], values_[i]);
  }

 private:
  static size_t capacity_for(size_t n) {
    size_t c = 16;
    while (c < 2 * n) c *= 2;
    return c;
  }
  size_t slot(uint64_t key) const {
    // Fibonacci hashing: the high bits of key * 2^64/phi are well mixed.
    return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> shift_);
  }
  void rehash(size_t capacity) {
    std::vector<uint64_t> keys(capacity);
    std::vector<V> values(capacity);
    std::vector<uint8_t> used(capacity, 0);
    keys.swap(keys_);
    values.swap(values_);
    used.swap(used_);
    mask_ = capacity - 1;
    shift_ = 64;
    for (size_t c = capacity; c > 1; c >>= 1) --shift_;
    size_ = 0;
    for (size_t i = 0; i < keys.size(); ++i)
      if (used[i]) (*this)[keys[i]] = std::move(values[i]);
  }

  std::vector<uint64_t> keys_;
  std::vector<V> values_;
  std::vector<uint8_t> used_;
  size_t mask_ = 0;
  int shift_ = 64;
  size_t size_ = 0;
};

}  // namespace nf::tokenizer::detail
