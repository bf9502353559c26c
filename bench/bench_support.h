#pragma once
// Shared by the benchmarks: a reporter that, besides the usual console table, prints the median
// time ratio of each of our benchmarks against its baseline measured in the same run
// (e.g. BM_nf_matmul vs BM_cblas_sgemm at the same arguments). Ratios from one invocation are
// what we compare on a shared, noisy machine, never absolute times across runs.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "nanoformer/core/parallel.h"

namespace nf::bench {

class RatioReporter : public benchmark::ConsoleReporter {
 public:
  // pairs: (ours, baseline) benchmark function names
  explicit RatioReporter(std::vector<std::pair<std::string, std::string>> pairs) : pairs_(std::move(pairs)) {}

  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs) {
      if (r.error_occurred) continue;
      const bool median = r.run_type == Run::RT_Aggregate && r.aggregate_name == "median";
      const bool single = r.run_type == Run::RT_Iteration && r.repetitions <= 1;
      if (median || single) times_[r.run_name.function_name][r.run_name.args] = r.GetAdjustedRealTime();
    }
  }

  void Finalize() override {
    ConsoleReporter::Finalize();
    if (pairs_.empty()) return;
    std::printf("\nmedian throughput of ours relative to the baseline, same run (1.00 = equal, > 1 = faster):\n");
    for (const auto& [ours, base] : pairs_) {
      for (const auto& [args, t_ours] : times_[ours]) {
        auto it = times_[base].find(args);
        if (it == times_[base].end()) continue;
        std::printf("  %-22s vs %-22s %-24s %.3f\n", ours.c_str(), base.c_str(), args.c_str(), it->second / t_ours);
      }
    }
  }

 private:
  std::vector<std::pair<std::string, std::string>> pairs_;
  std::map<std::string, std::map<std::string, double>> times_;
};

// Initialises Google Benchmark, records the BLAS core and thread count in the context, runs
// everything and prints the ratios of `pairs`.
inline int run_benchmarks(int argc, char** argv, std::vector<std::pair<std::string, std::string>> pairs = {}) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::AddCustomContext("blas", nf::blas_info());
  benchmark::AddCustomContext("threads", std::to_string(nf::num_threads()));
  RatioReporter reporter(std::move(pairs));
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}

}  // namespace nf::bench
