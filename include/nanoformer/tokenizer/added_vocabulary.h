#pragma once
// Added tokens (special tokens such as <|endoftext|>): strings that are found in the text before
// pre-tokenization and become one id each, never split by BPE.
//
// Matching follows Hugging Face tokenizers exactly: tokens are searched leftmost-longest (the
// earliest match wins; among matches starting there, the longest), first the tokens with
// normalized=false, then, inside the remaining text, those with normalized=true (a tokenizer with
// a normalizer runs the two passes itself, normalizing the text in between; without one, split()
// runs both on the same text). Per-token options:
//   single_word  the match only counts when not glued to a word character (\w) on either side;
//                a rejected match still consumes its text for the search, as in HF;
//   lstrip       the token also absorbs the whitespace to its left;
//   rstrip       the token also absorbs the whitespace to its right.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace nf::tokenizer {

using TokenId = uint32_t;

struct AddedToken {
  TokenId id = 0;
  std::string content;
  bool special = true;  // special tokens can be skipped when decoding
  bool single_word = false;
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = false;
};

class AddedVocabulary {
 public:
  AddedVocabulary() = default;
  // Throws nf::Error on an empty content or a content given twice.
  explicit AddedVocabulary(std::vector<AddedToken> tokens);

  // A piece of the text: either plain text [begin, end) or an added token (whose match, with
  // any stripped whitespace, is [begin, end)).
  struct Segment {
    size_t begin;
    size_t end;
    bool is_token;
    TokenId id;
  };

  // Cuts text into segments covering it in order (appended to out, which is cleared first).
  void split(std::string_view text, std::vector<Segment>& out) const;
  // One of the two passes of split(): only the tokens with normalized == false (kRaw) or true.
  enum class Pass { kRaw, kNormalized };
  void split(std::string_view text, Pass pass, std::vector<Segment>& out) const;

  const std::vector<AddedToken>& tokens() const { return tokens_; }
  bool empty() const { return tokens_.empty(); }
  // Whether any token contains the byte c, or has the lstrip option (used to decide where text
  // can be cut for parallel encoding without changing the result).
  bool any_contains(char c) const;
  bool any_lstrip() const;

 private:
  // A byte trie over the token contents of one matching pass.
  struct Trie {
    struct Node {
      std::vector<std::pair<unsigned char, int32_t>> children;
      int32_t token = -1;  // index into tokens_ when a content ends here
    };
    std::vector<Node> nodes;
    bool first_byte[256] = {};
    bool empty() const { return nodes.size() <= 1; }
  };
  void build(Trie& trie, bool normalized) const;
  // The leftmost-longest match in text[from, ...): sets begin/end and returns the token index, or
  // returns -1 when there is none.
  int32_t find(const Trie& trie, std::string_view text, size_t from, size_t& begin, size_t& end) const;
  void split_pass(const Trie& trie, std::string_view text, size_t offset, std::vector<Segment>& out) const;

  std::vector<AddedToken> tokens_;
  Trie raw_;         // tokens with normalized == false, matched first
  Trie normalized_;  // tokens with normalized == true
};

}  // namespace nf::tokenizer
