#pragma once
// Wall-time profile by op, for finding what a training step spends its time on. Off unless the
// environment sets NF_PROFILE (to anything but 0) or set_enabled(true) is called; when off, a
// Scope costs one branch. Every kernel call made through a DeviceKernels table (core/dispatch.h)
// is timed under its op's name, those of a backward pass (autograd's engine) under
// "<op> backward"; code may add its own scopes ("optimizer step"). Time is exclusive: a scope
// nested in another counts only to the inner one.
//
//   NF_PROFILE=1 ./build/bench_training --worker fp32      (prints the table per step)
#include <cstdint>
#include <string>
#include <vector>

namespace nf::profile {

bool enabled();
void set_enabled(bool on);

// Times its lifetime under `name` (a string that outlives the scope, e.g. a literal) when enabled.
class Scope {
 public:
  explicit Scope(const char* name) {
    if (enabled()) start(name);
  }
  ~Scope() {
    if (active_) stop();
  }
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

 private:
  void start(const char* name);
  void stop();
  bool active_ = false;
};

// While alive, scopes on this thread are recorded as part of a backward pass.
class BackwardPhase {
 public:
  BackwardPhase();
  ~BackwardPhase();
  BackwardPhase(const BackwardPhase&) = delete;
  BackwardPhase& operator=(const BackwardPhase&) = delete;

 private:
  bool previous_;
};

struct Entry {
  std::string name;
  int64_t calls = 0;
  double seconds = 0;  // exclusive
};

// Everything recorded since the last reset, the longest first.
std::vector<Entry> entries();
void reset();
// A table of entries(): ms and calls divided by `per` (e.g. the number of steps), each entry's
// share of `total_seconds` when given, and the time no scope covered.
std::string report(double per = 1, double total_seconds = 0);

}  // namespace nf::profile
