// `nanoformer allreduce-bench`: the all-reduce bandwidth between the ranks of an mpirun job
// (dist/allreduce_bench.h), for docs/scaling.md's estimates.
#include <cstdio>
#include <memory>
#include <vector>

#include "command.h"
#include "nanoformer/dist/allreduce_bench.h"

namespace nf::cli {

void add_allreduce_bench_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("allreduce-bench",
                                 "Measure the all-reduce bandwidth between ranks (run it under mpirun):\n"
                                 "  mpirun -np 2 nanoformer allreduce-bench --sizes-mb 1,16,64");
  auto sizes = std::make_shared<std::vector<double>>(std::vector<double>{1, 4, 16, 64});
  auto repeats = std::make_shared<int>(10);
  cmd->add_option("--sizes-mb", *sizes, "Message sizes in MiB")->delimiter(',')->capture_default_str();
  cmd->add_option("--repeats", *repeats, "Timed all-reduces per size (the median is reported)")->capture_default_str();
  cmd->callback([sizes, repeats] {
    dist::Communicator& world = dist::world();
    if (world.rank() == 0) std::printf("%s\n%10s %12s %14s\n", world.describe().c_str(), "MiB", "median ms", "bus GB/s");
    for (double mb : *sizes) {
      const dist::AllreduceTiming t = dist::time_allreduce(world, static_cast<int64_t>(mb * (1 << 20)), *repeats);
      if (world.rank() == 0)
        std::printf("%10.2f %12.3f %14.3f\n", static_cast<double>(t.bytes) / (1 << 20), t.median_seconds * 1e3,
                    t.bus_bytes_per_second / 1e9);
    }
  });
}

}  // namespace nf::cli
