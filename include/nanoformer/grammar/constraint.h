#pragma once
// Constrained decoding of one sequence: at each step the mask of the ids whose bytes keep the
// output a prefix of the grammar's language, applied to the logits before sampling. The mask is a
// walk of the vocabulary's TokenTrie with the matcher's state set: a child is visited only while
// some stack survives its byte, so the walk costs the prefixes that stay valid, not the
// vocabulary. The walk's states are interned and their transitions by byte remembered (the state
// after an ASCII letter inside a string is the one before it, at every node of the trie), so a walk
// costs about one table lookup per trie edge it follows. Masks are cached per state (the states
// inside a string or a list repeat). An end id
// (eos_ids) is allowed exactly where the grammar can end; ids with no bytes (special tokens the
// trie leaves out) never.
#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <vector>

#include "nanoformer/grammar/matcher.h"
#include "nanoformer/grammar/token_trie.h"

namespace nf::grammar {

class GrammarConstraint {
 public:
  GrammarConstraint(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenTrie> trie,
                    std::vector<int64_t> eos_ids);

  // Bit i of word i / 64 set: id i is allowed next.
  const std::vector<uint64_t>& allowed();
  bool allowed(int64_t id) { return id >= 0 && id < static_cast<int64_t>(trie_->vocab_size()) && ((allowed()[static_cast<size_t>(id) / 64] >> (id % 64)) & 1); }
  // logits_i <- -inf for every id not allowed (ids beyond the trie's vocabulary too). Throws
  // nf::Error when no id is allowed (the vocabulary cannot spell what the grammar needs next).
  void apply(std::span<float> logits);
  // Moves past the chosen id; throws nf::Error when it was not allowed.
  void accept(int64_t id);
  // Where the output is, and back to it: a speculative draft advances the constraint along its
  // tokens (so that each is allowed) and then restores it (infer/draft_model.h).
  const GrammarMatcher::State& state() const { return matcher_.state(); }
  void restore(GrammarMatcher::State state) { matcher_.restore(std::move(state)); }
  // Only the end can follow (stop without waiting for an end id).
  bool finished() const { return GrammarMatcher::must_end(matcher_.state()); }

 private:
  static constexpr int32_t kUnknown = -1, kDead = -2;
  int32_t state_id(const GrammarMatcher::State& state);
  int32_t next_state(int32_t state, uint8_t byte);  // kDead: the byte is not allowed there
  void walk(uint32_t node, int32_t state, std::vector<uint64_t>& mask);

  GrammarMatcher matcher_;
  std::shared_ptr<const TokenTrie> trie_;
  std::vector<int64_t> eos_ids_;
  // interned states, their transitions by byte (kUnknown until followed) and masks (empty until computed)
  std::vector<GrammarMatcher::State> states_;
  std::map<GrammarMatcher::State, int32_t> state_ids_;
  std::vector<std::array<int32_t, 256>> next_;
  std::vector<std::vector<uint64_t>> masks_;
  GrammarMatcher::State scratch_;
};

}  // namespace nf::grammar
