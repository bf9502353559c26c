// Answered sockets closed after a moment, so their clients read the answer (lingering_close.h).
#include "lingering_close.h"

#include <sys/socket.h>
#include <unistd.h>

namespace nf::serve {

LingeringClose::LingeringClose(std::chrono::milliseconds linger, size_t capacity) : linger_(linger), capacity_(capacity) {}

LingeringClose::~LingeringClose() {
  for (const auto& [socket, when] : waiting_) ::close(socket);
}

void LingeringClose::add(int socket) {
  ::shutdown(socket, SHUT_WR);
  close_expired();
  std::lock_guard lock(mutex_);
  waiting_.emplace_back(socket, Clock::now() + linger_);
  while (waiting_.size() > capacity_) {
    ::close(waiting_.front().first);
    waiting_.pop_front();
  }
}

void LingeringClose::close_expired() {
  const Clock::time_point now = Clock::now();
  std::lock_guard lock(mutex_);
  while (!waiting_.empty() && waiting_.front().second <= now) {
    ::close(waiting_.front().first);
    waiting_.pop_front();
  }
}

}  // namespace nf::serve
