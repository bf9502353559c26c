#pragma once
// A decode step's threads held as one team. Inside with_thread_team, each parallel_for
// (ops/cpu/loops/loops.h) hands its pieces to threads already waiting for them (spinning, then
// asleep after as many turns as libgomp's with GOMP_SPINCOUNT=10000), where outside it each call
// opens and closes an OpenMP parallel region. A region costs about 1 us a call with libgomp (2
// threads of a Zen 4: 0.55-0.75 us for an empty region in a loop, 0.9 us inside a minimind2-small
// decode step, which makes ~40 calls a token); a hand-off to the team about 0.1 us.
//
// The team is itself one OpenMP region, so BLAS called inside it runs on the calling thread alone
// (OpenBLAS and oneDNN inside a parallel region). Hold a team only around steps whose products are
// the engine's own kernels: at most kTeamMaxRows rows, whose linears and attention take decode's
// kernels (ops/cpu/matmul/gemv.h, quant/quant_gemv.h, attention/attention_decode.h).
#include <cstdint>
#include <functional>

namespace nf {

inline constexpr int64_t kTeamMaxRows = 16;

// Runs fn on the calling thread while the engine's other threads (num_threads()) wait for its
// parallel_for calls. With one thread, more threads than processors, OMP_WAIT_POLICY=passive,
// inside an OpenMP region or inside a team: fn() alone. An exception from fn or from a piece of its
// parallel_for calls is rethrown here.
void with_thread_team(const std::function<void()>& fn);

namespace team {

// fn(begin, end) for a type-erased callable
using Piece = void (*)(void* fn, int64_t begin, int64_t end);

// The size of the team the calling thread holds: 0 outside with_thread_team and while the
// thread runs a piece (whose own parallel_for then runs inline).
int size();

// Pieces p of [0, n) split as parallel_for splits them, [n p / pieces, n (p + 1) / pieces),
// pieces <= size(): piece 0 on the calling thread, piece p on the team's thread p unless that thread
// has not taken it by the time the calling thread's own is done, which then runs it too (so a
// thread descheduled by another process's work holds no step); returns when every piece has run.
void run(int64_t n, int64_t pieces, Piece piece, void* fn);

}  // namespace team
}  // namespace nf
