#pragma once
// The vocabulary's byte strings as a trie: a node per distinct prefix, its children by next byte,
// the ids whose bytes end there. Built once per tokenizer; walked with a grammar's state set to
// find every token that keeps the output valid (grammar_constraint.h). Stored flat (nodes in
// depth-first order, children contiguous) so that a walk touches little memory.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "nanoformer/tokenizer/tokenizer.h"

namespace nf::grammar {

class TokenTrie {
 public:
  struct Node {
    uint32_t tokens_begin, tokens_end;      // into token_ids()
    uint32_t children_begin, children_end;  // into child_bytes() / child_nodes()
  };
  // token_bytes[id]: that id's bytes; an empty string leaves the id out (never allowed by a mask).
  explicit TokenTrie(std::vector<std::string> token_bytes);
  // A tokenizer's vocabulary, its special tokens (and unused ids) left out: structured output never
  // contains them (an end id is allowed by the constraint itself).
  static std::shared_ptr<const TokenTrie> of(const tokenizer::Tokenizer& tokenizer);

  const std::vector<Node>& nodes() const { return nodes_; }  // nodes()[0]: the root (the empty prefix)
  const std::vector<uint8_t>& child_bytes() const { return child_bytes_; }
  const std::vector<uint32_t>& child_nodes() const { return child_nodes_; }
  const std::vector<uint32_t>& token_ids() const { return token_ids_; }
  size_t vocab_size() const { return token_bytes_.size(); }
  const std::string& bytes(size_t id) const { return token_bytes_[id]; }
  size_t max_depth() const { return max_depth_; }

 private:
  std::vector<Node> nodes_;
  std::vector<uint8_t> child_bytes_;
  std::vector<uint32_t> child_nodes_, token_ids_;
  std::vector<std::string> token_bytes_;
  size_t max_depth_ = 0;
};

}  // namespace nf::grammar
