// <think> ... </think> split into reasoning_content and content (serve/reasoning_split.h).
#include "nanoformer/serve/reasoning_split.h"

#include <algorithm>

#include "infer/streamed_tags.h"

namespace nf::serve {
namespace {

using infer::is_space;
using infer::partial_tag;

constexpr std::string_view kOpen = "<think>", kClose = "</think>";

}  // namespace

ReasoningSplitter::ReasoningSplitter(bool opened) : state_(opened ? State::reasoning : State::start), skip_space_(opened) {}

AnswerParts ReasoningSplitter::push(std::string_view text) {
  held_ += text;
  return drain(false);
}

AnswerParts ReasoningSplitter::finish() { return drain(true); }

AnswerParts ReasoningSplitter::drain(bool end) {
  AnswerParts out;
  for (;;) {
    if (state_ == State::start) {  // the answer's first text: does it open a reasoning?
      const auto first = static_cast<size_t>(std::find_if_not(held_.begin(), held_.end(), is_space) - held_.begin());
      const std::string_view rest = std::string_view(held_).substr(first);
      if (rest.substr(0, kOpen.size()) == kOpen) {
        held_.erase(0, first + kOpen.size());
        state_ = State::reasoning;
        skip_space_ = true;
        continue;
      }
      if (!end && kOpen.substr(0, rest.size()) == rest) return out;  // may still be <think>
      state_ = State::content;  // no reasoning: all of it, white space included, is the reply
      continue;
    }
    if (skip_space_) {  // right after a tag
      held_.erase(0, static_cast<size_t>(std::find_if_not(held_.begin(), held_.end(), is_space) - held_.begin()));
      if (held_.empty()) return out;
      skip_space_ = false;
    }
    if (state_ == State::content) {
      out.content += held_;
      held_.clear();
      return out;
    }
    const size_t close = held_.find(kClose);  // in the reasoning
    if (close != std::string::npos) {
      out.reasoning += held_.substr(0, close);
      held_.erase(0, close + kClose.size());
      state_ = State::content;
      skip_space_ = true;
      continue;
    }
    const size_t keep = end ? 0 : partial_tag(held_, kClose);
    out.reasoning += held_.substr(0, held_.size() - keep);
    held_.erase(0, held_.size() - keep);
    return out;
  }
}

}  // namespace nf::serve
