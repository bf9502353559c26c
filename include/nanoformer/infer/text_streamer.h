#pragma once
// Generated ids to printable text, one id at a time, with the stop decision: the text of each id
// goes through a StreamDecoder (never splitting a UTF-8 character; invalid bytes become U+FFFD
// as in Hugging Face's decode) and a StopStringMatcher (a stop string is never printed), and
// StopCriteria ends generation at an end-of-sequence id (not printed) or after max new tokens.
// Everything push() and finish() return, concatenated, is text(): the answer.
#include <cstdint>
#include <string>

#include "nanoformer/infer/stop_criteria.h"
#include "nanoformer/tokenizer/stream_decoder.h"

namespace nf::infer {

class TextStreamer {
 public:
  // Validates `criteria`; keeps a reference to `tokenizer`.
  TextStreamer(const tokenizer::Tokenizer& tokenizer, const StopCriteria& criteria);

  // Takes the next generated id; returns the text that became final. Throws nf::Error for an id
  // outside the tokenizer's vocabulary, or when generation has already stopped.
  std::string push(int64_t id);
  // Why generation stops (none while it goes on; max new tokens at once when that is 0).
  StopReason stop_reason() const { return reason_; }
  bool stopped() const { return reason_ != StopReason::none; }
  // The text still held back, at the end of generation, whatever ended it.
  std::string finish();

  const std::string& text() const { return text_; }
  int64_t new_tokens() const { return new_tokens_; }

 private:
  std::string emit(std::string piece);

  StopCriteria criteria_;
  tokenizer::StreamDecoder decoder_;
  StopStringMatcher matcher_;
  StopReason reason_ = StopReason::none;
  int64_t new_tokens_ = 0;
  std::string text_;
};

}  // namespace nf::infer
