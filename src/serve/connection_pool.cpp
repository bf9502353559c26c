// A bounded pool of connection threads that refuses overflow at once (connection_pool.h).
#include "connection_pool.h"

namespace nf::serve {
namespace {

thread_local bool t_refusing = false;

}  // namespace

ConnectionPool::ConnectionPool(size_t capacity, std::function<void()> idle) : capacity_(capacity), idle_(std::move(idle)) {}

ConnectionPool::~ConnectionPool() { shutdown(); }

bool ConnectionPool::refusing() { return t_refusing; }

void ConnectionPool::enqueue(std::function<void()> connection) {
  {
    std::lock_guard lock(mutex_);
    if (taken_ < capacity_ && !stopping_) {
      ++taken_;
      waiting_.push_back(std::move(connection));
      if (threads_.size() < taken_) threads_.emplace_back([this] { work(); });
      ready_.notify_one();
      return;
    }
  }
  t_refusing = true;  // the connection's own code answers it 503 and closes it
  connection();
  t_refusing = false;
}

void ConnectionPool::on_idle() {
  if (idle_) idle_();
}

void ConnectionPool::work() {
  for (;;) {
    std::function<void()> connection;
    {
      std::unique_lock lock(mutex_);
      ready_.wait(lock, [&] { return stopping_ || !waiting_.empty(); });
      if (waiting_.empty()) return;  // stopping, and nothing left
      connection = std::move(waiting_.front());
      waiting_.pop_front();
    }
    connection();
    std::lock_guard lock(mutex_);
    --taken_;
  }
}

void ConnectionPool::shutdown() {
  {
    std::lock_guard lock(mutex_);
    if (stopping_) return;
    stopping_ = true;
  }
  ready_.notify_all();
  for (std::thread& t : threads_) t.join();
}

}  // namespace nf::serve
