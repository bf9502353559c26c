#pragma once
// Measures the all-reduce of a communicator (nanoformer allreduce-bench, docs/scaling.md): the
// median time of `repeats` all-reduces of `bytes` of f32 after one warm-up, and the bus bandwidth
// a ring all-reduce reaches at that time: each rank sends and receives 2 (N - 1) / N x bytes.
#include <cstdint>

#include "nanoformer/dist/communicator.h"

namespace nf::dist {

struct AllreduceTiming {
  int64_t bytes = 0;
  double median_seconds = 0;
  double bus_bytes_per_second = 0;  // 2 (N - 1) / N x bytes / median_seconds (0 for one rank)
};

// Collective: every rank calls it with the same arguments.
AllreduceTiming time_allreduce(Communicator& comm, int64_t bytes, int repeats);

}  // namespace nf::dist
