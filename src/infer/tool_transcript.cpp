// A model's text turn by turn while it calls tools (infer/tool_transcript.h).
#include "nanoformer/infer/tool_transcript.h"

#include <nlohmann/json.hpp>

namespace nf::infer {

bool is_tool_error(std::string_view answer) {
  const nlohmann::json j = nlohmann::json::parse(answer, nullptr, /*allow_exceptions=*/false);
  return j.is_object() && j.size() == 1 && j.contains("error");
}

ToolTranscript::ToolTranscript(std::vector<std::string> stop_strings)
    : stop_strings_(std::move(stop_strings)), matcher_(stop_strings_) {}

bool ToolTranscript::push(std::string_view text, bool forced) {
  if (forced) {
    if (!in_answer_) {  // the turn ends: what the matcher held back is its text
      turns_.back() += matcher_.flush();
      matcher_ = StopStringMatcher(stop_strings_);
      in_answer_ = true;
    }
    return true;
  }
  if (in_answer_) {
    turns_.emplace_back();
    in_answer_ = false;
  }
  turns_.back() += matcher_.push(text);
  return !matcher_.stopped();
}

void ToolTranscript::record(const ToolTurn& turn) {
  calls_ += static_cast<int64_t>(turn.calls.size());
  if (!turn.ran) {  // past the turn limit: not run, so neither valid nor invalid
    unfinished_ = true;
    return;
  }
  for (size_t i = 0; i < turn.calls.size(); ++i)
    if (turn.calls[i].name.empty() || is_tool_error(turn.answers[i])) ++invalid_;
}

void ToolTranscript::finish() {
  if (!in_answer_ && !matcher_.stopped()) turns_.back() += matcher_.flush();
}

std::string ToolTranscript::final_answer() const {
  if (unfinished_) return {};
  const std::string& last = turns_.back();
  const size_t at = last.rfind("</tool_call>");
  return at == std::string::npos ? last : last.substr(at + 12);
}

}  // namespace nf::infer
