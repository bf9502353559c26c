#include "nanoformer/dist/allreduce_bench.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include "nanoformer/core/error.h"

namespace nf::dist {

AllreduceTiming time_allreduce(Communicator& comm, int64_t bytes, int repeats) {
  NF_CHECK(bytes >= 4 && repeats > 0, "allreduce-bench: ", bytes, " bytes x ", repeats, " repeats: need >= 4 bytes and >= 1 repeat");
  std::vector<float> data(static_cast<size_t>(bytes / 4), 1.0f);
  std::vector<double> seconds;
  for (int i = 0; i <= repeats; ++i) {  // the first one warms up (connections, buffers)
    const auto start = std::chrono::steady_clock::now();
    comm.allreduce_sum(data.data(), static_cast<int64_t>(data.size()), "the benchmark all-reduce");
    if (i > 0) seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(seconds.begin(), seconds.end());
  AllreduceTiming t;
  t.bytes = static_cast<int64_t>(data.size() * 4);
  t.median_seconds = seconds[seconds.size() / 2];
  const double n = comm.size();
  t.bus_bytes_per_second = n > 1 ? 2 * (n - 1) / n * static_cast<double>(t.bytes) / t.median_seconds : 0;
  return t;
}

}  // namespace nf::dist
