// The `nanoformer` binary end to end (its path is NF_CLI, set by CMakeLists.txt): `inspect` prints
// the exact parameter count and parseable JSON; bad flags and bad model names give a one-line
// error and a non-zero exit; every subcommand's --help shows an example.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "nanoformer/nanoformer.h"
#include "support/testing.h"

namespace nf {
namespace {

struct CliRun {
  int exit_code = -1;
  std::string out, err;
};

std::string read_text(const std::filesystem::path& path) {
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
  CliRun cli(const std::string& args) const {
    const std::string command = "cd '" NF_SOURCE_DIR "' && '" NF_CLI "' " + args + " > '" + path("stdout") +
                                "' 2> '" + path("stderr") + "'";
    const int status = std::system(command.c_str());
    CliRun r;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = read_text(path("stdout"));
    r.err = read_text(path("stderr"));
    return r;
  }

  std::filesystem::path dir_;
};

int64_t lines(const std::string& text) { return std::count(text.begin(), text.end(), '\n'); }

TEST_F(CliTest, InspectPrintsTheExactParameterCount) {
  const CliRun r = cli("inspect gpt-mini");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\nparameters: 12368064\n"), std::string::npos) << r.out;
}

TEST_F(CliTest, InspectJsonParsesAndAgreesWithModelStats) {
  const CliRun r = cli("inspect minimind2-moe --json --context 512 --batch 4");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  const models::ModelStats s = models::model_stats(models::preset_config("minimind2-moe"), {.context = 512, .batch = 4});
  EXPECT_EQ(j["parameters"]["total"].get<int64_t>(), 145029760);
  EXPECT_EQ(j["parameters"]["routed_experts"].get<int64_t>(), s.parameters.routed_experts);
  EXPECT_EQ(j["active_parameters"].get<int64_t>(), s.active_parameters);
  EXPECT_EQ(j["flops_per_token"]["forward"].get<int64_t>(), s.forward_flops_per_token);
  EXPECT_EQ(j["memory_bytes"]["bf16"]["training"].get<int64_t>(), s.bf16.training);
  EXPECT_EQ(j["context"].get<int64_t>(), 512);
  EXPECT_EQ(j["batch"].get<int64_t>(), 4);
}

TEST_F(CliTest, InspectReadsAConfigFile) {
  std::ofstream(path("tiny.json")) << R"({"vocab_size": 32, "dim": 16, "n_layers": 2, "n_heads": 4, "max_seq_len": 8})";
  const CliRun r = cli("inspect '" + path("tiny.json") + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const int64_t expected = models::count_parameters(models::load_model_config(path("tiny.json")));
  EXPECT_NE(r.out.find("\nparameters: " + std::to_string(expected) + "\n"), std::string::npos) << r.out;
}

TEST_F(CliTest, BadModelNameIsOneLineAndNonZero) {
  const CliRun r = cli("inspect gpt5");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("preset 'gpt5' is unknown"), std::string::npos) << r.err;
}

TEST_F(CliTest, BadFlagIsOneLineAndNonZero) {
  for (const char* args : {"inspect gpt-mini --bogus", "inspect gpt-mini --batch 0", "inspect", "frobnicate"}) {
    const CliRun r = cli(args);
    EXPECT_NE(r.exit_code, 0) << args;
    EXPECT_EQ(lines(r.err), 1) << args << ": " << r.err;
    EXPECT_TRUE(r.out.empty()) << args << ": " << r.out;
  }
}

TEST_F(CliTest, EveryNewSubcommandHelpShowsAnExample) {
  for (const char* command : {"inspect"}) {
    const CliRun r = cli(std::string(command) + " --help");
    EXPECT_EQ(r.exit_code, 0) << command;
    EXPECT_NE(r.out.find("Example: nanoformer " + std::string(command)), std::string::npos) << r.out;
  }
}

}  // namespace
}  // namespace nf
