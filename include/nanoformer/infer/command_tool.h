#pragma once
// The `command` tool: a program the user names, run for a model's tool call with the call's JSON
// on its standard input and its standard output as the answer, under a time and an output limit.
// Off unless the user asks for it (it runs what the user gave, never what the model wrote: the
// model chooses only the input). The program is started directly (posix_spawnp, no shell), in a
// process group of its own, with standard error discarded; past the time limit or the output limit
// the whole group is killed (SIGKILL) and the answer says so. Input is written while output is read,
// so neither side blocks the other whatever their sizes; a program that exits without reading its
// input is not an error.
#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace nf::infer {

struct CommandLimits {
  std::chrono::milliseconds time{10000};  // wall time from start to exit
  size_t output_bytes = 64 * 1024;        // standard output kept; one byte more kills the program
};

struct CommandResult {
  std::string output;       // standard output, at most output_bytes
  int exit_code = -1;       // when it exited by itself; -1 otherwise
  bool timed_out = false;   // killed at the time limit
  bool truncated = false;   // killed at the output limit
  std::string error;        // why it could not run ("no such program"), empty when it ran
};

// Runs argv (argv[0] looked up in PATH) with `input` on its standard input.
CommandResult run_command(const std::vector<std::string>& argv, std::string_view input, const CommandLimits& limits = {});

}  // namespace nf::infer
