#pragma once
// GET /metrics in Prometheus's text format (version 0.0.4): the HTTP requests answered, by endpoint
// and status code, and the scheduler's counters and gauges (serve/scheduler.h's SchedulerStats):
// tokens prompted, found in a cache and generated, the seconds spent prefilling and decoding (their
// ratio over a scrape interval, rate(generated) / rate(decode seconds), is decode tokens/s), the
// queue's depth, the slots in use, and a histogram of the time to first token.
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "nanoformer/serve/scheduler.h"

namespace nf::serve {

// Requests answered, by (endpoint, status): endpoints are the routes' paths (/v1/models/{id} for
// any id), anything else "other", so that a client cannot grow the table.
class RequestCounts {
 public:
  void add(const std::string& path, int status);
  std::map<std::pair<std::string, int>, int64_t> snapshot() const;

 private:
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, int>, int64_t> counts_;
};

std::string prometheus_text(const std::string& model, const SchedulerStats& stats,
                            const std::map<std::pair<std::string, int>, int64_t>& requests);

}  // namespace nf::serve
