// MiniMind's reward terms for tool calls (train/call_reward.h).
#include "nanoformer/train/call_reward.h"

#include <cstdlib>

namespace nf::train {
namespace {

int64_t count(std::string_view text, std::string_view what) {
  int64_t n = 0;
  for (size_t at = text.find(what); at != std::string_view::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

}  // namespace

double call_reward(const infer::ToolTranscript& t, double w) {
  int64_t unbalanced = 0;
  for (const std::string& turn : t.turns()) unbalanced += std::abs(count(turn, "<tool_call>") - count(turn, "</tool_call>"));
  double r = -w * static_cast<double>(unbalanced);
  if (t.calls() > 0) r += t.invalid_calls() == 0 ? w : -w * static_cast<double>(t.invalid_calls());
  if (t.unfinished()) r -= w;
  return r;
}

}  // namespace nf::train
