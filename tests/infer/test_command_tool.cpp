// The `command` tool's runner (infer/command_tool.h): input in, output out, exit codes, and its
// limits: a program past its time is killed (with what it started), one that writes past the output
// limit is killed at it, one that never reads its input does not block, and a large input and
// output pass both ways without a deadlock.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "nanoformer/infer/command_tool.h"

namespace nf::infer {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

TEST(CommandTool, RunsTheProgramWithTheInputAndReturnsItsOutput) {
  const CommandResult r = run_command({"cat"}, R"({"name": "echo", "arguments": {"x": 1}})");
  EXPECT_EQ(r.output, R"({"name": "echo", "arguments": {"x": 1}})");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_FALSE(r.timed_out || r.truncated);
  EXPECT_TRUE(r.error.empty());
  const CommandResult failed = run_command({"sh", "-c", "echo partial; echo oops >&2; exit 3"}, "");
  EXPECT_EQ(failed.output, "partial\n");  // standard error is not part of the answer
  EXPECT_EQ(failed.exit_code, 3);
}

TEST(CommandTool, KillsAProgramPastItsTimeWithWhatItStarted) {
  const auto start = steady_clock::now();
  const CommandResult r = run_command({"sh", "-c", "sleep 30 & echo $!; sleep 30"}, "", {.time = milliseconds(300)});
  const auto took = steady_clock::now() - start;
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.exit_code, -1);
  EXPECT_LT(took, milliseconds(5000));
  // the background sleep it started is gone as well (or a zombie waiting for its new parent)
  const std::string stat = "/proc/" + r.output.substr(0, r.output.find('\n')) + "/stat";
  bool gone = false;
  for (int i = 0; i < 100 && !gone; ++i) {
    std::ifstream in(stat);
    std::string pid, name, state;
    gone = !(in >> pid >> name >> state) || state == "Z";
    if (!gone) std::this_thread::sleep_for(milliseconds(10));
  }
  EXPECT_TRUE(gone) << stat;
  // a program that closes its output and goes on is killed at the deadline too
  const CommandResult quiet = run_command({"sh", "-c", "exec >&-; sleep 30"}, "", {.time = milliseconds(300)});
  EXPECT_TRUE(quiet.timed_out);
}

TEST(CommandTool, KillsAProgramAtTheOutputLimit) {
  const CommandResult r = run_command({"yes"}, "", {.output_bytes = 1000});
  EXPECT_TRUE(r.truncated);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.output.size(), 1000u);
  EXPECT_EQ(r.output.substr(0, 4), "y\ny\n");
}

TEST(CommandTool, MovesLargeInputAndOutputWithoutDeadlockAndIgnoresUnreadInput) {
  const std::string big(3 << 20, 'x');  // more than a pipe's and a socket's buffers
  const CommandResult r = run_command({"cat"}, big, {.output_bytes = 4 << 20});
  EXPECT_EQ(r.output.size(), big.size());
  EXPECT_EQ(r.output, big);
  const CommandResult unread = run_command({"echo", "done"}, big);
  EXPECT_EQ(unread.output, "done\n");
  EXPECT_EQ(unread.exit_code, 0);
}

TEST(CommandTool, SaysWhyAProgramCannotRun) {
  const CommandResult r = run_command({"nanoformer-no-such-program"}, "{}");
  EXPECT_NE(r.error.find("cannot run 'nanoformer-no-such-program'"), std::string::npos) << r.error;
  EXPECT_EQ(run_command({}, "").error, "no program given");
}

}  // namespace
}  // namespace nf::infer
