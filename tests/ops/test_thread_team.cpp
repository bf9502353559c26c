// parallel_for inside with_thread_team (core/thread_team.h): the team's threads take the same
// pieces an OpenMP region would, every index once, each job after the last one's writes; a piece
// whose thread has not taken it when the holder's own is done runs on the holder; nested
// calls run inline; exceptions reach the caller from any thread, with a team and without one (3
// threads on a 2-core machine hold none). A decode step's logits with a team:
// tests/models/test_cached_decoding.cpp.
#include <omp.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <cstdlib>
#include <string>
#include <mutex>
#include <set>
#include <stdexcept>
#include <utility>
#include <vector>

#include "core/thread_team.h"
#include "ops/cpu/loops/loops.h"
#include "support/testing.h"

namespace nf {
namespace {

using Pieces = std::set<std::pair<int64_t, int64_t>>;

// The pieces a parallel_for of n in grains of `grain` ran, and each index's visits
Pieces pieces_of(int64_t n, int64_t grain, std::vector<int>& visits) {
  Pieces pieces;
  std::mutex mutex;
  visits.assign(static_cast<size_t>(n), 0);
  cpu::parallel_for(n, grain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) ++visits[static_cast<size_t>(i)];
    std::lock_guard<std::mutex> lock(mutex);
    pieces.insert({begin, end});
  });
  return pieces;
}

class ThreadTeam : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override { set_num_threads(GetParam()); }
  void TearDown() override { set_num_threads(2); }
  // whether with_thread_team holds a team at this thread count (not past the processors)
  static bool held() { return GetParam() > 1 && GetParam() <= omp_get_num_procs(); }
};

TEST_P(ThreadTeam, TakesTheSamePiecesAsAnOpenMpRegionAndEveryIndexOnce) {
  for (const auto& [n, grain] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {7, 1}, {1000, 1}, {1000, 300}, {5, 10}}) {
    std::vector<int> outside_visits, inside_visits;
    const Pieces outside = pieces_of(n, grain, outside_visits);
    Pieces inside;
    int team_size = 0;
    with_thread_team([&] {
      team_size = team::size();
      inside = pieces_of(n, grain, inside_visits);
    });
    EXPECT_EQ(team_size, held() ? GetParam() : 0);
    EXPECT_EQ(inside, outside) << "n " << n << ", grain " << grain;
    EXPECT_EQ(inside_visits, std::vector<int>(static_cast<size_t>(n), 1)) << "n " << n << ", grain " << grain;
  }
}

TEST_P(ThreadTeam, ManyHandOffsInARowEachSeeTheWritesOfTheLast) {
  // job t reads what every piece of job t - 1 wrote (two buffers in turn): a piece run twice, late,
  // or not at all, or a write not yet seen, changes the values
  constexpr int64_t kValues = 64, kJobs = 20000, kModulus = 1000003;
  const auto step = [](const std::vector<int64_t>& in, std::vector<int64_t>& out, int64_t job, int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      out[static_cast<size_t>(i)] = (in[static_cast<size_t>(i)] + 3 * in[static_cast<size_t>((i + 1) % kValues)] + job) % kModulus;
  };
  std::vector<int64_t> a(kValues), b(kValues, 0);
  for (int64_t i = 0; i < kValues; ++i) a[static_cast<size_t>(i)] = i;
  std::vector<int64_t> serial_a = a, serial_b = b;
  with_thread_team([&] {
    for (int64_t job = 0; job < kJobs; ++job)
      cpu::parallel_for(kValues, 1, [&](int64_t begin, int64_t end) {
        if (job % 2 == 0) step(a, b, job, begin, end);
        else step(b, a, job, begin, end);
      });
  });
  for (int64_t job = 0; job < kJobs; ++job) {
    if (job % 2 == 0) step(serial_a, serial_b, job, 0, kValues);
    else step(serial_b, serial_a, job, 0, kValues);
  }
  EXPECT_EQ(a, serial_a);
}

TEST_P(ThreadTeam, ThreadsAsleepWakeForTheNextJobAndTheHolderForTheLastPiece) {
  // the holder's pauses between jobs and each last piece outlast the spinning (~0.3 ms): the team's
  // threads fall asleep before each job, the holder before each job's last acknowledgement (its own
  // first piece lasts long enough for a sleeping thread to wake and take the last one, so the
  // holder waits for it rather than running it)
  constexpr int64_t kJobs = 12;
  std::vector<int64_t> sums(kJobs, 0);
  with_thread_team([&] {
    for (int64_t job = 0; job < kJobs; ++job) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      std::mutex mutex;
      cpu::parallel_for(8, 1, [&](int64_t begin, int64_t end) {
        if (begin == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        if (end == 8) std::this_thread::sleep_for(std::chrono::milliseconds(2));
        std::lock_guard<std::mutex> lock(mutex);
        for (int64_t i = begin; i < end; ++i) sums[static_cast<size_t>(job)] += i + job;
      });
    }
  });
  for (int64_t job = 0; job < kJobs; ++job) EXPECT_EQ(sums[static_cast<size_t>(job)], 28 + 8 * job) << "job " << job;
}

TEST_P(ThreadTeam, APieceItsThreadHasNotTakenYetRunsOnTheHolder) {
  // after a pause the team's threads sleep, and waking takes microseconds: the holder, its own
  // piece done at once, runs the others itself rather than wait for threads that are not running
  // (another process's work on their cores would hold each hand-off for a time slice)
  if (!held()) GTEST_SKIP() << "no team at " << GetParam() << " threads on " << omp_get_num_procs() << " processors";
  const std::thread::id holder = std::this_thread::get_id();
  int on_the_holder = 0;
  with_thread_team([&] {
    for (int job = 0; job < 10; ++job) {
      std::this_thread::sleep_for(std::chrono::milliseconds(3));
      std::mutex mutex;
      std::vector<int> visits(static_cast<size_t>(GetParam()), 0);
      cpu::parallel_for(GetParam(), 1, [&](int64_t begin, int64_t end) {
        std::lock_guard<std::mutex> lock(mutex);
        for (int64_t i = begin; i < end; ++i) {
          ++visits[static_cast<size_t>(i)];
          on_the_holder += i > 0 && std::this_thread::get_id() == holder;
        }
      });
      EXPECT_EQ(visits, std::vector<int>(static_cast<size_t>(GetParam()), 1)) << "job " << job;
    }
  });
  EXPECT_GT(on_the_holder, 0);
}

TEST_P(ThreadTeam, NestedCallsRunInline) {
  std::vector<int> visits(100, 0);
  std::atomic<int> nested_teams{0};
  with_thread_team([&] {
    with_thread_team([&] { nested_teams += team::size() > 0; });  // a team inside a team: fn alone
    cpu::parallel_for(10, 1, [&](int64_t begin, int64_t end) {
      EXPECT_EQ(team::size(), 0);  // a piece holds no team
      for (int64_t i = begin; i < end; ++i)
        cpu::parallel_for(10, 1, [&](int64_t b, int64_t e) {
          for (int64_t j = b; j < e; ++j) ++visits[static_cast<size_t>(10 * i + j)];
        });
    });
  });
  EXPECT_EQ(visits, std::vector<int>(100, 1));
  EXPECT_EQ(nested_teams.load(), held() ? 1 : 0);
}

TEST_P(ThreadTeam, AnExceptionOnAnyThreadReachesTheCaller) {
  // from the holder's own code
  EXPECT_THROW(with_thread_team([] { throw std::runtime_error("step"); }), std::runtime_error);
  // from a piece on another thread (the last piece), and the team goes on taking work after it
  const int64_t n = 8;
  int after = 0;
  EXPECT_THROW(with_thread_team([&] {
                 try {
                   cpu::parallel_for(n, 1, [&](int64_t, int64_t end) {
                     if (end == n) throw std::invalid_argument("piece");
                   });
                 } catch (const std::invalid_argument&) {
                   cpu::parallel_for(n, 1, [&](int64_t begin, int64_t end) {
                     if (begin == 0) after = static_cast<int>(end);
                   });
                   throw;
                 }
               }),
               std::invalid_argument);
  EXPECT_EQ(after, n / GetParam());
}

TEST_P(ThreadTeam, NoTeamWhenTheWaitPolicyIsPassive) {
  const char* old = std::getenv("OMP_WAIT_POLICY");
  const std::string saved = old ? old : "";
  ::setenv("OMP_WAIT_POLICY", "PASSIVE", 1);
  int team_size = -1;
  std::vector<int> visits;
  with_thread_team([&] {
    team_size = team::size();
    pieces_of(100, 1, visits);
  });
  if (old) ::setenv("OMP_WAIT_POLICY", saved.c_str(), 1);
  else ::unsetenv("OMP_WAIT_POLICY");
  EXPECT_EQ(team_size, 0);
  EXPECT_EQ(visits, std::vector<int>(100, 1));
}

INSTANTIATE_TEST_SUITE_P(Threads, ThreadTeam, ::testing::Values(1, 2, 3));

}  // namespace
}  // namespace nf
