#pragma once
// cpp-httplib's task queue for the server's connections, bounded: at most `capacity` connections
// are served at once, each on a thread of the pool (threads start as connections need them, up to
// the capacity, and then stay). A connection beyond the capacity is not queued: enqueue() runs it
// at once on the accepting thread with refusing() true, and the server answers it 503 and closes
// it there (http_server.cpp), so that overflow costs no thread and waits for nothing. `idle` runs on
// the accepting thread whenever it has waited a while for a connection (httplib's idle interval).
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include <httplib.h>

namespace nf::serve {

class ConnectionPool final : public httplib::TaskQueue {
 public:
  explicit ConnectionPool(size_t capacity, std::function<void()> idle = nullptr);
  ~ConnectionPool() override;
  void enqueue(std::function<void()> connection) override;
  void on_idle() override;
  // Serves the connections already taken, then joins the threads.
  void shutdown() override;
  // True on the thread running a connection that enqueue() refused.
  static bool refusing();

 private:
  void work();

  size_t capacity_;
  std::function<void()> idle_;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::function<void()>> waiting_;  // taken, not yet on a thread
  std::vector<std::thread> threads_;           // never fewer than taken_: a taken connection never waits for a thread
  size_t taken_ = 0;                           // connections waiting or being served
  bool stopping_ = false;
};

}  // namespace nf::serve
