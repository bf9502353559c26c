// End-of-sequence ids, max new tokens and stop strings (infer/stop_criteria.h).
#include "nanoformer/infer/stop_criteria.h"

#include <algorithm>

#include "nanoformer/core/error.h"

namespace nf::infer {

const char* stop_reason_name(StopReason reason) {
  switch (reason) {
    case StopReason::none: return "none";
    case StopReason::end_of_sequence: return "end of sequence";
    case StopReason::stop_string: return "stop string";
    case StopReason::max_new_tokens: return "max new tokens";
    case StopReason::context_full: return "context full";
  }
  return "?";
}

void StopCriteria::validate() const {
  NF_CHECK(max_new_tokens >= 1, "--max-new-tokens ", max_new_tokens, ": must be >= 1 (at least one new token)");
  for (const std::string& s : stop_strings) NF_CHECK(!s.empty(), "--stop: a stop string must not be empty");
}

StopReason StopCriteria::after_token(int64_t id, int64_t count) const {
  if (std::find(eos_ids.begin(), eos_ids.end(), id) != eos_ids.end()) return StopReason::end_of_sequence;
  return count >= max_new_tokens ? StopReason::max_new_tokens : StopReason::none;
}

StopStringMatcher::StopStringMatcher(std::vector<std::string> stop_strings) : stop_strings_(std::move(stop_strings)) {
  for (const std::string& s : stop_strings_) NF_CHECK(!s.empty(), "--stop: a stop string must not be empty");
}

// A stop string can only start in pending_ (everything before it was released because no stop
// string starts there), so the earliest complete one is searched there; otherwise the release
// ends at the first position from which the rest is still the start of some stop string.
std::string StopStringMatcher::push(std::string_view text) {
  if (stopped_) return {};
  pending_ += text;
  size_t stop_at = std::string::npos;
  for (const std::string& s : stop_strings_) stop_at = std::min(stop_at, pending_.find(s));
  if (stop_at != std::string::npos) {
    stopped_ = true;
    std::string out = pending_.substr(0, stop_at);
    pending_.clear();
    return out;
  }
  const auto starts_a_stop_string = [&](std::string_view rest) {
    return std::any_of(stop_strings_.begin(), stop_strings_.end(),
                       [&](const std::string& s) { return s.starts_with(rest); });
  };
  size_t release = 0;
  while (release < pending_.size() && !starts_a_stop_string(std::string_view(pending_).substr(release))) ++release;
  std::string out = pending_.substr(0, release);
  pending_.erase(0, release);
  return out;
}

std::string StopStringMatcher::flush() {
  std::string out;
  out.swap(pending_);
  return out;
}

}  // namespace nf::infer
