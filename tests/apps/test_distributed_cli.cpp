// `mpirun -np 2 nanoformer train` (data-parallel, docs/scaling.md) on a tiny model:
// - 10 steps with 2 ranks at batch B give the parameters (and optimizer state) of one process at
//   batch 2B, within 1e-6, with and without gradient accumulation and ZeRO-1; the ranks end with
//   identical parameters (the trainer compares them and says so);
// - a rank killed with SIGKILL mid-run ends the job with an error naming it, well within the
//   timeout, and the last checkpoint resumes to the uninterrupted run's end; a rank that stops
//   responding (SIGSTOP) ends the job after --dist-timeout with a message naming the collective;
// - resuming with another number of ranks, and ZeRO-1 with Muon, are refused with a clear error.
// Skipped when mpirun is absent (scripts/install-deps.sh installs it) or the build has no MPI.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "nanoformer/dist/communicator.h"
#include "nanoformer/nanoformer.h"
#include "nanoformer/tokenizer/token_file.h"
#include "nanoformer/train/train_checkpoint.h"
#include "support/pattern_tokens.h"
#include "support/process.h"
#include "support/testing.h"

namespace nf {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

class DistributedCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!dist::mpi_built()) GTEST_SKIP() << "built without MPI (NF_MPI=OFF)";
    if (std::system("command -v mpirun > /dev/null 2>&1") != 0) GTEST_SKIP() << "mpirun is not installed";
    dir_ = fs::temp_directory_path() / ("nf_dist_cli_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    testing::write_pattern_tokens(path("tokens.bin"));
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  // `nanoformer train` of a tiny model into `out` at `batch` rows per rank.
  std::vector<std::string> train_args(const std::string& out, int steps, int batch,
                                      const std::vector<std::string>& extra = {}) const {
    std::vector<std::string> args = {
        "train", "--config", "llama2c-stories260k", "--set", "vocab_size=32", "--set", "dim=32", "--set",
        "max_seq_len=16", "--data", path("tokens.bin"), "--batch-size", std::to_string(batch), "--context", "16",
        "--steps", std::to_string(steps), "--lr", "3e-3", "--warmup", "2", "--save-every", "1", "--keep", "3",
        "--eval-every", "5", "--eval-batches", "2", "--out", path(out), "--quiet"};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }
  static std::vector<std::string> mpirun(int ranks, std::vector<std::string> args) {
    std::vector<std::string> all = {"mpirun", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none",
                                    "-np", std::to_string(ranks), "-x", "NANOFORMER_THREADS=1"};
#if defined(__SANITIZE_ADDRESS__)
    // Open MPI allocates once in MPI_Init and in components it unloads at exit, which LeakSanitizer
    // can neither name nor suppress (one-frame stacks): no leak check in the ranks under make
    // test-asan (every other ASan check stays on; the trainer's own code is leak-checked in-process
    // by test_trainer).
    all.insert(all.end(), {"-x", "ASAN_OPTIONS=detect_leaks=0"});
#endif
    all.push_back(NF_CLI);
    all.insert(all.end(), args.begin(), args.end());
    return all;
  }
  static std::vector<std::string> single(std::vector<std::string> args) {
    args.insert(args.begin(), NF_CLI);
    return args;
  }

  pid_t spawn(const std::vector<std::string>& argv) const {
    ::setenv("NANOFORMER_THREADS", "1", 1);
    return testing::spawn_process(argv, path("stdout"), path("stderr"));
  }
  static int wait_for(pid_t pid) { return testing::wait_for_exit(pid); }
  int run(const std::vector<std::string>& argv) const { return wait_for(spawn(argv)); }
  std::string output() const {
    auto text = [](const std::string& file) {
      std::ifstream in(file);
      return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    };
    return text(path("stdout")) + text(path("stderr"));
  }

  fs::path dir_;
};

// The pid of the rank `rank` among the children of mpirun `parent` (its OMPI_COMM_WORLD_RANK).
pid_t rank_pid(pid_t parent, int rank) {
  const std::string wanted = "OMPI_COMM_WORLD_RANK=" + std::to_string(rank);
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string line;
    std::getline(stat, line);
    const size_t close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 2));
    char state = 0;
    pid_t ppid = 0;
    rest >> state >> ppid;
    if (ppid != parent) continue;
    std::ifstream env(entry.path() / "environ");
    std::string var;
    while (std::getline(env, var, '\0'))
      if (var == wanted) return static_cast<pid_t>(std::stoi(name));
  }
  return 0;
}

using testing::wait_until;

// Largest |a - b| over every tensor of two checkpoints (with the same names and shapes), read
// through the mapping one tensor at a time (a 145M-parameter checkpoint is 1.7 GB).
double max_abs_difference(const std::string& a, const std::string& b, bool optimizer_too) {
  const auto fa = io::SafetensorsFile::open(a), fb = io::SafetensorsFile::open(b);
  EXPECT_EQ(fa.entries().size(), fb.entries().size());
  double worst = 0;
  for (const io::TensorEntry& entry : fa.entries()) {
    const std::string& name = entry.name;
    if (!optimizer_too && name.rfind("train/", 0) == 0) continue;
    if (entry.dtype != DType::f32) continue;
    if (!fb.contains(name)) {
      ADD_FAILURE() << name << " is missing from " << b;
      continue;
    }
    const Tensor x = fa.view(name).contiguous(), y = fb.view(name).contiguous();
    EXPECT_EQ(x.numel(), y.numel()) << name;
    const float* px = x.data<float>();
    const float* py = y.data<float>();
    for (int64_t i = 0; i < std::min(x.numel(), y.numel()); ++i)
      worst = std::max(worst, std::fabs(static_cast<double>(px[i]) - static_cast<double>(py[i])));
  }
  return worst;
}

class TwoRanksMatchOneProcess : public DistributedCliTest,
                                public ::testing::WithParamInterface<std::pair<const char*, const char*>> {};

TEST_P(TwoRanksMatchOneProcess, TenStepsAtTwiceTheBatch) {
  const auto [accum, zero] = GetParam();
  const std::vector<std::string> extra = {"--grad-accum", accum, "--zero", zero, "--bucket-mb", "0.01"};
  ASSERT_EQ(run(single(train_args("one", 10, 4, {"--grad-accum", accum}))), 0) << output();
  ASSERT_EQ(run(mpirun(2, train_args("two", 10, 2, extra))), 0) << output();
  EXPECT_NE(output().find("parameters identical on all 2 ranks"), std::string::npos) << output();
  const std::string one = train::checkpoint_path(path("one"), 10), two = train::checkpoint_path(path("two"), 10);
  EXPECT_LE(max_abs_difference(one, two, false), 1e-6) << "parameters";
  EXPECT_LE(max_abs_difference(one, two, true), 1e-6) << "parameters and optimizer state";
  // rank 0 alone wrote metrics: one line per step, and the validations at steps 5 and 10
  std::ifstream metrics(path("two/metrics.jsonl"));
  int lines = 0;
  for (std::string line; std::getline(metrics, line);) ++lines;
  EXPECT_EQ(lines, 12);
}

INSTANTIATE_TEST_SUITE_P(AccumulationAndZero, TwoRanksMatchOneProcess,
                         ::testing::Values(std::pair{"1", "0"}, std::pair{"2", "0"}, std::pair{"1", "1"},
                                           std::pair{"2", "1"}),
                         [](const auto& info) {
                           return std::string("accum") + info.param.first + "_zero" + info.param.second;
                         });

// An MoE routes each rank's tokens differently, so the ranks' gradients become final in
// different orders and some experts get tokens on one rank only: the ranks must still all-reduce
// their buckets in one order (before the fix: MPI_ERR_TRUNCATE or a segfault in step 1).
// SGD with momentum: its update is linear in the gradient, so 1e-6 bounds the gradients' float
// rounding. (AdamW moves every element by about lr whatever its size: an element of a 145M-model
// gradient of 1e-8, computed over two ranks' halves instead of one batch, may differ by as much
// as itself, and its update by a large share of lr; PyTorch's DDP does the same.)
class MoERanksMatchOneProcess : public DistributedCliTest {
 protected:
  // `model` for `steps` steps at `batch` rows per rank, context 16, checkpoint at the end only.
  std::vector<std::string> moe_args(const std::vector<std::string>& model, const std::string& out, int steps, int batch,
                                    const std::vector<std::string>& extra = {}) const {
    std::vector<std::string> args = {"train"};
    args.insert(args.end(), model.begin(), model.end());
    for (const std::string& a : {std::string("--data"), path("tokens6400.bin"), std::string("--batch-size"),
                                 std::to_string(batch), std::string("--context"), std::string("16"), std::string("--steps"),
                                 std::to_string(steps), std::string("--optimizer"), std::string("sgd"), std::string("--lr"),
                                 std::string("3e-3"), std::string("--save-every"),
                                 std::string("0"), std::string("--val-fraction"), std::string("0"), std::string("--out"),
                                 path(out), std::string("--quiet")})
      args.push_back(a);
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }
  // One process at batch 2, then 2 ranks at batch 1 with each of `variants` (extra flags).
  void expect_two_ranks_match(const std::vector<std::string>& model, int steps,
                              const std::vector<std::vector<std::string>>& variants) {
    {
      tokenizer::TokenFileWriter w(path("tokens6400.bin"), 6400);  // the pattern, in minimind2-moe's vocabulary
      std::vector<tokenizer::TokenId> ids;
      for (int i = 0; i < 2000; ++i) ids.push_back(static_cast<tokenizer::TokenId>((i * 7 + (i / 13) % 3) % 32));
      w.write(ids);
      w.close();
    }
    ASSERT_EQ(run(single(moe_args(model, "one", steps, 2))), 0) << output();
    const std::string one = train::checkpoint_path(path("one"), steps);
    for (size_t v = 0; v < variants.size(); ++v) {
      std::string label;
      for (const std::string& a : variants[v]) label += a + " ";
      SCOPED_TRACE(label);
      const std::string out = "two" + std::to_string(v);
      ASSERT_EQ(run(mpirun(2, moe_args(model, out, steps, 1, variants[v]))), 0) << output();
      EXPECT_NE(output().find("parameters identical on all 2 ranks"), std::string::npos) << output();
      EXPECT_LE(max_abs_difference(one, train::checkpoint_path(path(out), steps), true), 1e-6)
          << "parameters and optimizer state";
    }
  }
};

TEST_F(MoERanksMatchOneProcess, TheMiniMind2MoEPreset) {
  expect_two_ranks_match({"--config", "minimind2-moe"}, 2, {{}, {"--zero", "1"}});
}

TEST_F(MoERanksMatchOneProcess, ManyExpertsTopOneAtSeveralBucketSizes) {
  const std::vector<std::string> model = {
      "--config", "llama2c-stories260k", "--set", "vocab_size=6400", "--set", "dim=32", "--set", "max_seq_len=16",
      "--set", R"(moe={"n_experts": 16, "n_shared_experts": 0, "top_k": 1, "aux_loss_alpha": 0.1, "seq_aux": true})"};
  expect_two_ranks_match(model, 4,
                         {{"--bucket-mb", "0.0001"}, {"--bucket-mb", "0.01"}, {"--bucket-mb", "1"},
                          {"--bucket-mb", "0.0001", "--zero", "1"}, {"--bucket-mb", "0.01", "--zero", "1"}});
}

TEST_F(DistributedCliTest, AKilledRankEndsTheJobAndTheLastCheckpointResumes) {
  const std::vector<std::string> zero = {"--zero", "1", "--dist-timeout", "60"};
  ASSERT_EQ(run(mpirun(2, train_args("whole", 30, 2, zero))), 0) << output();
  const pid_t job = spawn(mpirun(2, train_args("killed", 30, 2, zero)));
  ASSERT_TRUE(wait_until([&] {
    const auto saved = train::list_checkpoints(path("killed"));
    return !saved.empty() && saved.back().first >= 3;
  }));
  const pid_t rank1 = rank_pid(job, 1);
  ASSERT_GT(rank1, 0) << "rank 1 of mpirun " << job << " not found";
  const auto killed_at = std::chrono::steady_clock::now();
  ::kill(rank1, SIGKILL);
  const int status = wait_for(job);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - killed_at).count();
  EXPECT_NE(status, 0);
  EXPECT_LT(seconds, 60.0) << "the job outlived its --dist-timeout";
  EXPECT_NE(output().find("rank 1"), std::string::npos) << output();
  const auto left = train::list_checkpoints(path("killed"));
  ASSERT_FALSE(left.empty());
  ASSERT_LT(left.back().first, 30) << "the run finished before it was killed";
  ASSERT_EQ(run(mpirun(2, {"train", "--out", path("killed"), "--resume", "--quiet", "--zero", "1"})), 0) << output();
  EXPECT_EQ(max_abs_difference(train::checkpoint_path(path("whole"), 30), train::checkpoint_path(path("killed"), 30), true),
            0.0);
}

TEST_F(DistributedCliTest, AStoppedRankEndsTheJobAfterTheTimeout) {
  const pid_t job = spawn(mpirun(2, train_args("stopped", 100000, 2, {"--dist-timeout", "3"})));
  ASSERT_TRUE(wait_until([&] { return !train::list_checkpoints(path("stopped")).empty(); }, 120s));
  const pid_t rank1 = rank_pid(job, 1);
  ASSERT_GT(rank1, 0);
  ::kill(rank1, SIGSTOP);
  const auto stopped_at = std::chrono::steady_clock::now();
  const int status = wait_for(job);
  ::kill(rank1, SIGKILL);  // in case mpirun left it stopped
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - stopped_at).count();
  EXPECT_NE(status, 0);
  EXPECT_LT(seconds, 60.0);
  EXPECT_NE(output().find("rank 0: "), std::string::npos) << output();
  EXPECT_NE(output().find("did not complete within 3 s (--dist-timeout)"), std::string::npos) << output();
}

TEST_F(DistributedCliTest, ResumingWithAnotherNumberOfRanksIsRefused) {
  ASSERT_EQ(run(mpirun(2, train_args("run", 3, 2))), 0) << output();
  EXPECT_EQ(run(single({"train", "--out", path("run"), "--resume", "--steps", "5", "--quiet"})), 1);
  EXPECT_NE(output().find("ranks: 2 -> 1"), std::string::npos) << output();
}

TEST_F(DistributedCliTest, ZeroWithMuonIsRefused) {
  EXPECT_NE(run(mpirun(2, train_args("muon", 3, 2, {"--optimizer", "muon", "--zero", "1"}))), 0);
  EXPECT_NE(output().find("the muon optimizer updates whole matrices"), std::string::npos) << output();
}

}  // namespace
}  // namespace nf
