#pragma once
// GRPO's reward for one completion of a task record: built in, "numeric" (the final number
// extracted as GSM8K is scored, eval/answer_extraction.h, equals the record's answer: 1, else 0)
// and "exact" (the completion, surrounding white space trimmed, equals the answer: 1, else 0); or
// "command": a program run without a shell for each completion, given on stdin
//   {"prompt": "...", "completion": "...", "answer": "...", "target": "..."}
// and printing {"reward": R} (a finite number) on stdout, within a timeout. A command that cannot
// start, exits non-zero, times out or prints anything else is an nf::Error of one line naming the
// command, the record's FILE:LINE and what was wrong.
#include <string>
#include <vector>

#include "nanoformer/eval/task_records.h"
#include "nanoformer/train/train_config.h"

namespace nf::train {

class RewardVerifier {
 public:
  // A command whose program cannot be found (a path with '/', else in PATH) is an nf::Error.
  explicit RewardVerifier(const GrpoOptions& options);
  // `where`: "FILE:LINE" of the record, for errors.
  double reward(const eval::TaskRecord& record, const std::string& prompt, const std::string& completion,
                const std::string& where) const;

 private:
  std::string kind_;
  std::vector<std::string> command_;
  double timeout_seconds_;
};

// What a program printed and how it ended.
struct CommandResult {
  int exit_status = 0;     // exit code, or 128 + signal
  bool timed_out = false;
  std::string out, err;    // stdout, the start of stderr
};
// Runs argv[0] (searched in PATH) with argv, no shell, `input` on its stdin; kills it after
// timeout_seconds. Throws nf::Error when it cannot be started (naming it and errno's text).
CommandResult run_command(const std::vector<std::string>& argv, const std::string& input, double timeout_seconds);

}  // namespace nf::train
