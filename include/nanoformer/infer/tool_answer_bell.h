#pragma once
// Rung from a tool's own thread when its answer is ready (tools answered off the decoding thread,
// infer/tool_use.h), so that a decoding loop with nothing else to do sleeps instead of spinning
// until an answer (or, for the server's scheduler, which rings it on each request too, a request)
// arrives. A counter, so that no ring is missed between looking and sleeping:
//
//   seen = bell.rings();   // first
//   ... look at the streams: poll their tools, the queue ...
//   bell.wait(seen, t);    // returns at once when something rang after `seen` was read
//
// Shared (std::shared_ptr) by the loop and every tool thread: a thread that finishes after its
// stream is gone rings a bell that is still there. It also counts the calls in flight, so that
// their owner (the server's scheduler, as it stops) can wait for the last one to end: no tool's
// thread, nor its program, outlives it.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace nf::infer {

class ToolAnswerBell {
 public:
  void ring();
  uint64_t rings() const;
  // Blocks until rings() != seen, or for `timeout` at most.
  void wait(uint64_t seen, std::chrono::milliseconds timeout) const;

  // A call about to start on its thread; and, on that thread, answered (rings).
  void call_started();
  void call_answered();
  // Blocks until every call started is answered.
  void wait_for_calls() const;

 private:
  mutable std::mutex mutex_;
  mutable std::condition_variable rung_;
  uint64_t rings_ = 0;
  int64_t calls_ = 0;  // in flight
};

}  // namespace nf::infer
