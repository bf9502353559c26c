#include "core/thread_team.h"

#include <omp.h>

#include <atomic>
#include <exception>
#include <mutex>
#include <thread>

#include "nanoformer/core/parallel.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace nf {
namespace {

// One job at a time: the holder writes it, then bumps `generation`; each other thread runs its
// piece (if it has one) and acknowledges every job, so the holder's next job never overwrites one
// still being read.
struct Team {
  alignas(64) std::atomic<uint64_t> generation{0};
  alignas(64) std::atomic<int> acknowledged{0};
  alignas(64) team::Piece piece = nullptr;
  void* fn = nullptr;
  int64_t n = 0, pieces = 0;
  int size = 1;
  bool finished = false;  // written before the last generation: the workers leave
  std::mutex error_mutex;
  std::exception_ptr error;  // the first piece's exception of the current job

  void note(std::exception_ptr e) {
    std::lock_guard<std::mutex> lock(error_mutex);
    if (!error) error = std::move(e);
  }
};

thread_local Team* t_team = nullptr;  // the team this thread holds, when not running a piece

// A waiting thread spins (pause); past this many turns (some 10 us: longer than the step's serial
// stretches between products) it yields its core each turn, so that a thread the system took the
// core from gets it back soon.
constexpr int kSpinsBeforeYield = 2048;

inline void spin_turn(int& spins) {
  if (++spins > kSpinsBeforeYield) {
    std::this_thread::yield();
    return;
  }
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#endif
}

void run_piece(Team& team, int64_t p) {
  try {
    team.piece(team.fn, team.n * p / team.pieces, team.n * (p + 1) / team.pieces);
  } catch (...) {
    team.note(std::current_exception());
  }
}

// Thread `index` (1 .. size - 1) of the team: every job's piece `index`, until the holder finishes.
void serve(Team& team, int index) {
  uint64_t seen = 0;
  for (;;) {
    int spins = 0;
    uint64_t now;
    while ((now = team.generation.load(std::memory_order_acquire)) == seen) spin_turn(spins);
    seen = now;
    if (team.finished) return;
    if (index < team.pieces) run_piece(team, index);
    team.acknowledged.fetch_add(1, std::memory_order_release);
  }
}

}  // namespace

void with_thread_team(const std::function<void()>& fn) {
  const int threads = num_threads();
  // (more threads than the processors this process may run on: spinning threads would take turns
  // on a core, each hand-off waiting out a time slice)
  if (threads <= 1 || threads > omp_get_num_procs() || t_team != nullptr || omp_in_parallel()) return fn();
  Team team;
  std::exception_ptr error;
#pragma omp parallel num_threads(threads)
  {
    if (omp_get_thread_num() == 0) {
      team.size = omp_get_num_threads();  // (the workers read only their own index and each job)
      t_team = &team;
      try {
        fn();
      } catch (...) {
        error = std::current_exception();
      }
      t_team = nullptr;
      team.finished = true;
      team.generation.fetch_add(1, std::memory_order_release);
    } else {
      serve(team, omp_get_thread_num());
    }
  }
  if (error) std::rethrow_exception(error);
}

namespace team {

int size() { return t_team != nullptr ? t_team->size : 0; }

void run(int64_t n, int64_t pieces, Piece piece, void* fn) {
  Team& team = *t_team;
  team.piece = piece;
  team.fn = fn;
  team.n = n;
  team.pieces = pieces;
  team.acknowledged.store(0, std::memory_order_relaxed);
  team.generation.fetch_add(1, std::memory_order_release);
  t_team = nullptr;  // piece 0's own parallel_for calls run inline
  run_piece(team, 0);
  t_team = &team;
  int spins = 0;
  while (team.acknowledged.load(std::memory_order_acquire) != team.size - 1) spin_turn(spins);
  if (team.error) {
    std::exception_ptr e = std::move(team.error);
    team.error = nullptr;
    std::rethrow_exception(e);
  }
}

}  // namespace team
}  // namespace nf
