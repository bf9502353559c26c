#pragma once
// The numbers of bench_inference's tables: a series of one kind over the rounds (or why there is
// none), the cells that print its median, and run_into, which runs one side of a measurement as a
// child process and files its JSON line's numbers (and its peak RSS) into series.
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bench_process.h"

namespace nf::bench {

// Numbers of one kind over the rounds, or why there are none.
struct Series {
  std::vector<double> values;
  std::string note;
  std::optional<double> last_of_round;
  void add(double v) { values.push_back(v), last_of_round = v; }
};

// This round's value, or "-" (the round lines; the tables give medians).
inline std::string this_round(const Series& s, const char* format) {
  char buf[32] = "-";
  if (s.last_of_round) std::snprintf(buf, sizeof buf, format, *s.last_of_round);
  return buf;
}

inline std::string cell(const Series& s, const char* format, double scale = 1) {
  if (s.values.empty()) return "n/a";
  char buf[64];
  std::snprintf(buf, sizeof buf, format, scale * median(s.values));
  return buf;
}

// One preset's measurements; keys: "prefill", "decode", "peak", "bandwidth", "gemv", "sgemm", and
// ratios "prefill/torch", "decode/torch", "decode/limit".
using Results = std::map<std::string, Series>;

// Runs a worker; each (JSON key, series) pair takes its value, `peak` the process's peak RSS. A
// failure leaves the round's values empty and notes what the worker said last (its stderr is
// passed on to ours when it succeeds: NF_PROFILE's tables).
inline bool run_into(const std::vector<std::string>& command, const std::vector<std::pair<const char*, Series*>>& keys,
                     Series* peak = nullptr) {
  for (const auto& key : keys) key.second->last_of_round.reset();
  const ProcessResult r = run_process(command, true);
  const std::optional<json> j = last_json(r);
  if (!j) {
    for (const auto& key : keys) key.second->note = "failed: " + failure_line(r);
    return false;
  }
  std::fputs(r.err.c_str(), stderr);
  for (const auto& [name, series] : keys) series->add((*j)[name].get<double>());
  if (peak) peak->add(r.peak_mib);
  return true;
}

}  // namespace nf::bench
