#include "core/thread_team.h"

#include <omp.h>

#include <strings.h>

#include <atomic>
#include <cstdlib>
#include <exception>
#include <memory>
#include <mutex>

#include "nanoformer/core/parallel.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace nf {
namespace {

// Piece p's state in job j: open (no thread has it yet), taken by its thread, or run by the holder
enum PieceState : uint64_t { kOpen = 1, kTaken = 2, kHolders = 3 };
constexpr uint64_t slot_value(uint32_t job, PieceState state) { return uint64_t{job} << 2 | state; }
struct alignas(64) Slot {
  std::atomic<uint64_t> state{0};
};

// One job at a time: the holder writes it, opens each piece's slot, then bumps `generation`. Thread
// p takes its piece by turning its slot from open to taken, runs it, and acknowledges it; the holder,
// once its own piece is done, runs every piece still open itself (a thread its core has not run
// since, because other processes share the cores, would hold the step for a time slice or more) and
// waits only for those taken. No thread reads a job's fields unless it took a piece of it, and the
// holder writes the next job's only once each piece taken is acknowledged.
struct Team {
  alignas(64) std::atomic<uint32_t> generation{0};
  std::atomic<int> asleep{0};  // workers asleep on `generation`
  alignas(64) std::atomic<uint32_t> acknowledged{0};
  std::atomic<int> holder_asleep{0};  // the holder asleep on `acknowledged`
  alignas(64) team::Piece piece = nullptr;
  void* fn = nullptr;
  int64_t n = 0, pieces = 0;
  uint32_t job = 0;
  std::unique_ptr<Slot[]> slots;  // piece p's, p = 1 .. size - 1
  int size = 1;
  std::atomic<bool> finished{false};  // set before the last generation: the workers leave
  std::mutex error_mutex;
  std::exception_ptr error;  // the first piece's exception of the current job

  void note(std::exception_ptr e) {
    std::lock_guard<std::mutex> lock(error_mutex);
    if (!error) error = std::move(e);
  }
};

thread_local Team* t_team = nullptr;  // the team this thread holds, when not running a piece

// A waiting thread spins (pause, ~27 ns on a Zen 4) this many turns, as libgomp's threads do with
// the GOMP_SPINCOUNT=10000 that nanoformer runs with (README, "Environment"): far longer than a
// decode step's serial stretches between its products, so on an idle machine no thread sleeps
// inside a step. Past that it sleeps on the value (a futex), counted in `asleep` so that the writer
// makes the system call only when someone sleeps: threads that only spun would hold their cores from
// other work and be preempted in turn. (Beside two busy processes on 2 cores, minimind2-small Q8_0
// decoded at 46-603 tokens/s with OpenMP regions and 60-655 with this team, medians of 6 runs 558
// and 574; spinning alone 206-276, 128 turns before sleeping 6-445.)
constexpr int kSpinsBeforeSleep = 10000;

inline void pause() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#endif
}

// Returns once `value` differs from `old`. (seq_cst: the sleeper's count before its last look at
// the value, against the writer's change before its look at the count; one of the two sees the other.)
void wait_while(const std::atomic<uint32_t>& value, uint32_t old, std::atomic<int>& asleep) {
  for (int spins = 0; spins < kSpinsBeforeSleep; ++spins) {
    if (value.load(std::memory_order_acquire) != old) return;
    pause();
  }
  asleep.fetch_add(1, std::memory_order_seq_cst);
  while (value.load(std::memory_order_seq_cst) == old) value.wait(old, std::memory_order_acquire);
  asleep.fetch_sub(1, std::memory_order_relaxed);
}

// `value` advanced by one, its sleepers woken
void advance(std::atomic<uint32_t>& value, std::atomic<int>& asleep) {
  value.fetch_add(1, std::memory_order_seq_cst);
  if (asleep.load(std::memory_order_seq_cst) > 0) value.notify_all();
}

void run_piece(Team& team, int64_t p) {
  try {
    team.piece(team.fn, team.n * p / team.pieces, team.n * (p + 1) / team.pieces);
  } catch (...) {
    team.note(std::current_exception());
  }
}

// Thread `index` (1 .. size - 1) of the team: piece `index` of each job it wakes to while that piece
// is still open, until the holder finishes.
void serve(Team& team, int index) {
  uint32_t seen = 0;
  std::atomic<uint64_t>& slot = team.slots[static_cast<size_t>(index)].state;
  for (;;) {
    wait_while(team.generation, seen, team.asleep);
    seen = team.generation.load(std::memory_order_acquire);
    if (team.finished.load(std::memory_order_acquire)) return;
    uint64_t state = slot.load(std::memory_order_acquire);
    if ((state & 3) != kOpen || !slot.compare_exchange_strong(state, (state & ~uint64_t{3}) | kTaken, std::memory_order_acq_rel))
      continue;  // (no piece of this job, or the holder ran it)
    run_piece(team, index);
    advance(team.acknowledged, team.holder_asleep);
  }
}

// OMP_WAIT_POLICY=passive: the user asks that waiting threads not spin (read at each call, as libgomp
// reads it once; a team would spin through the step)
bool passive_wait() {
  const char* policy = std::getenv("OMP_WAIT_POLICY");
  return policy != nullptr && strcasecmp(policy, "passive") == 0;
}

}  // namespace

void with_thread_team(const std::function<void()>& fn) {
  const int threads = num_threads();
  // (more threads than the processors this process may run on: spinning threads would take turns
  // on a core, each hand-off waiting out a time slice)
  if (threads <= 1 || threads > omp_get_num_procs() || t_team != nullptr || omp_in_parallel() || passive_wait())
    return fn();
  Team team;
  team.slots = std::make_unique<Slot[]>(static_cast<size_t>(threads));
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
      team.finished.store(true, std::memory_order_release);
      advance(team.generation, team.asleep);
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
  const uint32_t job = ++team.job;
  team.acknowledged.store(0, std::memory_order_relaxed);
  for (int64_t p = 1; p < pieces; ++p) team.slots[static_cast<size_t>(p)].state.store(slot_value(job, kOpen), std::memory_order_release);
  advance(team.generation, team.asleep);
  t_team = nullptr;  // the holder's pieces' own parallel_for calls run inline
  run_piece(team, 0);
  uint32_t taken = 0;  // pieces the team's threads took
  for (int64_t p = 1; p < pieces; ++p) {
    uint64_t open = slot_value(job, kOpen);
    if (team.slots[static_cast<size_t>(p)].state.compare_exchange_strong(open, slot_value(job, kHolders), std::memory_order_acq_rel))
      run_piece(team, p);
    else
      ++taken;
  }
  t_team = &team;
  for (uint32_t done; (done = team.acknowledged.load(std::memory_order_acquire)) != taken;)
    wait_while(team.acknowledged, done, team.holder_asleep);
  if (team.error) {
    std::exception_ptr e = std::move(team.error);
    team.error = nullptr;
    std::rethrow_exception(e);
  }
}

}  // namespace team
}  // namespace nf
