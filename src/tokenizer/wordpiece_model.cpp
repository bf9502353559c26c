#include "nanoformer/tokenizer/wordpiece_model.h"

#include "nanoformer/core/error.h"
#include "nanoformer/tokenizer/unicode.h"

namespace nf::tokenizer {

WordPieceModel::WordPieceModel(std::vector<std::optional<std::string>> vocab, WordPieceOptions options)
    : tokens_(std::move(vocab)), options_(std::move(options)) {
  const std::string& prefix = options_.continuing_subword_prefix;
  for (TokenId id = 0; id < tokens_.size(); ++id) {
    if (!tokens_[id]) continue;
    const std::string& t = *tokens_[id];
    auto [it, inserted] = ids_.emplace(t, id);
    NF_CHECK(inserted, "token '", t, "' has both id ", it->second, " and id ", id);
    // "##ab" also serves as the continuation "ab" (an entry may be both, as in HF's lookup of prefix + piece)
    if (!prefix.empty() && t.size() > prefix.size() && t.compare(0, prefix.size(), prefix) == 0)
      continuing_ids_.emplace(t.substr(prefix.size()), id);
  }
  const auto unk = ids_.find(options_.unk_token);
  NF_CHECK(unk != ids_.end(), "the unknown token '", options_.unk_token, "' is not in the vocabulary");
  unk_id_ = unk->second;
}

std::optional<TokenId> WordPieceModel::token_to_id(std::string_view token) const {
  const auto it = ids_.find(std::string(token));
  if (it == ids_.end()) return std::nullopt;
  return it->second;
}

void WordPieceModel::encode_word(std::string_view word, std::vector<TokenId>& out) const {
  const auto* s = reinterpret_cast<const unsigned char*>(word.data());
  // code point boundaries: ends[k] is the end of the k-th code point
  std::vector<size_t> ends;
  for (size_t pos = 0; pos < word.size();) {
    pos += unicode::decode_utf8(s + pos, word.size() - pos).length;
    ends.push_back(pos);
    if (ends.size() > options_.max_input_chars_per_word) {
      out.push_back(unk_id_);
      return;
    }
  }
  const size_t start_size = out.size();
  std::string key;
  size_t start = 0, first = 0;  // byte offset and code point index of the next piece
  while (start < word.size()) {
    std::optional<TokenId> found;
    size_t k = ends.size();  // try [start, ends[k - 1]) from the longest
    for (; k > first; --k) {
      key.assign(word.substr(start, ends[k - 1] - start));
      const auto& table = start == 0 || options_.continuing_subword_prefix.empty() ? ids_ : continuing_ids_;
      if (const auto it = table.find(key); it != table.end()) {
        found = it->second;
        break;
      }
    }
    if (!found) {
      out.resize(start_size);
      out.push_back(unk_id_);
      return;
    }
    out.push_back(*found);
    start = ends[k - 1];
    first = k;
  }
}

}  // namespace nf::tokenizer
