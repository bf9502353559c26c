#include "nanoformer/core/profile.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

namespace nf::profile {
namespace {

using Clock = std::chrono::steady_clock;

bool& enabled_flag() {
  static bool on = [] {
    const char* env = std::getenv("NF_PROFILE");
    return env != nullptr && *env != '\0' && std::strcmp(env, "0") != 0;
  }();
  return on;
}

// One open scope: its name, start, and the time of scopes nested in it so far.
struct Frame {
  const char* name;
  Clock::time_point start;
  double nested = 0;
  bool backward;
};

thread_local std::vector<Frame> t_stack;
thread_local bool t_backward = false;

std::mutex g_mutex;
std::map<std::string, Entry>& table() {
  static auto* t = new std::map<std::string, Entry>();  // never destroyed: scopes may close late
  return *t;
}

}  // namespace

bool enabled() { return enabled_flag(); }
void set_enabled(bool on) { enabled_flag() = on; }

void Scope::start(const char* name) {
  active_ = true;
  t_stack.push_back({name, Clock::now(), 0.0, t_backward});
}

void Scope::stop() {
  const Frame f = t_stack.back();
  t_stack.pop_back();
  const double elapsed = std::chrono::duration<double>(Clock::now() - f.start).count();
  if (!t_stack.empty()) t_stack.back().nested += elapsed;
  std::string key = f.name;
  const bool named_backward = key.size() >= 8 && key.compare(key.size() - 8, 8, "backward") == 0;
  if (f.backward && !named_backward) key += " backward";
  std::lock_guard<std::mutex> lock(g_mutex);
  Entry& e = table()[key];
  e.name = key;
  ++e.calls;
  e.seconds += elapsed - f.nested;  // exclusive: nested scopes count to themselves
}

BackwardPhase::BackwardPhase() : previous_(t_backward) { t_backward = true; }
BackwardPhase::~BackwardPhase() { t_backward = previous_; }

std::vector<Entry> entries() {
  std::vector<Entry> out;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    for (const auto& [name, e] : table()) out.push_back(e);
  }
  std::sort(out.begin(), out.end(), [](const Entry& a, const Entry& b) { return a.seconds > b.seconds; });
  return out;
}

void reset() {
  std::lock_guard<std::mutex> lock(g_mutex);
  table().clear();
}

std::string report(double per, double total_seconds) {
  std::string out;
  char line[256];
  std::snprintf(line, sizeof line, "%-44s %10s %8s %7s\n", "op", "ms", "calls", "share");
  out += line;
  double covered = 0;
  const auto row = [&](const std::string& name, double seconds, double calls) {
    const double share = total_seconds > 0 ? 100 * seconds / total_seconds : 0;
    std::snprintf(line, sizeof line, "%-44s %10.2f %8.0f %6.1f%%\n", name.c_str(), 1e3 * seconds / per, calls / per, share);
    out += line;
  };
  for (const Entry& e : entries()) {
    row(e.name, e.seconds, static_cast<double>(e.calls));
    covered += e.seconds;
  }
  if (total_seconds > 0) row("(outside any op)", total_seconds - covered, 0);
  return out;
}

}  // namespace nf::profile
