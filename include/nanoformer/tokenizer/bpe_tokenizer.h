#pragma once
// A complete byte-level BPE tokenizer, as GPT-2 defines it and Hugging Face tokenizers runs it:
//   1. added (special) tokens are cut out of the text first and become one id each;
//   2. each remaining span (with a space prepended when add_prefix_space is set and it does not
//      start with one) is split into words by the GPT-2 or GPT-4 pattern;
//   3. each word's bytes are encoded by the BPE model.
// Decoding concatenates the tokens' bytes, so decode(encode(x)) == x for every byte string.
//
// Words seen before are served from a per-thread cache (word bytes -> ids), which makes
// encoding natural text several times faster; a tokenizer can be used from many threads at once.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "nanoformer/tokenizer/bpe_model.h"
#include "nanoformer/tokenizer/pretokenizer.h"
#include "nanoformer/tokenizer/tokenizer.h"

namespace nf::tokenizer {

struct PreTokenizerOptions {
  SplitPattern pattern = SplitPattern::kGpt2;
  bool add_prefix_space = false;
};

class BpeTokenizer final : public Tokenizer {
 public:
  // Throws nf::Error when an added token's id clashes with a different vocabulary entry's, or is not
  // below model.size() + added.size() (ids must not size the decoding tables by themselves).
  explicit BpeTokenizer(BpeModel model, std::vector<AddedToken> added = {}, PreTokenizerOptions pre = {});

  std::string_view kind() const override { return "bpe"; }
  size_t vocab_size() const override { return vocab_size_; }

  using Tokenizer::decode;
  using Tokenizer::encode;
  void encode(std::string_view text, std::vector<TokenId>& out) const override;
  // Encodes without looking for added tokens (their text is encoded like any other).
  void encode_ordinary(std::string_view text, std::vector<TokenId>& out) const override;

  std::string_view token_bytes(TokenId id) const override;
  void decode(std::span<const TokenId> ids, std::string& out) const override;
  // Like decode, leaving out the special tokens when skip_special is set.
  void decode(std::span<const TokenId> ids, std::string& out, bool skip_special) const override;
  bool is_special(TokenId id) const;

  std::optional<TokenId> token_id(std::string_view content) const override;
  bool splittable_after_newline() const override;
  // Saves as a Hugging Face tokenizer.json.
  void save(const std::string& path) const override;

  const BpeModel& model() const { return model_; }
  const AddedVocabulary& added() const { return added_; }
  const PreTokenizerOptions& pre_tokenizer() const { return pre_; }

 private:
  void encode_span(std::string_view text, std::vector<TokenId>& out) const;
  [[noreturn]] void bad_id(TokenId id) const;

  BpeModel model_;
  AddedVocabulary added_;
  PreTokenizerOptions pre_;
  size_t vocab_size_ = 0;
  // Decoding table: id -> bytes (model tokens, overridden by added tokens' contents).
  std::string bytes_;
  std::vector<uint32_t> offset_;
  std::vector<uint8_t> flags_;  // bit 0: id in use, bit 1: special token
  uint64_t cache_owner_;        // identifies this tokenizer's entries in the per-thread cache
};

}  // namespace nf::tokenizer
