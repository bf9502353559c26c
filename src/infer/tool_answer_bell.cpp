// A wake-up counter for loops waiting on tools' threads (infer/tool_answer_bell.h).
#include "nanoformer/infer/tool_answer_bell.h"

namespace nf::infer {

void ToolAnswerBell::ring() {
  {
    std::lock_guard lock(mutex_);
    ++rings_;
  }
  rung_.notify_all();
}

uint64_t ToolAnswerBell::rings() const {
  std::lock_guard lock(mutex_);
  return rings_;
}

void ToolAnswerBell::wait(uint64_t seen, std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mutex_);
  rung_.wait_for(lock, timeout, [&] { return rings_ != seen; });
}

void ToolAnswerBell::call_started() {
  std::lock_guard lock(mutex_);
  ++calls_;
}

void ToolAnswerBell::call_answered() {
  {
    std::lock_guard lock(mutex_);
    --calls_;
    ++rings_;
  }
  rung_.notify_all();
}

void ToolAnswerBell::wait_for_calls() const {
  std::unique_lock lock(mutex_);
  rung_.wait(lock, [&] { return calls_ == 0; });
}

}  // namespace nf::infer
