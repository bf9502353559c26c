#pragma once
// What the whole-program benchmarks (bench_training, bench_inference) share: running one side of a
// measurement as a child process (its stdout, exit status and peak RSS), reading the JSON line it
// prints, medians, and the CPU's name.
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "nanoformer/core/error.h"

extern char** environ;

namespace nf::bench {

using nlohmann::json;

inline std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  std::stringstream in(s);
  for (std::string part; std::getline(in, part, sep);) parts.push_back(part);
  return parts;
}

inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

inline std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown";
}

// A finished child process: its stdout (and stderr, when captured), exit status and peak RSS.
struct ProcessResult {
  std::string out, err;
  int status = -1;
  double peak_mib = 0;
  bool ok() const { return WIFEXITED(status) && WEXITSTATUS(status) == 0; }
};

// capture_stderr: the child's stderr goes to r.err (through a temporary file, so that it cannot fill
// a pipe while stdout's is read); otherwise to ours.
inline ProcessResult run_process(const std::vector<std::string>& args, bool capture_stderr = false) {
  int fds[2];
  NF_CHECK(pipe(fds) == 0, "benchmark: pipe failed");
  int err_fd = -1;
  if (capture_stderr) {
    char path[] = "/tmp/nf_bench_stderr_XXXXXX";
    err_fd = mkstemp(path);
    NF_CHECK(err_fd >= 0, "benchmark: cannot make a temporary file in /tmp for a child's stderr");
    unlink(path);  // the open descriptor keeps it until closed
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, fds[0]);
  if (err_fd >= 0) {
    posix_spawn_file_actions_adddup2(&actions, err_fd, STDERR_FILENO);
    posix_spawn_file_actions_addclose(&actions, err_fd);
  }
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int spawned = posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  ProcessResult r;
  if (spawned != 0) {
    close(fds[0]);
    if (err_fd >= 0) close(err_fd);
    r.err = "cannot start " + args[0];
    return r;
  }
  char buf[4096];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) r.out.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  rusage usage{};
  wait4(pid, &r.status, 0, &usage);
  r.peak_mib = static_cast<double>(usage.ru_maxrss) / 1024.0;  // KiB on Linux
  if (err_fd >= 0) {
    lseek(err_fd, 0, SEEK_SET);
    for (ssize_t n; (n = read(err_fd, buf, sizeof buf)) > 0;) r.err.append(buf, static_cast<size_t>(n));
    close(err_fd);
  }
  return r;
}

// Why a child failed: the first line of its stderr that names an error (llama.cpp's loader says
// why before its program says that loading failed), else the last that says "failed", else its
// last non-empty line (cut to 160 characters), else its exit status.
inline std::string failure_line(const ProcessResult& r) {
  std::string last, error, failed;
  for (const std::string& line : split(r.err, '\n')) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    last = line;
    if (error.empty() && line.find("error") != std::string::npos) error = line;
    if (line.find("failed") != std::string::npos) failed = line;
  }
  std::string line = !error.empty() ? error : !failed.empty() ? failed : last;
  if (line.empty()) return "exit status " + std::to_string(r.status);
  if (line.size() > 160) line = line.substr(0, 157) + "...";
  return line;
}

// The last line of a child's output that parses as a JSON object.
inline std::optional<json> last_json(const ProcessResult& r) {
  if (!r.ok()) return std::nullopt;
  std::optional<json> found;
  for (const std::string& line : split(r.out, '\n')) {
    json j = json::parse(line, nullptr, false);
    if (j.is_object()) found = j;
  }
  return found;
}

// The main() of a whole-program benchmark: with --worker, one process's part (worker(options));
// otherwise the driver, which spawns this same binary (its path from /proc/self/exe) as workers.
// An error is one line naming the benchmark, and exit status 1.
template <typename Parse, typename Worker, typename Driver>
int benchmark_main(const char* name, int argc, char** argv, Parse parse, Worker worker, Driver driver) {
  try {
    const auto options = parse(argc, argv);
    if (!options.worker.empty()) return worker(options);
    char self[4096];
    const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    NF_CHECK(n > 0, name, ": cannot read /proc/self/exe");
    return driver(options, std::string(self, static_cast<size_t>(n)));
  } catch (const std::exception& e) {
    const std::string what = e.what();
    std::fprintf(stderr, "%s\n", what.rfind(name, 0) == 0 ? what.c_str() : (std::string(name) + ": " + what).c_str());
    return 1;
  }
}

}  // namespace nf::bench
