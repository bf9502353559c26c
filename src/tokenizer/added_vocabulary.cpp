#include "nanoformer/tokenizer/added_vocabulary.h"

#include <unordered_set>

#include "nanoformer/core/error.h"
#include "nanoformer/tokenizer/unicode.h"

namespace nf::tokenizer {
namespace {

// The class bits of the code point that ends at text[end) (the last one before `end`).
uint8_t class_before(std::string_view text, size_t end) {
  size_t start = end - 1;
  while (start > 0 && end - start < 4 && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const unicode::CodePoint cp = unicode::decode_utf8(s + start, end - start);
  if (start + cp.length != end) return 0;  // the last byte is a stray continuation byte
  return unicode::classify(cp.value);
}

uint8_t class_at(std::string_view text, size_t pos) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  return unicode::classify(unicode::decode_utf8(s + pos, text.size() - pos).value);
}

}  // namespace

AddedVocabulary::AddedVocabulary(std::vector<AddedToken> tokens) : tokens_(std::move(tokens)) {
  std::unordered_set<std::string_view> seen;
  for (const AddedToken& t : tokens_) {
    NF_CHECK(!t.content.empty(), "added token ", t.id, " has an empty content");
    NF_CHECK(seen.insert(t.content).second, "added token '", t.content, "' is given twice");
  }
  build(raw_, false);
  build(normalized_, true);
}

void AddedVocabulary::build(Trie& trie, bool normalized) const {
  trie.nodes.assign(1, {});
  for (size_t k = 0; k < tokens_.size(); ++k) {
    if (tokens_[k].normalized != normalized) continue;
    int32_t node = 0;
    for (unsigned char c : tokens_[k].content) {
      int32_t child = -1;
      for (auto [byte, next] : trie.nodes[node].children)
        if (byte == c) child = next;
      if (child < 0) {
        child = static_cast<int32_t>(trie.nodes.size());
        trie.nodes[node].children.emplace_back(c, child);
        trie.nodes.emplace_back();
      }
      node = child;
    }
    trie.nodes[node].token = static_cast<int32_t>(k);
    trie.first_byte[static_cast<unsigned char>(tokens_[k].content[0])] = true;
  }
}

int32_t AddedVocabulary::find(const Trie& trie, std::string_view text, size_t from, size_t& begin, size_t& end) const {
  for (size_t i = from; i < text.size(); ++i) {
    if (!trie.first_byte[static_cast<unsigned char>(text[i])]) continue;
    int32_t node = 0, best = -1;
    for (size_t j = i; j < text.size(); ++j) {
      int32_t child = -1;
      for (auto [byte, next] : trie.nodes[node].children)
        if (byte == static_cast<unsigned char>(text[j])) child = next;
      if (child < 0) break;
      node = child;
      if (trie.nodes[node].token >= 0) {
        best = trie.nodes[node].token;
        end = j + 1;
      }
    }
    if (best >= 0) {
      begin = i;
      return best;
    }
  }
  return -1;
}

// One matching pass over `text` (which sits at `offset` in the full input), as HF's
// AddedVocabulary::find_matches: rejected single-word matches are skipped but still consumed,
// lstrip never reaches back into the previous token's span.
void AddedVocabulary::split_pass(const Trie& trie, std::string_view text, size_t offset,
                                 std::vector<Segment>& out) const {
  size_t emitted = 0;  // text before this was already emitted
  size_t search = 0;   // where the next match search starts
  size_t begin = 0, end = 0;
  while (search < text.size()) {
    const int32_t k = find(trie, text, search, begin, end);
    if (k < 0) break;
    search = end;
    const AddedToken& token = tokens_[k];
    if (token.single_word) {
      const bool word_before = begin > 0 && (class_before(text, begin) & unicode::kWord);
      const bool word_after = end < text.size() && (class_at(text, end) & unicode::kWord);
      if (word_before || word_after) continue;
    }
    if (token.lstrip) {
      size_t b = begin;
      while (b > emitted && (class_before(text, b) & unicode::kSpace)) {
        const auto* s = reinterpret_cast<const unsigned char*>(text.data());
        size_t start = b - 1;
        while (start > 0 && (s[start] & 0xC0) == 0x80) --start;
        b = start;
      }
      begin = b;
    }
    if (token.rstrip) {
      while (end < text.size()) {
        const auto* s = reinterpret_cast<const unsigned char*>(text.data());
        const unicode::CodePoint cp = unicode::decode_utf8(s + end, text.size() - end);
        if (!(unicode::classify(cp.value) & unicode::kSpace)) break;
        end += cp.length;
      }
      search = end;
    }
    if (emitted < begin) out.push_back({offset + emitted, offset + begin, false, 0});
    out.push_back({offset + begin, offset + end, true, token.id});
    emitted = end;
  }
  if (emitted < text.size()) out.push_back({offset + emitted, offset + text.size(), false, 0});
}

void AddedVocabulary::split(std::string_view text, std::vector<Segment>& out) const {
  out.clear();
  if (raw_.empty() && normalized_.empty()) {
    if (!text.empty()) out.push_back({0, text.size(), false, 0});
    return;
  }
  if (normalized_.empty()) return split_pass(raw_, text, 0, out);
  std::vector<Segment> first;
  split_pass(raw_, text, 0, first);
  for (const Segment& s : first) {
    if (s.is_token)
      out.push_back(s);
    else
      split_pass(normalized_, text.substr(s.begin, s.end - s.begin), s.begin, out);
  }
}

void AddedVocabulary::split(std::string_view text, Pass pass, std::vector<Segment>& out) const {
  out.clear();
  const Trie& trie = pass == Pass::kRaw ? raw_ : normalized_;
  if (trie.empty()) {
    if (!text.empty()) out.push_back({0, text.size(), false, 0});
    return;
  }
  split_pass(trie, text, 0, out);
}

bool AddedVocabulary::any_contains(char c) const {
  for (const AddedToken& t : tokens_)
    if (t.content.find(c) != std::string::npos) return true;
  return false;
}

bool AddedVocabulary::any_lstrip() const {
  for (const AddedToken& t : tokens_)
    if (t.lstrip) return true;
  return false;
}

}  // namespace nf::tokenizer
