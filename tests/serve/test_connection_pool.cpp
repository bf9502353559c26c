// The server's bounded connection pool (serve/connection_pool.h): connections up to the capacity
// run on pool threads at once, side by side; one beyond is not queued but run at once on the
// caller's thread with refusing() true; a place freed serves the next; shutdown waits for those taken.
#include "serve/connection_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>

namespace nf::serve {
namespace {

using namespace std::chrono_literals;

TEST(ConnectionPool, BeyondItsCapacityAConnectionIsRefusedAtOnceOnTheCallersThread) {
  ConnectionPool pool(2);
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<int> running = 0, refused = 0, served = 0;
  std::thread::id caller = std::this_thread::get_id(), refused_on;
  const auto connection = [&] {
    if (ConnectionPool::refusing()) {
      ++refused;
      refused_on = std::this_thread::get_id();
      return;
    }
    ++running;
    released.wait();  // held open, as a slow client holds its connection
    ++served;
  };
  pool.enqueue(connection);
  pool.enqueue(connection);
  for (int i = 0; i < 6000 && running < 2; ++i) std::this_thread::sleep_for(10ms);
  ASSERT_EQ(running, 2);  // both at once: each on a thread of its own
  pool.enqueue(connection);  // returns only because it is refused, not queued behind the two
  EXPECT_EQ(refused, 1);
  EXPECT_EQ(refused_on, caller);
  EXPECT_FALSE(ConnectionPool::refusing());  // only while the refused one runs

  release.set_value();
  for (int i = 0; i < 6000 && served < 2; ++i) std::this_thread::sleep_for(10ms);
  ASSERT_EQ(served, 2);
  bool taken = false;  // a freed place takes the next (a place is counted free just after its connection ends)
  for (int i = 0; i < 6000 && !taken; ++i) {
    const int refused_before = refused;
    pool.enqueue(connection);
    taken = refused == refused_before;
    if (!taken) std::this_thread::sleep_for(10ms);
  }
  EXPECT_TRUE(taken);
  pool.shutdown();  // waits for it
  EXPECT_EQ(served, 3);
}

}  // namespace
}  // namespace nf::serve
