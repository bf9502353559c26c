// The `command` tool's runner (infer/command_tool.h): posix_spawnp with its standard input a
// socket (so a write to a program that has gone returns EPIPE instead of raising SIGPIPE in the
// caller) and its standard output a pipe, both served by one poll loop until the program closes
// its output or a limit is reached.
#include "nanoformer/infer/command_tool.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

extern char** environ;

namespace nf::infer {
namespace {

struct Fd {
  int fd = -1;
  ~Fd() { close(); }
  void close() {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
};

}  // namespace

CommandResult run_command(const std::vector<std::string>& argv, std::string_view input, const CommandLimits& limits) {
  CommandResult result;
  if (argv.empty() || argv[0].empty()) {
    result.error = "no program given";
    return result;
  }
  int in_pair[2], out_pipe[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, in_pair) != 0) {
    result.error = std::string("socketpair: ") + std::strerror(errno);
    return result;
  }
  Fd in_parent{in_pair[0]}, in_child{in_pair[1]};
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) {
    result.error = std::string("pipe: ") + std::strerror(errno);
    return result;
  }
  Fd out_parent{out_pipe[0]}, out_child{out_pipe[1]};

  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attributes;
  posix_spawn_file_actions_init(&actions);
  posix_spawnattr_init(&attributes);
  posix_spawn_file_actions_adddup2(&actions, in_child.fd, STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, out_child.fd, STDOUT_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  // a process group of its own (killed whole), and the default SIGPIPE whatever the caller ignores
  sigset_t defaults;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGPIPE);
  posix_spawnattr_setsigdefault(&attributes, &defaults);
  posix_spawnattr_setpgroup(&attributes, 0);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  const int spawned = ::posix_spawnp(&pid, argv[0].c_str(), &actions, &attributes, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  in_child.close();
  out_child.close();
  if (spawned != 0) {
    result.error = "cannot run '" + argv[0] + "': " + std::strerror(spawned);
    return result;
  }

  const auto deadline = std::chrono::steady_clock::now() + limits.time;
  size_t written = 0;
  if (input.empty()) in_parent.close();
  std::array<char, 16384> buffer{};
  bool killed = false;
  while (out_parent.fd >= 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      result.timed_out = killed = true;
      break;
    }
    std::array<pollfd, 2> fds{pollfd{out_parent.fd, POLLIN, 0}, pollfd{in_parent.fd, POLLOUT, 0}};
    const nfds_t n = in_parent.fd >= 0 ? 2 : 1;
    const int ready = ::poll(fds.data(), n, static_cast<int>(std::min<int64_t>(left.count(), 1000)));
    if (ready < 0 && errno != EINTR) break;
    if (ready <= 0) continue;
    if (n == 2 && (fds[1].revents & (POLLOUT | POLLERR | POLLHUP))) {
      const ssize_t w = ::send(in_parent.fd, input.data() + written, input.size() - written, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (w > 0) written += static_cast<size_t>(w);
      if (w < 0 && errno != EAGAIN && errno != EINTR) in_parent.close();  // it stopped reading: not an error
      if (written == input.size()) in_parent.close();                      // end of input
    }
    if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      const ssize_t r = ::read(out_parent.fd, buffer.data(), buffer.size());
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) {
        out_parent.close();
        break;
      }
      const size_t room = limits.output_bytes - result.output.size();
      result.output.append(buffer.data(), std::min(room, static_cast<size_t>(r)));
      if (static_cast<size_t>(r) > room) {
        result.truncated = killed = true;
        break;
      }
    }
  }
  in_parent.close();
  out_parent.close();
  if (killed) ::kill(-pid, SIGKILL);
  int status = 0;
  // its output closed: it has exited or is about to (or holds the pipe open in a child: killed at the deadline)
  while (true) {
    const pid_t done = ::waitpid(pid, &status, killed ? 0 : WNOHANG);
    if (done == pid || (done < 0 && errno != EINTR)) break;
    if (done == 0) {
      if (std::chrono::steady_clock::now() >= deadline) {
        result.timed_out = killed = true;
        ::kill(-pid, SIGKILL);
      } else {
        ::usleep(1000);
      }
    }
  }
  if (!killed && WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  return result;
}

}  // namespace nf::infer
