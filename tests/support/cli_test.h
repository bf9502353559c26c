#pragma once
// Running the `nanoformer` binary in a test (its path is NF_CLI, the repository NF_SOURCE_DIR,
// both set by CMakeLists.txt for tests under tests/apps/): a temporary directory per test and
// cli("args") capturing the exit code, stdout and stderr.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace nf::testing {

struct CliRun {
  int exit_code = -1;
  std::string out, err;
};

inline std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("nf_cli_" + std::to_string(::getpid()) + "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  // Runs `nanoformer <args>` from the repository root (where configs/ is found).
  CliRun cli(const std::string& args, const std::string& stdin_text = "") const {
    std::ofstream(path("stdin")) << stdin_text;
    const std::string command = "cd '" NF_SOURCE_DIR "' && '" NF_CLI "' " + args + " < '" + path("stdin") + "' > '" +
                                path("stdout") + "' 2> '" + path("stderr") + "'";
    const int status = std::system(command.c_str());
    CliRun r;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = read_text(path("stdout"));
    r.err = read_text(path("stderr"));
    return r;
  }

  // Runs `nanoformer <args>` and expects a failure: one line on stderr naming every part, nothing on stdout.
  void expect_one_line_error(const std::string& args, const std::vector<std::string>& parts) const {
    const CliRun r = cli(args);
    EXPECT_NE(r.exit_code, 0) << args;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    for (const auto& part : parts) EXPECT_NE(r.err.find(part), std::string::npos) << args << ": " << r.err;
    EXPECT_EQ(r.out, "") << args;
  }

  std::filesystem::path dir_;
};

}  // namespace nf::testing
