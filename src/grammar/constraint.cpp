// Token masks from a grammar's state and the vocabulary trie (grammar/constraint.h).
#include "nanoformer/grammar/constraint.h"

#include <limits>

#include "nanoformer/core/error.h"

namespace nf::grammar {
namespace {

constexpr size_t kMaxStates = 1024;  // the interned states (and their masks) are dropped beyond this

}  // namespace

GrammarConstraint::GrammarConstraint(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenTrie> trie,
                                     std::vector<int64_t> eos_ids)
    : matcher_(std::move(grammar)), trie_(std::move(trie)), eos_ids_(std::move(eos_ids)) {}

int32_t GrammarConstraint::state_id(const GrammarMatcher::State& state) {
  const auto [it, added] = state_ids_.try_emplace(state, static_cast<int32_t>(states_.size()));
  if (added) {
    states_.push_back(state);
    std::array<int32_t, 256> unknown;
    unknown.fill(kUnknown);
    next_.push_back(unknown);
    masks_.emplace_back();
  }
  return it->second;
}

int32_t GrammarConstraint::next_state(int32_t state, uint8_t byte) {
  int32_t next = next_[static_cast<size_t>(state)][byte];
  if (next != kUnknown) return next;
  matcher_.advance(states_[static_cast<size_t>(state)], byte, scratch_);
  next = scratch_.empty() ? kDead : state_id(scratch_);
  next_[static_cast<size_t>(state)][byte] = next;  // indexed afresh: state_id may have grown next_
  return next;
}

void GrammarConstraint::walk(uint32_t node, int32_t state, std::vector<uint64_t>& mask) {
  const TokenTrie::Node& n = trie_->nodes()[node];
  for (uint32_t c = n.children_begin; c < n.children_end; ++c) {
    const int32_t next = next_state(state, trie_->child_bytes()[c]);
    if (next == kDead) continue;
    const uint32_t child = trie_->child_nodes()[c];
    const TokenTrie::Node& m = trie_->nodes()[child];
    for (uint32_t t = m.tokens_begin; t < m.tokens_end; ++t) {
      const uint32_t id = trie_->token_ids()[t];
      mask[id / 64] |= uint64_t{1} << (id % 64);
    }
    if (m.children_begin < m.children_end) walk(child, next, mask);
  }
}

const std::vector<uint64_t>& GrammarConstraint::allowed() {
  if (states_.size() >= kMaxStates) {  // between walks: nothing refers to the ids
    states_.clear();
    state_ids_.clear();
    next_.clear();
    masks_.clear();
  }
  const int32_t current = state_id(matcher_.state());
  if (!masks_[static_cast<size_t>(current)].empty()) return masks_[static_cast<size_t>(current)];
  std::vector<uint64_t> mask((trie_->vocab_size() + 63) / 64, 0);
  walk(0, current, mask);
  const bool can_end = GrammarMatcher::can_end(matcher_.state());
  for (const int64_t id : eos_ids_) {
    if (id < 0 || id >= static_cast<int64_t>(trie_->vocab_size())) continue;
    const uint64_t bit = uint64_t{1} << (id % 64);
    if (can_end) mask[static_cast<size_t>(id) / 64] |= bit;
    else mask[static_cast<size_t>(id) / 64] &= ~bit;  // its bytes (if the trie has any) are not text here
  }
  masks_[static_cast<size_t>(current)] = std::move(mask);
  return masks_[static_cast<size_t>(current)];
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

}  // namespace nf::grammar
