#pragma once
// The server's prefix cache: KV blocks (nn/kv_block.h) of prompts and answers already computed,
// found again by the tokens they hold, so that a request starting with a cached prefix (a system
// prompt, a tool list, a conversation's earlier turns) maps those blocks instead of prefilling them.
// As vLLM's automatic prefix caching (vllm-project/vllm, vllm/core/block/prefix_caching_block.py at
// 3322f8c4052e2ccfd2df32984cd062d21adefaa4): block i of a sequence is indexed by the hash of (block i - 1's hash, its block_len
// tokens), so one lookup per block walks a prompt's longest cached prefix; each entry keeps its
// tokens and its parent's hash too, and a lookup compares them, so a hash collision is a miss, never
// a wrong block. A block that a sequence holds is in use; the others stay cached and, when the
// cached blocks pass the budget (bytes), the least recently used unused ones are dropped, the deepest
// first among equals (a prefix's last blocks before its first). A block in use is never dropped, and
// never written (nn/kv_cache.h copies a shared block before writing into it).
#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "nanoformer/nn/kv_block.h"

namespace nf::serve {

class PrefixCache {
 public:
  PrefixCache(int64_t block_len, int64_t budget_bytes);

  int64_t block_len() const { return block_len_; }
  int64_t budget() const { return budget_; }
  // The cached blocks that hold tokens[0 .. n block_len), n block_len <= limit, n the most there are;
  // they count as used now.
  std::vector<nn::KVBlockRef> find(std::span<const int64_t> tokens, int64_t limit);
  // Caches blocks[i] as holding tokens[i block_len .. (i + 1) block_len) after the tokens before it
  // (tokens at least blocks.size() x block_len long; blocks already cached for those tokens are kept
  // and count as used now), then drops unused blocks down to the budget.
  void insert(std::span<const int64_t> tokens, const std::vector<nn::KVBlockRef>& blocks);

  int64_t blocks() const { return static_cast<int64_t>(entries_.size()); }
  int64_t bytes() const { return bytes_; }  // of the blocks cached (those in use too)
  int64_t evicted() const { return evicted_; }  // blocks dropped so far
  // Calls fn(block) for every cached block.
  template <class Fn>
  void each_block(Fn fn) const {
    for (const auto& [hash, entry] : entries_) fn(entry.block);
  }

 private:
  struct Entry {
    nn::KVBlockRef block;
    uint64_t parent = 0;
    std::vector<int64_t> tokens;
    int64_t depth = 0;      // the block's index in its sequences
    uint64_t used = 0;      // when last found or inserted (a tick)
  };
  uint64_t hash(uint64_t parent, std::span<const int64_t> tokens) const;
  void evict();

  int64_t block_len_, budget_;
  std::unordered_map<uint64_t, Entry> entries_;
  int64_t bytes_ = 0, evicted_ = 0;
  uint64_t tick_ = 0;
};

// A byte count as --cache-budget takes it: digits with an optional K, M, G or T (powers of 1024,
// an optional B or iB after them: 512M, 2G, 1GiB); an nf::Error naming the flag and the value otherwise.
int64_t parse_byte_count(const std::string& text, const char* flag);

}  // namespace nf::serve
