// GRPO's verifiers: built-in answer matching and a user command speaking JSON (train/reward_verifier.h).
#include "nanoformer/train/reward_verifier.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <chrono>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>

#include "nanoformer/core/error.h"
#include "nanoformer/eval/answer_extraction.h"

namespace nf::train {
namespace {

std::string trimmed(const std::string& s) {
  const size_t begin = s.find_first_not_of(" \t\r\n");
  if (begin == std::string::npos) return "";
  return s.substr(begin, s.find_last_not_of(" \t\r\n") - begin + 1);
}

std::string joined(const std::vector<std::string>& argv) {
  std::string s;
  for (const std::string& a : argv) s += (s.empty() ? "" : " ") + a;
  return s;
}

// The first line of text, at most 120 bytes, for a one-line message.
std::string first_line(const std::string& text) {
  std::string line = text.substr(0, text.find('\n'));
  if (line.size() > 120) line = line.substr(0, 117) + "...";
  return line;
}

}  // namespace

CommandResult run_command(const std::vector<std::string>& argv, const std::string& input, double timeout_seconds) {
  NF_CHECK(!argv.empty(), "run_command: no program");
  int in[2], out[2], err[2], exec_status[2];
  // stdin is a socket so that writing to a program that exits without reading fails (MSG_NOSIGNAL)
  // instead of raising SIGPIPE in this process
  NF_CHECK(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, in) == 0 && ::pipe2(out, O_CLOEXEC) == 0 &&
               ::pipe2(err, O_CLOEXEC) == 0 && ::pipe2(exec_status, O_CLOEXEC) == 0,
           "cannot run ", argv[0], ": ", std::strerror(errno));
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = ::fork();
  NF_CHECK(pid >= 0, "cannot run ", argv[0], ": fork: ", std::strerror(errno));
  if (pid == 0) {  // the child: only async-signal-safe calls
    ::dup2(in[1], 0);
    ::dup2(out[1], 1);
    ::dup2(err[1], 2);
    ::execvp(args[0], args.data());
    const int e = errno;
    (void)!::write(exec_status[1], &e, sizeof e);
    ::_exit(127);
  }
  for (int fd : {in[1], out[1], err[1], exec_status[1]}) ::close(fd);
  int exec_errno = 0;
  const bool exec_failed = ::read(exec_status[0], &exec_errno, sizeof exec_errno) == sizeof exec_errno;
  ::close(exec_status[0]);
  CommandResult r;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_seconds);
  size_t written = 0;
  int to_child = in[0];
  if (input.empty()) ::shutdown(to_child, SHUT_WR);
  bool out_open = true, err_open = true;
  while (!exec_failed && (out_open || err_open)) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      r.timed_out = true;
      break;
    }
    pollfd fds[3] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}, {to_child, POLLOUT, 0}};
    const nfds_t n = written < input.size() && to_child >= 0 ? 3 : 2;
    if (!out_open) fds[0].fd = -1;
    if (!err_open) fds[1].fd = -1;
    if (::poll(fds, n, static_cast<int>(left.count())) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    char buffer[4096];
    for (int k = 0; k < 2; ++k) {
      if (fds[k].fd < 0 || !(fds[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t got = ::read(fds[k].fd, buffer, sizeof buffer);
      if (got <= 0) {
        (k == 0 ? out_open : err_open) = false;
      } else if (k == 0) {
        r.out.append(buffer, static_cast<size_t>(got));
      } else if (r.err.size() < 4096) {
        r.err.append(buffer, static_cast<size_t>(got));
      }
    }
    if (n == 3 && (fds[2].revents & (POLLOUT | POLLERR | POLLHUP))) {
      const ssize_t sent = ::send(to_child, input.data() + written, input.size() - written, MSG_NOSIGNAL);
      if (sent < 0) {
        written = input.size();  // the program does not read: leave it be
      } else {
        written += static_cast<size_t>(sent);
      }
      if (written == input.size()) ::shutdown(to_child, SHUT_WR);
    }
  }
  if (r.timed_out || exec_failed) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  for (int fd : {in[0], out[0], err[0]}) ::close(fd);
  NF_CHECK(!exec_failed, "cannot run ", argv[0], ": ", std::strerror(exec_errno));
  r.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

namespace {

// Whether `program` can be executed as execvp would find it: a path with a '/', else a PATH entry.
bool executable(const std::string& program) {
  if (program.find('/') != std::string::npos) return ::access(program.c_str(), X_OK) == 0;
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  for (size_t begin = 0; begin <= dirs.size();) {
    size_t end = dirs.find(':', begin);
    if (end == std::string::npos) end = dirs.size();
    const std::string dir = end > begin ? dirs.substr(begin, end - begin) : ".";
    if (::access((dir + "/" + program).c_str(), X_OK) == 0) return true;
    begin = end + 1;
  }
  return false;
}

}  // namespace

RewardVerifier::RewardVerifier(const GrpoOptions& options)
    : kind_(options.verifier), command_(options.verifier_command), timeout_seconds_(options.verifier_timeout) {
  if (kind_ == "command")  // before the run's directory is made
    NF_CHECK(!command_.empty() && executable(command_[0]), "train: --verifier-command '", joined(command_), "': ",
             command_.empty() ? "empty" : command_[0] + " is not an executable program (no such file, or not in PATH)");
}

double RewardVerifier::reward(const eval::TaskRecord& record, const std::string& prompt, const std::string& completion,
                              const std::string& where) const {
  if (kind_ == "numeric") {
    const std::optional<std::string> extracted = eval::extract_answer(completion);
    return extracted && *extracted == record.answer ? 1.0 : 0.0;
  }
  if (kind_ == "exact") return trimmed(completion) == trimmed(record.answer) ? 1.0 : 0.0;
  const std::string input =
      nlohmann::json{{"prompt", prompt}, {"completion", completion}, {"answer", record.answer}, {"target", record.target}}
          .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  const std::string what = "train: --verifier-command '" + joined(command_) + "': " + where + ": ";
  CommandResult r;
  try {
    r = run_command(command_, input, timeout_seconds_);
  } catch (const Error& e) {
    NF_FAIL(what, e.what());
  }
  NF_CHECK(!r.timed_out, what, "no answer within --verifier-timeout ", timeout_seconds_, " s");
  NF_CHECK(r.exit_status == 0, what, "exited with status ", r.exit_status,
           r.err.empty() ? "" : " (stderr: " + first_line(r.err) + ")");
  const nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
  NF_CHECK(!j.is_discarded() && j.is_object(), what, "printed malformed JSON, not {\"reward\": R}: \"",
           first_line(trimmed(r.out)), "\"");
  NF_CHECK(j.contains("reward"), what, "printed no field 'reward': ", first_line(j.dump()));
  NF_CHECK(j["reward"].is_number() && std::isfinite(j["reward"].get<double>()), what,
           "field 'reward' is not a finite number but ", first_line(j["reward"].dump()));
  return j["reward"].get<double>();
}

}  // namespace nf::train
