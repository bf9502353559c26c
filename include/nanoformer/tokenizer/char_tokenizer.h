#pragma once
// A character-level tokenizer for quick experiments (as in char-rnn / nanoGPT's shakespeare_char):
// one id per distinct character of the training text, ids in code point order. A "character"
// is a UTF-8 code point; a byte that is not valid UTF-8 is a character of its own, so any byte
// string can be tokenized. Text with a character outside the vocabulary is refused with an error
// naming it.
//
// File format (JSON): {"type": "nanoformer-char", "version": 1, "code_points": [10, 32, ...]}
// where entry i is the character of id i: a code point, or 0x110000 + b for the invalid byte b.
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "nanoformer/tokenizer/tokenizer.h"

namespace nf::tokenizer {

class CharTokenizer final : public Tokenizer {
 public:
  static constexpr const char* kFileType = "nanoformer-char";

  // The vocabulary of every character that occurs in text.
  static CharTokenizer train(std::string_view text);
  // From character values as in the file format (code points, or 0x110000 + byte); throws
  // nf::Error on a duplicate or an invalid value.
  explicit CharTokenizer(std::vector<uint32_t> characters);
  static CharTokenizer from_json(std::string_view json_text, std::string_view source = "char vocabulary");
  std::string to_json() const;

  std::string_view kind() const override { return "char"; }
  size_t vocab_size() const override { return characters_.size(); }
  using Tokenizer::encode;
  void encode(std::string_view text, std::vector<TokenId>& out) const override;
  std::string_view token_bytes(TokenId id) const override;
  std::optional<TokenId> token_id(std::string_view content) const override;
  bool splittable_after_newline() const override { return true; }
  void save(const std::string& path) const override;

  const std::vector<uint32_t>& characters() const { return characters_; }

 private:
  std::vector<uint32_t> characters_;
  std::vector<std::string> bytes_;  // id -> the character's bytes
  int32_t ascii_[128];              // fast path: ASCII byte -> id or -1
  std::unordered_map<uint32_t, TokenId> ids_;
};

}  // namespace nf::tokenizer
