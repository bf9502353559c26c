// Token masks from a grammar's state and the vocabulary trie (infer/grammar_constraint.h).
#include "nanoformer/infer/grammar_constraint.h"

#include <limits>

#include "nanoformer/core/error.h"

namespace nf::infer {
namespace {

constexpr size_t kMaxCachedMasks = 512;  // the cache is emptied when it holds this many

}  // namespace

GrammarConstraint::GrammarConstraint(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenTrie> trie,
                                     std::vector<int64_t> eos_ids)
    : matcher_(std::move(grammar)), trie_(std::move(trie)), eos_ids_(std::move(eos_ids)), buffers_(trie_->max_depth() + 1) {}

void GrammarConstraint::walk(uint32_t node, const GrammarMatcher::State& state, size_t depth, std::vector<uint64_t>& mask) {
  const TokenTrie::Node& n = trie_->nodes()[node];
  GrammarMatcher::State& next = buffers_[depth];
  for (uint32_t c = n.children_begin; c < n.children_end; ++c) {
    matcher_.advance(state, trie_->child_bytes()[c], next);
    if (next.empty()) continue;
    const uint32_t child = trie_->child_nodes()[c];
    const TokenTrie::Node& m = trie_->nodes()[child];
    for (uint32_t t = m.tokens_begin; t < m.tokens_end; ++t) {
      const uint32_t id = trie_->token_ids()[t];
      mask[id / 64] |= uint64_t{1} << (id % 64);
    }
    if (m.children_begin < m.children_end) walk(child, next, depth + 1, mask);
  }
}

const std::vector<uint64_t>& GrammarConstraint::allowed() {
  const GrammarMatcher::State& state = matcher_.state();
  if (const auto it = cache_.find(state); it != cache_.end()) return it->second;
  if (cache_.size() >= kMaxCachedMasks) cache_.clear();
  std::vector<uint64_t> mask((trie_->vocab_size() + 63) / 64, 0);
  walk(0, state, 0, mask);
  for (const int64_t id : eos_ids_) {
    if (id < 0 || id >= static_cast<int64_t>(trie_->vocab_size())) continue;
    const uint64_t bit = uint64_t{1} << (id % 64);
    if (GrammarMatcher::can_end(state)) mask[static_cast<size_t>(id) / 64] |= bit;
    else mask[static_cast<size_t>(id) / 64] &= ~bit;  // its bytes (if the trie has any) are not text here
  }
  return cache_.emplace(state, std::move(mask)).first->second;
}

void GrammarConstraint::apply(std::span<float> logits) {
  const std::vector<uint64_t>& mask = allowed();
  bool any = false;
  for (size_t i = 0; i < logits.size(); ++i) {
    const bool ok = i < trie_->vocab_size() && ((mask[i / 64] >> (i % 64)) & 1);
    if (!ok) logits[i] = -std::numeric_limits<float>::infinity();
    any = any || ok;
  }
  NF_CHECK(any, "grammar: no token of the vocabulary can continue the output here");
}

void GrammarConstraint::accept(int64_t id) {
  NF_CHECK(allowed(id), "grammar: token ", id, " is not allowed here");
  for (const int64_t eos : eos_ids_)
    if (id == eos) return;  // the end: nothing to match
  NF_CHECK(matcher_.accept(trie_->bytes(static_cast<size_t>(id))), "grammar: token ", id, "'s bytes do not continue the output");
}

}  // namespace nf::infer
