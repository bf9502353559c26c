#pragma once
// The byte-level BPE model: a vocabulary of tokens (byte strings) and a ranked list of merges.
// Encoding one pre-tokenized word starts from its bytes as single-byte tokens and repeatedly
// merges the adjacent pair whose merge has the lowest rank (the leftmost one on ties) until no
// adjacent pair has a merge: the algorithm of GPT-2 and Hugging Face tokenizers, so the ids are
// identical.
//
// Tokens are stored as raw bytes; their tokenizer.json spelling (GPT-2's byte-level alphabet, see
// byte_level.h) is kept as well for saving. A vocabulary may have gaps (ids without a token).
// The model is immutable and cheap to copy (the tables are shared).
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "nanoformer/tokenizer/added_vocabulary.h"

namespace nf::tokenizer {

// Options of Hugging Face's BPE model that change the ids.
struct BpeOptions {
  // Return a word's id directly when the whole word is in the vocabulary (LLaMA-3 sets it).
  bool ignore_merges = false;
  // The token used for bytes that have no token of their own (none: such bytes are dropped,
  // as HF does); fuse_unk makes runs of them one unknown token.
  std::optional<std::string> unk_token;
  bool fuse_unk = false;
};

class BpeModel {
 public:
  BpeModel();
  // vocab[id] is the token in tokenizer.json spelling (nullopt for a gap); merges are pairs of
  // such tokens in rank order (a pair listed twice keeps its last rank, as in HF). Throws
  // nf::Error naming the merge or token at fault when a merge refers to a missing token.
  BpeModel(std::vector<std::optional<std::string>> vocab,
           const std::vector<std::pair<std::string, std::string>>& merges, BpeOptions options = {});

  // Number of ids (one past the largest id).
  size_t size() const;
  bool contains(TokenId id) const;
  // The token's bytes / tokenizer.json spelling (empty for a gap).
  std::string_view bytes(TokenId id) const;
  const std::string& spelling(TokenId id) const;
  std::optional<TokenId> spelling_to_id(std::string_view spelling) const;
  // The merges as (left id, right id), in rank order, each pair once.
  std::vector<std::pair<TokenId, TokenId>> merges() const;
  const BpeOptions& options() const;

  // Appends the ids of one pre-tokenized word (the raw bytes of the piece).
  void encode_word(std::string_view word, std::vector<TokenId>& out) const;

 private:
  struct Tables;
  std::shared_ptr<const Tables> t_;
};

}  // namespace nf::tokenizer
