// The server's prefix cache of KV blocks (serve/prefix_cache.h).
#include "nanoformer/serve/prefix_cache.h"

#include <algorithm>
#include <cctype>
#include <limits>
#include <string>

#include "nanoformer/core/error.h"
#include "nanoformer/io/tensor_checksums.h"

namespace nf::serve {
namespace {

constexpr uint64_t kRoot = 0x6e616e6f666f726dULL;  // the parent hash of a sequence's first block

}  // namespace

PrefixCache::PrefixCache(int64_t block_len, int64_t budget_bytes) : block_len_(block_len), budget_(budget_bytes) {
  NF_CHECK(block_len > 0 && budget_bytes >= 0, "PrefixCache: block_len ", block_len, " must be positive and the budget ",
           budget_bytes, " >= 0");
}

uint64_t PrefixCache::hash(uint64_t parent, std::span<const int64_t> tokens) const {
  return io::bytes_checksum(tokens.data(), tokens.size_bytes(), parent);
}

std::vector<nn::KVBlockRef> PrefixCache::find(std::span<const int64_t> tokens, int64_t limit) {
  std::vector<nn::KVBlockRef> found;
  const uint64_t now = ++tick_;
  uint64_t parent = kRoot;
  const auto n = std::min<int64_t>(limit, static_cast<int64_t>(tokens.size())) / block_len_;
  for (int64_t i = 0; i < n; ++i) {
    const std::span<const int64_t> block = tokens.subspan(static_cast<size_t>(i * block_len_), static_cast<size_t>(block_len_));
    const uint64_t h = hash(parent, block);
    const auto it = entries_.find(h);
    if (it == entries_.end() || it->second.parent != parent || it->second.depth != i ||
        !std::equal(block.begin(), block.end(), it->second.tokens.begin(), it->second.tokens.end()))
      break;
    it->second.used = now;
    found.push_back(it->second.block);
    parent = h;
  }
  return found;
}

void PrefixCache::insert(std::span<const int64_t> tokens, const std::vector<nn::KVBlockRef>& blocks) {
  NF_CHECK(static_cast<int64_t>(tokens.size()) >= static_cast<int64_t>(blocks.size()) * block_len_, "PrefixCache: ",
           blocks.size(), " blocks of ", block_len_, " for ", tokens.size(), " tokens");
  const uint64_t now = ++tick_;
  uint64_t parent = kRoot;
  for (size_t i = 0; i < blocks.size(); ++i) {
    const std::span<const int64_t> block = tokens.subspan(i * static_cast<size_t>(block_len_), static_cast<size_t>(block_len_));
    const uint64_t h = hash(parent, block);
    const auto [it, added] = entries_.try_emplace(h);
    Entry& e = it->second;
    if (added) {
      e = {.block = blocks[i], .parent = parent, .tokens = {block.begin(), block.end()}, .depth = static_cast<int64_t>(i), .used = now};
      bytes_ += blocks[i]->bytes();
    } else if (e.parent == parent && e.depth == static_cast<int64_t>(i) && std::equal(block.begin(), block.end(), e.tokens.begin(), e.tokens.end())) {
      e.used = now;  // the same tokens cached already: that block stays
    } else {
      break;  // another prefix's block under the same hash (a collision): this one and those after it are not cached
    }
    parent = h;
  }
  evict();
}

void PrefixCache::evict() {
  if (bytes_ <= budget_) return;
  std::vector<std::unordered_map<uint64_t, Entry>::iterator> unused;
  for (auto it = entries_.begin(); it != entries_.end(); ++it)
    if (it->second.block.use_count() == 1) unused.push_back(it);  // held by this cache alone
  std::sort(unused.begin(), unused.end(), [](const auto& a, const auto& b) {
    return a->second.used != b->second.used ? a->second.used < b->second.used : a->second.depth > b->second.depth;
  });
  for (const auto& it : unused) {
    if (bytes_ <= budget_) break;
    bytes_ -= it->second.block->bytes();
    ++evicted_;
    entries_.erase(it);
  }
}

int64_t parse_byte_count(const std::string& text, const char* flag) {
  size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  std::string unit = text.substr(digits);
  for (char& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  int shift = -1;
  for (const auto& [name, bits] : {std::pair{"", 0}, {"B", 0}, {"K", 10}, {"KB", 10}, {"KIB", 10}, {"M", 20}, {"MB", 20},
                                   {"MIB", 20}, {"G", 30}, {"GB", 30}, {"GIB", 30}, {"T", 40}, {"TB", 40}, {"TIB", 40}})
    if (unit == name) shift = bits;
  NF_CHECK(digits > 0 && digits <= 15 && shift >= 0, flag, ": '", text,
           "' is not a byte count (digits with an optional K, M, G or T: 512M, 2G)");
  const int64_t n = std::stoll(text.substr(0, digits));
  NF_CHECK(n <= (std::numeric_limits<int64_t>::max() >> shift), flag, ": '", text, "' is too large");
  return n << shift;
}

}  // namespace nf::serve
