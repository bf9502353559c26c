#pragma once
// Sockets already answered, closed a moment later instead of at once (nginx's "lingering close"):
// closing a socket whose client is still sending makes the kernel reset the connection, and a
// client that was sending its request (Python's http.client sends the head, then the body) gets
// that reset instead of reading the answer. Each socket added is shut for writing (the client sees
// the answer end) and closed once `linger` has passed, by close_expired(); at most `capacity` wait,
// the oldest closed first beyond that. Thread-safe.
#include <chrono>
#include <cstddef>
#include <deque>
#include <mutex>
#include <utility>

namespace nf::serve {

class LingeringClose {
 public:
  LingeringClose(std::chrono::milliseconds linger, size_t capacity);
  ~LingeringClose();  // closes every socket still waiting
  // Takes the socket: shuts its write side now, closes it later (and closes those expired).
  void add(int socket);
  // Closes the sockets whose linger has passed.
  void close_expired();

 private:
  using Clock = std::chrono::steady_clock;

  std::chrono::milliseconds linger_;
  size_t capacity_;
  std::mutex mutex_;
  std::deque<std::pair<int, Clock::time_point>> waiting_;  // socket, when to close it (oldest first)
};

}  // namespace nf::serve
