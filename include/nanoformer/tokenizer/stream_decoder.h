#pragma once
// Incremental decoding of a stream of ids (e.g. while sampling): each push() returns the text
// that is ready, holding back the bytes of a UTF-8 character that is not complete yet (a token
// can end in the middle of a multi-byte character). Bytes that can never become valid UTF-8 are
// either passed through as they are (InvalidUtf8::keep: all outputs plus flush() are exactly
// decode(all ids)) or replaced by U+FFFD (InvalidUtf8::replace: they are
// replace_invalid_utf8(decode(all ids)), Hugging Face's decode); an incomplete character at the
// very end becomes U+FFFD only in flush(), when no later token can complete it.
#include <string>
#include <string_view>

#include "nanoformer/tokenizer/tokenizer.h"

namespace nf::tokenizer {

// What a stream decoder does with bytes that are not valid UTF-8.
enum class InvalidUtf8 {
  keep,     // pass them through
  replace,  // one U+FFFD per maximal invalid subpart (Python's bytes.decode("utf-8", "replace"))
};

class StreamDecoder {
 public:
  explicit StreamDecoder(const Tokenizer& tokenizer, InvalidUtf8 invalid = InvalidUtf8::keep)
      : tokenizer_(tokenizer), invalid_(invalid) {}

  // The text that became complete with this id; throws nf::Error for an invalid id.
  std::string push(TokenId id);
  // Everything still held back (an incomplete character at the end of the stream).
  std::string flush();

 private:
  std::string finished(std::string_view bytes) const;

  const Tokenizer& tokenizer_;
  InvalidUtf8 invalid_;
  std::string pending_;
};

// The length of the longest prefix of bytes that does not end inside an incomplete but possibly
// valid UTF-8 sequence (what a stream decoder can emit now).
size_t complete_utf8_prefix(std::string_view bytes);

// bytes with every maximal subpart of an invalid sequence (a byte that cannot start one, or the
// longest prefix of a valid sequence cut short) replaced by U+FFFD, as Python's
// bytes.decode("utf-8", errors="replace").
std::string replace_invalid_utf8(std::string_view bytes);

}  // namespace nf::tokenizer
