#include "nanoformer/tokenizer/wordpiece_tokenizer.h"

#include "nanoformer/core/error.h"
#include "nanoformer/tokenizer/tokenizer_json.h"

namespace nf::tokenizer {
namespace {

// HF's WordPiece decoder cleanup, applied to each token (with its joining space) separately.
std::string cleanup(std::string s) {
  static const std::pair<std::string_view, std::string_view> kRules[] = {
      {" .", "."},     {" ?", "?"},     {" !", "!"},          {" ,", ","},     {" ' ", "'"},    {" n't", "n't"},
      {" 'm", "'m"},   {" do not", " don't"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"},
  };
  for (const auto& [from, to] : kRules) {
    if (s.find(from) == std::string::npos) continue;
    std::string r;
    for (size_t pos = 0;;) {
      const size_t hit = s.find(from, pos);
      r.append(s, pos, hit == std::string::npos ? std::string::npos : hit - pos);
      if (hit == std::string::npos) break;
      r += to;
      pos = hit + from.size();
    }
    s.swap(r);
  }
  return s;
}

}  // namespace

WordPieceTokenizer::WordPieceTokenizer(WordPieceModel model, std::vector<AddedToken> added, WordPieceConfig config)
    : model_(std::move(model)), added_(std::move(added)), config_(std::move(config)) {
  vocab_size_ = model_.size();
  const size_t id_bound = model_.size() + added_.tokens().size();
  for (const AddedToken& t : added_.tokens()) {
    NF_CHECK(t.id < id_bound, "added token '", t.content, "' has id ", t.id, ", beyond the ", model_.size(),
             " ids of the vocabulary and the ", added_.tokens().size(), " added tokens");
    if (model_.contains(t.id))
      NF_CHECK(model_.token(t.id) == t.content, "added token '", t.content, "' has id ", t.id,
               ", which the vocabulary gives to '", model_.token(t.id), "'");
    if (auto other = model_.token_to_id(t.content))
      NF_CHECK(*other == t.id, "added token '", t.content, "' has id ", t.id, " but the vocabulary gives it id ", *other);
    vocab_size_ = std::max<size_t>(vocab_size_, size_t{t.id} + 1);
  }
  added_at_.assign(vocab_size_, nullptr);
  for (const AddedToken& t : added_.tokens()) added_at_[t.id] = &t;
  for (const auto* ids : {&config_.prefix_ids, &config_.suffix_ids})
    for (TokenId id : *ids)
      NF_CHECK(id < vocab_size_ && (model_.contains(id) || added_at_[id]), "post-processor: token id ", id,
               " is not in the vocabulary");
}

void WordPieceTokenizer::encode(std::string_view text, std::vector<TokenId>& out) const {
  // pass 1: tokens matched in the raw text; pass 2 (inside encode_normalized): in the normalized text
  std::vector<AddedVocabulary::Segment> segments;
  added_.split(text, AddedVocabulary::Pass::kRaw, segments);
  for (const AddedVocabulary::Segment& s : segments) {
    if (s.is_token)
      out.push_back(s.id);
    else
      encode_normalized(text.substr(s.begin, s.end - s.begin), out);
  }
}

void WordPieceTokenizer::encode_normalized(std::string_view text, std::vector<TokenId>& out) const {
  const std::string normalized = config_.normalizer ? bert_normalize(text, *config_.normalizer) : std::string(text);
  std::vector<AddedVocabulary::Segment> segments;
  added_.split(normalized, AddedVocabulary::Pass::kNormalized, segments);
  for (const AddedVocabulary::Segment& s : segments) {
    if (s.is_token)
      out.push_back(s.id);
    else
      encode_words(std::string_view(normalized).substr(s.begin, s.end - s.begin), out);
  }
}

void WordPieceTokenizer::encode_words(std::string_view text, std::vector<TokenId>& out) const {
  for_each_bert_word(text, [&](std::string_view word) { model_.encode_word(word, out); });
}

void WordPieceTokenizer::encode_ordinary(std::string_view text, std::vector<TokenId>& out) const {
  if (!config_.normalizer) return encode_words(text, out);
  encode_words(bert_normalize(text, *config_.normalizer), out);
}

void WordPieceTokenizer::encode_with_special_tokens(std::string_view text, std::vector<TokenId>& out) const {
  out.insert(out.end(), config_.prefix_ids.begin(), config_.prefix_ids.end());
  encode(text, out);
  out.insert(out.end(), config_.suffix_ids.begin(), config_.suffix_ids.end());
}

std::string_view WordPieceTokenizer::token_bytes(TokenId id) const {
  if (id < vocab_size_ && added_at_[id]) return added_at_[id]->content;
  if (model_.contains(id)) return model_.token(id);
  if (id >= vocab_size_) NF_FAIL("token id ", id, " is out of range (vocabulary size ", vocab_size_, ")");
  NF_FAIL("token id ", id, " has no token (a gap in the vocabulary)");
}

bool WordPieceTokenizer::is_special(TokenId id) const { return id < vocab_size_ && added_at_[id] && added_at_[id]->special; }

void WordPieceTokenizer::decode(std::span<const TokenId> ids, std::string& out, bool skip_special) const {
  const std::string& prefix = config_.decoder_prefix;
  bool first = true;
  for (TokenId id : ids) {
    const std::string_view token = token_bytes(id);
    if (skip_special && is_special(id)) continue;
    std::string piece;
    if (first) {
      piece = token;
    } else if (token.substr(0, prefix.size()) == prefix) {
      piece = token.substr(prefix.size());
    } else {
      piece.reserve(token.size() + 1);
      piece += ' ';
      piece += token;
    }
    first = false;
    out += config_.decoder_cleanup ? cleanup(std::move(piece)) : piece;
  }
}

std::optional<TokenId> WordPieceTokenizer::token_id(std::string_view content) const {
  for (const AddedToken& t : added_.tokens())
    if (t.content == content) return t.id;
  return model_.token_to_id(content);
}

// Cutting after '\n' (whitespace to the normalizer and the pre-tokenizer, so a word boundary)
// keeps the ids unless an added token contains '\n' or absorbs the whitespace before it.
bool WordPieceTokenizer::splittable_after_newline() const { return !added_.any_contains('\n') && !added_.any_lstrip(); }

void WordPieceTokenizer::save(const std::string& path) const { save_tokenizer_json(*this, path); }

}  // namespace nf::tokenizer
