#pragma once
// The interface every tokenizer offers (byte-level BPE, WordPiece, character-level), and loading one from a
// file whatever its kind. Text is a byte string (std::string_view); it need not be valid UTF-8.
#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "nanoformer/tokenizer/added_vocabulary.h"

namespace nf::tokenizer {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // "bpe", "wordpiece" or "char".
  virtual std::string_view kind() const = 0;
  // Number of ids: every id is < vocab_size().
  virtual size_t vocab_size() const = 0;

  // Appends the ids of text to out.
  virtual void encode(std::string_view text, std::vector<TokenId>& out) const = 0;
  std::vector<TokenId> encode(std::string_view text) const;
  // Appends the ids of text read as plain text, special tokens' text encoded like any other
  // (tiktoken's encode_ordinary); for a tokenizer without special tokens, the same as encode.
  virtual void encode_ordinary(std::string_view text, std::vector<TokenId>& out) const { encode(text, out); }
  // Appends the ids of text with the special tokens the tokenizer's post-processor adds around a
  // single sequence (BERT's [CLS] ... [SEP]): Hugging Face's encode(text).ids with
  // add_special_tokens=True, what transformers feeds a model. The same as encode for tokenizers
  // without such a template (byte-level BPE, character level).
  virtual void encode_with_special_tokens(std::string_view text, std::vector<TokenId>& out) const {
    encode(text, out);
  }

  // The bytes of one token; throws nf::Error naming the id when it is out of range or unused.
  virtual std::string_view token_bytes(TokenId id) const = 0;
  // Appends the bytes of ids to out (the exact inverse of encode); throws nf::Error naming the
  // first bad id.
  virtual void decode(std::span<const TokenId> ids, std::string& out) const;
  std::string decode(std::span<const TokenId> ids) const;
  // Like decode, leaving out the special tokens when skip_special is set (Hugging Face's
  // skip_special_tokens); a tokenizer without special tokens decodes as decode does.
  virtual void decode(std::span<const TokenId> ids, std::string& out, bool skip_special) const {
    (void)skip_special;
    decode(ids, out);
  }

  // The id of a special/added token or of a vocabulary entry with exactly these bytes.
  virtual std::optional<TokenId> token_id(std::string_view content) const = 0;

  // Whether encode(a + b) == encode(a) + encode(b) whenever a ends with '\n' and b starts with
  // an ASCII letter or digit; lets long inputs be cut there and encoded in parallel.
  virtual bool splittable_after_newline() const = 0;

  // Writes the tokenizer to a file that load_tokenizer() reads back.
  virtual void save(const std::string& path) const = 0;
};

// Loads a tokenizer file: a Hugging Face tokenizer.json (byte-level BPE or WordPiece), a nanoformer
// character-level vocabulary, or a GGUF model file's tokenizer (gguf_tokenizer.h). Throws nf::Error
// naming the file and the problem.
std::unique_ptr<Tokenizer> load_tokenizer(const std::string& path);

// Reads a whole file; throws nf::Error naming the file when it cannot be read.
std::string read_file(const std::string& path);

}  // namespace nf::tokenizer
