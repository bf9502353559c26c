#pragma once
// The WordPiece model of BERT, as Hugging Face tokenizers runs it: a word is cut greedily into
// the longest vocabulary entries from its start, every piece after the first looked up with the
// continuing-subword prefix ("##"). A word with more than max_input_chars_per_word code points,
// or with a position where no entry matches, becomes the single unknown token.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "nanoformer/tokenizer/added_vocabulary.h"

namespace nf::tokenizer {

struct WordPieceOptions {
  std::string unk_token = "[UNK]";
  std::string continuing_subword_prefix = "##";
  size_t max_input_chars_per_word = 100;
};

class WordPieceModel {
 public:
  // vocab[id] is the token of id (nullopt for a gap). Throws nf::Error when a token is given
  // twice or unk_token is not in the vocabulary.
  WordPieceModel(std::vector<std::optional<std::string>> vocab, WordPieceOptions options);

  // Appends the ids of one pre-tokenized word (not empty) to out.
  void encode_word(std::string_view word, std::vector<TokenId>& out) const;

  size_t size() const { return tokens_.size(); }  // one past the largest id
  bool contains(TokenId id) const { return id < tokens_.size() && tokens_[id].has_value(); }
  const std::string& token(TokenId id) const { return *tokens_[id]; }
  std::optional<TokenId> token_to_id(std::string_view token) const;
  const WordPieceOptions& options() const { return options_; }
  TokenId unk_id() const { return unk_id_; }

 private:
  std::vector<std::optional<std::string>> tokens_;
  std::unordered_map<std::string, TokenId> ids_;  // word-initial pieces
  std::unordered_map<std::string, TokenId> continuing_ids_;  // pieces that start with the prefix, without it
  WordPieceOptions options_;
  TokenId unk_id_ = 0;
};

}  // namespace nf::tokenizer
