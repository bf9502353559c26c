#pragma once
// Incremental decoding of a stream of ids (e.g. while sampling): each push() returns the text
// that is ready, holding back the bytes of a UTF-8 character that is not complete yet (a token
// can end in the middle of a multi-byte character). Bytes that can never become valid UTF-8 are
// passed through as they are, so the concatenation of all outputs plus flush() is exactly
// decode(all ids).
#include <string>

#include "nanoformer/tokenizer/tokenizer.h"

namespace nf::tokenizer {

class StreamDecoder {
 public:
  explicit StreamDecoder(const Tokenizer& tokenizer) : tokenizer_(tokenizer) {}

  // The text that became complete with this id; throws nf::Error for an invalid id.
  std::string push(TokenId id);
  // Everything still held back (an incomplete character at the end of the stream).
  std::string flush();

 private:
  const Tokenizer& tokenizer_;
  std::string pending_;
};

// The length of the longest prefix of bytes that does not end inside an incomplete but possibly
// valid UTF-8 sequence (what a stream decoder can emit now).
size_t complete_utf8_prefix(std::string_view bytes);

}  // namespace nf::tokenizer
