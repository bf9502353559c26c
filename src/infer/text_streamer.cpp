// Generated ids to printable text with the stop decision (infer/text_streamer.h).
#include "nanoformer/infer/text_streamer.h"

#include "nanoformer/core/error.h"

namespace nf::infer {

TextStreamer::TextStreamer(const tokenizer::Tokenizer& tokenizer, const StopCriteria& criteria)
    : criteria_(criteria),
      decoder_(tokenizer, tokenizer::InvalidUtf8::replace),
      matcher_(criteria.stop_strings) {
  criteria_.validate();
}

std::string TextStreamer::emit(std::string piece) {
  text_ += piece;
  return piece;
}

std::string TextStreamer::push(int64_t id) {
  NF_CHECK(!stopped(), "TextStreamer: generation already stopped (", stop_reason_name(reason_), ")");
  NF_CHECK(id >= 0 && id <= static_cast<int64_t>(UINT32_MAX), "TextStreamer: token id ", id, " is out of range");
  reason_ = criteria_.after_token(id, ++new_tokens_);
  if (reason_ == StopReason::end_of_sequence) return {};
  std::string piece = matcher_.push(decoder_.push(static_cast<tokenizer::TokenId>(id)));
  if (matcher_.stopped()) reason_ = StopReason::stop_string;
  return emit(std::move(piece));
}

// The decoder's tail can still complete a stop string; the matcher's tail then is plain text.
std::string TextStreamer::finish() {
  std::string piece = matcher_.push(decoder_.flush());
  if (matcher_.stopped()) reason_ = StopReason::stop_string;
  piece += matcher_.flush();
  return emit(std::move(piece));
}

}  // namespace nf::infer
