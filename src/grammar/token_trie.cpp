// The vocabulary's byte strings as a flat trie (grammar/token_trie.h).
#include "nanoformer/grammar/token_trie.h"

#include <algorithm>
#include <utility>

#include "nanoformer/core/error.h"
#include "nanoformer/tokenizer/bpe_tokenizer.h"

namespace nf::grammar {

TokenTrie::TokenTrie(std::vector<std::string> bytes) : token_bytes_(std::move(bytes)) {
  const std::vector<std::string>& token_bytes = token_bytes_;
  std::vector<uint32_t> ids;
  for (size_t i = 0; i < token_bytes.size(); ++i)
    if (!token_bytes[i].empty()) ids.push_back(static_cast<uint32_t>(i));
  std::stable_sort(ids.begin(), ids.end(), [&](uint32_t a, uint32_t b) { return token_bytes[a] < token_bytes[b]; });
  token_ids_ = ids;  // sorted by bytes: a node's tokens and its subtree's are one contiguous run
  // each work item: a node, the run [lo, hi) of sorted tokens under it, its depth
  struct Item {
    uint32_t node, lo, hi, depth;
  };
  nodes_.push_back({0, 0, 0, 0});
  std::vector<Item> work{{0, 0, static_cast<uint32_t>(ids.size()), 0}};
  while (!work.empty()) {
    const Item it = work.back();
    work.pop_back();
    max_depth_ = std::max<size_t>(max_depth_, it.depth);
    uint32_t i = it.lo;
    while (i < it.hi && token_bytes[ids[i]].size() == it.depth) ++i;  // the tokens ending here sort first
    nodes_[it.node].tokens_begin = it.lo;
    nodes_[it.node].tokens_end = i;
    nodes_[it.node].children_begin = static_cast<uint32_t>(child_bytes_.size());
    while (i < it.hi) {
      const char b = token_bytes[ids[i]][it.depth];
      uint32_t j = i;
      while (j < it.hi && token_bytes[ids[j]][it.depth] == b) ++j;
      child_bytes_.push_back(static_cast<uint8_t>(b));
      child_nodes_.push_back(static_cast<uint32_t>(nodes_.size()));
      work.push_back({static_cast<uint32_t>(nodes_.size()), i, j, it.depth + 1});
      nodes_.push_back({0, 0, 0, 0});
      i = j;
    }
    nodes_[it.node].children_end = static_cast<uint32_t>(child_bytes_.size());
  }
}

std::shared_ptr<const TokenTrie> TokenTrie::of(const tokenizer::Tokenizer& tokenizer) {
  const auto* bpe = dynamic_cast<const tokenizer::BpeTokenizer*>(&tokenizer);
  std::vector<std::string> bytes(tokenizer.vocab_size());
  for (size_t id = 0; id < bytes.size(); ++id) {
    const auto t = static_cast<tokenizer::TokenId>(id);
    if (bpe && bpe->is_special(t)) continue;  // no bytes: never allowed
    try {
      bytes[id] = std::string(tokenizer.token_bytes(t));
    } catch (const Error&) {  // an unused id
    }
  }
  return std::make_shared<const TokenTrie>(std::move(bytes));
}

}  // namespace nf::grammar
