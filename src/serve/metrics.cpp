// /metrics in Prometheus's text format (serve/metrics.h).
#include "metrics.h"

#include <charconv>

#include "nanoformer/core/storage.h"

namespace nf::serve {
namespace {

// A label's value: backslash, double quote and newline escaped, as the format asks.
std::string label_value(const std::string& text) {
  std::string out;
  for (const char c : text) {
    if (c == '\\' || c == '"') out += '\\', out += c;
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

// the shortest text that reads back as the same double
std::string number(double value) {
  char buffer[32];
  return std::string(buffer, std::to_chars(buffer, buffer + sizeof buffer, value).ptr);
}

// "# HELP name help\n# TYPE name type\n"
void header(std::string& out, const char* name, const char* type, const char* help) {
  out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

void metric(std::string& out, const char* name, const char* type, const char* help, double value) {
  header(out, name, type, help);
  out += std::string(name) + " " + number(value) + "\n";
}

}  // namespace

void RequestCounts::add(const std::string& path, int status) {
  static const char* const kRoutes[] = {"/", "/health", "/metrics", "/v1/models", "/v1/chat/completions", "/v1/completions"};
  std::string endpoint = "other";
  for (const char* route : kRoutes)
    if (path == route) endpoint = route;
  if (path.rfind("/v1/models/", 0) == 0 && path.size() > 11) endpoint = "/v1/models/{id}";
  std::lock_guard lock(mutex_);
  ++counts_[{endpoint, status}];
}

std::map<std::pair<std::string, int>, int64_t> RequestCounts::snapshot() const {
  std::lock_guard lock(mutex_);
  return counts_;
}

std::string prometheus_text(const std::string& model, const SchedulerStats& s,
                            const std::map<std::pair<std::string, int>, int64_t>& requests) {
  std::string out;
  header(out, "nanoformer_info", "gauge", "The model served (always 1).");
  out += "nanoformer_info{model=\"" + label_value(model) + "\"} 1\n";
  header(out, "nanoformer_requests_total", "counter", "HTTP requests answered, by endpoint and status code.");
  for (const auto& [key, count] : requests)
    out += "nanoformer_requests_total{endpoint=\"" + label_value(key.first) + "\",code=\"" + std::to_string(key.second) +
           "\"} " + std::to_string(count) + "\n";
  metric(out, "nanoformer_prompt_tokens_total", "counter", "Prompt tokens of the sequences started.",
         static_cast<double>(s.prompt_tokens));
  metric(out, "nanoformer_prompt_tokens_cached_total", "counter",
         "Of those, tokens found in a slot's KV cache or the prefix cache and not prefilled again.",
         static_cast<double>(s.cached_tokens));
  metric(out, "nanoformer_prompt_tokens_computed_total", "counter", "Of those, tokens prefilled (computed).",
         static_cast<double>(s.prompt_tokens - s.cached_tokens));
  metric(out, "nanoformer_prompt_tokens_prefix_cached_total", "counter",
         "Of the cached tokens, those whose KV blocks the prefix cache gave.", static_cast<double>(s.prefix_cached_tokens));
  metric(out, "nanoformer_kv_cache_bytes", "gauge", "KV cache bytes held by the slots and the prefix cache (each block once).",
         static_cast<double>(s.kv_bytes));
  metric(out, "nanoformer_kv_cache_slot_bytes", "gauge",
         "Of those, the slots' (the prefix cache's blocks that no slot holds left out).", static_cast<double>(s.slot_kv_bytes));
  metric(out, "nanoformer_tensor_bytes", "gauge",
         "Bytes of every live tensor's storage (weights copied at load, KV caches, a step's activations).",
         static_cast<double>(memory::current_bytes()));
  metric(out, "nanoformer_tensor_bytes_peak", "gauge", "The most that nanoformer_tensor_bytes has been.",
         static_cast<double>(memory::peak_bytes()));
  metric(out, "nanoformer_prefix_cache_blocks", "gauge", "KV blocks in the prefix cache (in use or not).",
         static_cast<double>(s.prefix_cache_blocks));
  metric(out, "nanoformer_prefix_cache_bytes", "gauge", "Their bytes.", static_cast<double>(s.prefix_cache_bytes));
  metric(out, "nanoformer_prefix_cache_budget_bytes", "gauge", "--cache-budget (0: no prefix cache).",
         static_cast<double>(s.cache_budget));
  metric(out, "nanoformer_prefix_cache_evicted_blocks_total", "counter",
         "Unused blocks the prefix cache dropped to stay within its budget.", static_cast<double>(s.prefix_cache_evicted));
  metric(out, "nanoformer_generated_tokens_total", "counter", "Tokens generated (sampled), every sequence's.",
         static_cast<double>(s.generated_tokens));
  metric(out, "nanoformer_prefill_seconds_total", "counter", "Seconds spent prefilling prompts.", s.prefill_seconds);
  metric(out, "nanoformer_prefill_step_seconds_max", "gauge",
         "The longest prefill step (a --prefill-chunk, or a whole prompt): the longest a running stream waited for one.",
         s.longest_prefill_step_seconds);
  metric(out, "nanoformer_decode_seconds_total", "counter",
         "Seconds spent in batched decode steps (their tokens: generated minus one per sequence).", s.decode_seconds);
  metric(out, "nanoformer_decode_steps_total", "counter", "Batched decode steps.", static_cast<double>(s.decode_steps));
  metric(out, "nanoformer_decoded_rows_total", "counter", "Rows (sequences) decoded by those steps.",
         static_cast<double>(s.decoded_rows));
  metric(out, "nanoformer_decode_tokens_per_second", "gauge",
         "Decoded rows per second of decode steps, since the server started (a verified draft counts one).",
         s.decode_seconds > 0 ? static_cast<double>(s.decoded_rows) / s.decode_seconds : 0.0);
  metric(out, "nanoformer_draft_tokens_total", "counter",
         "Speculative decoding: tokens drafted (by prompt lookup or the draft model) and verified.", static_cast<double>(s.draft_tokens));
  metric(out, "nanoformer_draft_tokens_accepted_total", "counter",
         "Of those, the tokens taken (each a decode step saved).", static_cast<double>(s.accepted_tokens));
  metric(out, "nanoformer_sequences_completed_total", "counter", "Sequences that ended (a stop, a length, an error).",
         static_cast<double>(s.completed));
  metric(out, "nanoformer_sequences_cancelled_total", "counter", "Sequences cancelled (their client left).",
         static_cast<double>(s.cancelled));
  metric(out, "nanoformer_queue_depth", "gauge", "Sequences waiting for a slot.", static_cast<double>(s.queued));
  metric(out, "nanoformer_queue_capacity", "gauge", "Sequences that may wait at most (--queue).",
         static_cast<double>(s.max_queue));
  metric(out, "nanoformer_slots_busy", "gauge", "Sequences running (taken from the queue, not yet ended).",
         static_cast<double>(s.running));
  metric(out, "nanoformer_slots", "gauge", "Slots: sequences decoded together at most (--parallel).",
         static_cast<double>(s.parallel));
  header(out, "nanoformer_time_to_first_token_seconds", "histogram",
         "From a request's arrival to its first token: the wait in the queue and the prefill.");
  for (size_t i = 0; i < kTimeToFirstTokenBuckets.size(); ++i)
    out += "nanoformer_time_to_first_token_seconds_bucket{le=\"" + number(kTimeToFirstTokenBuckets[i]) + "\"} " +
           std::to_string(s.ttft_buckets[i]) + "\n";
  out += "nanoformer_time_to_first_token_seconds_bucket{le=\"+Inf\"} " + std::to_string(s.ttft_count) + "\n";
  out += "nanoformer_time_to_first_token_seconds_sum " + number(s.ttft_sum) + "\n";
  out += "nanoformer_time_to_first_token_seconds_count " + std::to_string(s.ttft_count) + "\n";
  return out;
}

}  // namespace nf::serve
