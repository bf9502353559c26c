#pragma once
// A BERT tokenizer (Hugging Face's WordPiece pipeline), as all-MiniLM-L6-v2 and bert-base-*
// tokenizer.json files configure it:
//   1. added tokens with normalized=false are cut out of the raw text;
//   2. the rest is normalized (BertNormalizer, optional) and added tokens with normalized=true
//      are cut out of the normalized text;
//   3. each remaining span is split into words (BertPreTokenizer) and each word is encoded by the
//      WordPiece model;
//   4. encode_with_special_tokens() then applies the post-processor's single-sequence template,
//      e.g. [CLS] $A [SEP].
// encode() stops after step 3: it is Hugging Face's encode(text, add_special_tokens=False), so
// that encode(a + b) == encode(a) + encode(b) at word boundaries like every nanoformer tokenizer.
// encode_with_special_tokens() is HF's encode(text).ids (add_special_tokens=True), the ids
// sentence-transformers and transformers feed a BERT model.
// Decoding is HF's WordPiece decoder: pieces joined with ' ', the "##" of continuations removed,
// and (cleanup) the spaces before . ? ! , and English contractions removed. It is not the
// inverse of encode (normalization loses case, accents and spacing).
#include <span>
#include <string>
#include <vector>

#include "nanoformer/tokenizer/bert_normalizer.h"
#include "nanoformer/tokenizer/tokenizer.h"
#include "nanoformer/tokenizer/wordpiece_model.h"

namespace nf::tokenizer {

struct WordPieceConfig {
  std::optional<BertNormalizerOptions> normalizer;  // nullopt: no normalizer
  // The post-processor's single-sequence template: the ids before and after the text.
  std::vector<TokenId> prefix_ids, suffix_ids;
  // The WordPiece decoder's options.
  std::string decoder_prefix = "##";
  bool decoder_cleanup = true;
  // Fields kept as the file wrote them (JSON text) and written back by save(): the post-processor
  // (whose pair template nanoformer does not use), truncation and padding (not applied: callers
  // such as sentence-transformers choose their own).
  std::string post_processor_json = "null", truncation_json = "null", padding_json = "null";
};

class WordPieceTokenizer final : public Tokenizer {
 public:
  // Throws nf::Error when an added token's id clashes with a different vocabulary entry's, is out
  // of range, or a template id has no token.
  WordPieceTokenizer(WordPieceModel model, std::vector<AddedToken> added = {}, WordPieceConfig config = {});

  std::string_view kind() const override { return "wordpiece"; }
  size_t vocab_size() const override { return vocab_size_; }

  using Tokenizer::decode;
  using Tokenizer::encode;
  void encode(std::string_view text, std::vector<TokenId>& out) const override;
  void encode_ordinary(std::string_view text, std::vector<TokenId>& out) const override;
  void encode_with_special_tokens(std::string_view text, std::vector<TokenId>& out) const override;

  std::string_view token_bytes(TokenId id) const override;
  void decode(std::span<const TokenId> ids, std::string& out) const override { decode(ids, out, false); }
  // HF's decode(ids, skip_special_tokens).
  void decode(std::span<const TokenId> ids, std::string& out, bool skip_special) const override;
  bool is_special(TokenId id) const;

  std::optional<TokenId> token_id(std::string_view content) const override;
  bool splittable_after_newline() const override;
  void save(const std::string& path) const override;

  const WordPieceModel& model() const { return model_; }
  const AddedVocabulary& added() const { return added_; }
  const WordPieceConfig& config() const { return config_; }

 private:
  void encode_normalized(std::string_view text, std::vector<TokenId>& out) const;
  void encode_words(std::string_view text, std::vector<TokenId>& out) const;

  WordPieceModel model_;
  AddedVocabulary added_;
  WordPieceConfig config_;
  size_t vocab_size_ = 0;
  std::vector<const AddedToken*> added_at_;  // id -> added token, or nullptr
};

}  // namespace nf::tokenizer
