// `nanoformer train` as a process, killed with SIGKILL (kill -9) the way a crash or an OOM kill
// ends it:
// - killed mid-run, then `--resume`d, it ends with a checkpoint bit-identical (model and optimizer
//   state) to that of an uninterrupted run;
// - killed while a checkpoint is being written (its temporary file exists), the previous checkpoint
//   still loads and the run resumes from it;
// - SIGINT (Ctrl-C), SIGTERM and SIGHUP write a checkpoint and exit with 130, 143 and 129; a
//   second signal while the checkpoint is written does not abort it; a third exits at once, and
//   the newest complete checkpoint loads and resumes;
// - bad flags and data give one clear line and touch no checkpoint;
// - options are checked before the disk (--lr, --context, --warmup, --lora-rank, --config with
//   --init-from); --set applies to an --init-from model what keeps its weights; optimizer presets
//   have their own weight decay; `demo` validates first and removes only its own run directory;
// - a LoRA run (--lora-rank ...) writes adapter-only checkpoints that `lora merge` folds into the
//   fresh base the run wrote; its flags are checked, and a resume may not change them;
// - --objective dpo raises the chosen-over-rejected accuracy and margin of a tiny chat model (full
//   and LoRA, sigmoid and IPO), warns when the policy stays equal to the reference, and refuses a
//   bad record in one line naming file, line and field;
// - --objective distill lowers the KL from a frozen teacher (trained first in the test), below what
//   the cross-entropy alone reaches, with no nan, logs its CE and KL parts, starts at KL 0 when the
//   student is the teacher, resumes with its teacher, and refuses a
//   teacher of another vocabulary, --teacher without distill, T <= 0 and alpha outside [0, 1].
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "nanoformer/nanoformer.h"
#include "nanoformer/tokenizer/char_tokenizer.h"
#include "nanoformer/tokenizer/token_file.h"
#include "nanoformer/tokenizer/tokenizer.h"
#include "nanoformer/train/train_checkpoint.h"
#include "nanoformer/train/trainer.h"
#include "support/cli_test.h"
#include "support/pattern_tokens.h"
#include "support/process.h"
#include "support/testing.h"
#include "tiny_chat_model.h"

namespace nf {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

class TrainCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("nf_train_cli_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    testing::write_pattern_tokens(path("tokens.bin"));
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  // The arguments of a small run into `out`.
  std::vector<std::string> run_args(const std::string& out, int steps, const std::string& size = "dim=32") const {
    return {"train", "--config", "llama2c-stories260k", "--set", "vocab_size=32", "--set", size, "--set",
            "max_seq_len=16", "--data", path("tokens.bin"), "--batch-size", "4", "--context", "16", "--steps",
            std::to_string(steps), "--lr", "3e-3", "--warmup", "2", "--save-every", "1", "--keep", "2",
            "--eval-every", "0", "--eval-batches", "2", "--out", path(out), "--quiet"};
  }

  // Starts `nanoformer args...` with stdout and stderr to files under dir_; returns its pid.
  pid_t spawn(const std::vector<std::string>& args) const {
    std::vector<std::string> all = {NF_CLI};
    all.insert(all.end(), args.begin(), args.end());
    return testing::spawn_process(all, path("stdout"), path("stderr"));
  }
  static int wait_for(pid_t pid) { return testing::wait_for_exit(pid); }
  int run(const std::vector<std::string>& args) const { return wait_for(spawn(args)); }
  // The same with `cwd` as the working directory.
  int run_in(const std::string& cwd, const std::vector<std::string>& args) const {
    std::vector<std::string> all = {"sh", "-c", "cd \"$0\" && exec \"$@\"", cwd, NF_CLI};
    all.insert(all.end(), args.begin(), args.end());
    return wait_for(testing::spawn_process(all, path("stdout"), path("stderr")));
  }
  std::string err() const {
    std::ifstream in(path("stderr"));
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  std::string out() const { return testing::read_text(path("stdout")); }
  // A run that fails with one line containing every one of `parts` and leaves no `out` directory.
  void expect_refused(const std::vector<std::string>& args, const std::vector<std::string>& parts,
                      const std::string& out = "") const {
    EXPECT_EQ(run(args), 1) << err();
    const std::string e = err();
    EXPECT_EQ(std::count(e.begin(), e.end(), '\n'), 1) << e;
    for (const std::string& part : parts) EXPECT_NE(e.find(part), std::string::npos) << part << " in: " << e;
    if (!out.empty()) {
      EXPECT_FALSE(fs::exists(path(out))) << out << " was created: " << e;
    }
  }

  fs::path dir_;
};

using testing::wait_until;

// `args` with `flag`'s value replaced (or the flag and value appended).
std::vector<std::string> with(std::vector<std::string> args, const std::string& flag, const std::string& value) {
  const auto at = std::find(args.begin(), args.end(), flag);
  if (at == args.end()) {
    args.insert(args.end(), {flag, value});
  } else {
    *(at + 1) = value;
  }
  return args;
}

bool has_temporary_file(const std::string& dir) {
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.path().filename().string().find(".tmp.") != std::string::npos) return true;
  return false;
}

void expect_identical_files(const std::string& a, const std::string& b) {
  const auto ta = io::load_safetensors(a), tb = io::load_safetensors(b);
  ASSERT_EQ(ta.size(), tb.size());
  for (const auto& [name, tensor] : ta) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(tb.count(name));
    const Tensor& other = tb.at(name);
    ASSERT_EQ(tensor.shape(), other.shape());
    EXPECT_EQ(0, std::memcmp(tensor.raw_data(), other.raw_data(), tensor.numel() * tensor.itemsize()));
  }
}

TEST_F(TrainCliTest, KillNineMidRunThenResumeIsBitIdentical) {
  ASSERT_EQ(run(run_args("whole", 12)), 0) << err();
  const pid_t pid = spawn(run_args("killed", 12));
  ASSERT_TRUE(wait_until([&] {
    const auto saved = train::list_checkpoints(path("killed"));
    return !saved.empty() && saved.back().first >= 4;
  }));
  ::kill(pid, SIGKILL);
  ASSERT_EQ(wait_for(pid), -SIGKILL);
  const auto left = train::list_checkpoints(path("killed"));
  ASSERT_FALSE(left.empty());
  ASSERT_LT(left.back().first, 12) << "the run finished before it was killed";
  ASSERT_EQ(run({"train", "--out", path("killed"), "--resume", "--quiet"}), 0) << err();
  expect_identical_files(train::checkpoint_path(path("whole"), 12), train::checkpoint_path(path("killed"), 12));
}

TEST_F(TrainCliTest, KillNineDuringACheckpointWriteKeepsThePreviousOne) {
  // ~6 M parameters: each checkpoint (weights and Adam's two moments) is ~75 MB, so its write lasts
  // long enough to be caught while the temporary file exists.
  auto args = run_args("crash", 4, "dim=256");
  args.insert(args.end(), {"--set", "n_layers=8", "--set", "n_heads=8", "--set", "n_kv_heads=4"});
  const pid_t pid = spawn(args);
  ASSERT_TRUE(wait_until([&] {
    return fs::exists(train::checkpoint_path(path("crash"), 1)) && has_temporary_file(path("crash"));
  }));
  ::kill(pid, SIGKILL);
  ASSERT_EQ(wait_for(pid), -SIGKILL);
  ASSERT_TRUE(has_temporary_file(path("crash"))) << "the kill did not land during a write";
  const auto left = train::list_checkpoints(path("crash"));
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left[0].first, 1);
  EXPECT_NO_THROW(formats::load_model(left[0].second));
  EXPECT_EQ(train::read_train_checkpoint(left[0].second).state.step, 1);
  ASSERT_EQ(run({"train", "--out", path("crash"), "--resume", "--quiet"}), 0) << err();
  EXPECT_FALSE(has_temporary_file(path("crash")));
  EXPECT_EQ(train::list_checkpoints(path("crash")).back().first, 4);
}

TEST_F(TrainCliTest, EachStopSignalWritesACheckpointAndExitsWith128PlusIt) {
  for (const auto& [signal, status] : {std::pair{SIGINT, 130}, std::pair{SIGTERM, 143}, std::pair{SIGHUP, 129}}) {
    SCOPED_TRACE(strsignal(signal));
    const std::string out = "stop" + std::to_string(signal);
    const pid_t pid = spawn(run_args(out, 100000));
    ASSERT_TRUE(wait_until([&] {
      const auto saved = train::list_checkpoints(path(out));
      return !saved.empty() && saved.back().first >= 2;
    }));
    ::kill(pid, signal);
    EXPECT_EQ(wait_for(pid), status) << err();
    const auto left = train::list_checkpoints(path(out));
    ASSERT_FALSE(left.empty());
    EXPECT_GE(left.back().first, 2);
    EXPECT_EQ(train::read_train_checkpoint(left.back().second).state.step, left.back().first);
    EXPECT_NO_THROW(formats::load_model(left.back().second));  // every checksum verified
    EXPECT_NE(err().find("stopping at the end of this step"), std::string::npos) << err();
    EXPECT_NE(err().find("checkpoint written"), std::string::npos) << err();
  }
}

// The arguments of a run whose checkpoints (~75 MB: ~6 M parameters and Adam's two moments) take
// long enough to write that a signal can be sent while the temporary file exists.
std::vector<std::string> slow_checkpoint_args(std::vector<std::string> args) {
  for (std::string& a : args)
    if (a == "dim=32") a = "dim=256";
  args.insert(args.end(), {"--set", "n_layers=8", "--set", "n_heads=8", "--set", "n_kv_heads=4"});
  return args;
}

TEST_F(TrainCliTest, ASecondSignalDuringTheCheckpointWriteDoesNotAbortIt) {
  auto args = slow_checkpoint_args(run_args("double", 100000));
  args[std::find(args.begin(), args.end(), "--save-every") - args.begin() + 1] = "0";  // the stop's checkpoint only
  const pid_t pid = spawn(args);
  ASSERT_TRUE(wait_until([&] { return fs::exists(path("double/metrics.jsonl")) && fs::file_size(path("double/metrics.jsonl")) > 0; }));
  ::kill(pid, SIGINT);
  ASSERT_TRUE(wait_until([&] { return has_temporary_file(path("double")); })) << "no checkpoint write was seen";
  ::kill(pid, SIGINT);  // the worst moment: while the checkpoint is being written
  EXPECT_EQ(wait_for(pid), 130) << err();
  EXPECT_NE(err().find("still stopping"), std::string::npos) << err();
  const auto left = train::list_checkpoints(path("double"));
  ASSERT_EQ(left.size(), 1u);
  EXPECT_NO_THROW(formats::load_model(left[0].second));
  EXPECT_FALSE(has_temporary_file(path("double")));
}

TEST_F(TrainCliTest, AThirdSignalExitsAtOnceAndTheLastCompleteCheckpointResumes) {
  const pid_t pid = spawn(slow_checkpoint_args(run_args("triple", 100000)));
  ASSERT_TRUE(wait_until([&] { return fs::exists(train::checkpoint_path(path("triple"), 1)); }));
  // each signal once the previous one has been handled (signals sent together merge into one)
  const auto said = [&](const char* text) { return err().find(text) != std::string::npos; };
  ::kill(pid, SIGINT);
  ASSERT_TRUE(wait_until([&] { return said("stopping at the end of this step"); })) << err();
  ::kill(pid, SIGINT);
  ASSERT_TRUE(wait_until([&] { return said("still stopping"); })) << err();
  ::kill(pid, SIGINT);
  EXPECT_EQ(wait_for(pid), 130) << err();
  EXPECT_TRUE(said("exiting now")) << "the step and its checkpoint ended before the third signal: " << err();
  const auto left = train::list_checkpoints(path("triple"));
  ASSERT_FALSE(left.empty());
  EXPECT_NO_THROW(formats::load_model(left.back().second));
  const int64_t step = left.back().first;
  // the resumed run goes on from there; a signal stops it after its first checkpoint
  const pid_t resumed = spawn({"train", "--out", path("triple"), "--resume", "--quiet"});
  ASSERT_TRUE(wait_until([&] { return train::list_checkpoints(path("triple")).back().first > step; }));
  ::kill(resumed, SIGTERM);
  EXPECT_EQ(wait_for(resumed), 143) << err();
  EXPECT_FALSE(has_temporary_file(path("triple"))) << "the resumed run's save prunes an abandoned write";
}

TEST_F(TrainCliTest, BadInputIsOneClearLineAndKeepsCheckpoints) {
  ASSERT_EQ(run(run_args("kept", 3)), 0) << err();
  const auto saved = train::list_checkpoints(path("kept"));
  const std::string before = saved.back().second;
  const auto modified = fs::last_write_time(before);
  // A resume that changes the batch shape.
  EXPECT_EQ(run({"train", "--out", path("kept"), "--resume", "--batch-size", "2", "--quiet"}), 1);
  EXPECT_NE(err().find("data.batch_size: 4 -> 2"), std::string::npos) << err();
  // A fresh run into a directory with checkpoints.
  EXPECT_EQ(run(run_args("kept", 3)), 1);
  EXPECT_NE(err().find("already holds checkpoints"), std::string::npos) << err();
  // Token ids beyond the model's vocabulary.
  auto small_vocab = run_args("vocab", 3);
  small_vocab[4] = "vocab_size=16";
  EXPECT_EQ(run(small_vocab), 1);
  EXPECT_NE(err().find("tokens.bin"), std::string::npos) << err();
  // An unreadable data file.
  auto missing = run_args("missing", 3);
  missing[10] = path("nope.bin");
  EXPECT_EQ(run(missing), 1);
  EXPECT_NE(err().find("nope.bin"), std::string::npos) << err();
  // A model that cannot fit.
  auto huge = run_args("huge", 3, "dim=65536");
  huge.insert(huge.end(), {"--set", "n_layers=1000", "--set", "n_heads=64", "--set", "n_kv_heads=64"});
  EXPECT_EQ(run(huge), 1);
  EXPECT_NE(err().find("memory is available"), std::string::npos) << err();
  EXPECT_EQ(train::list_checkpoints(path("kept")), saved);
  EXPECT_EQ(fs::last_write_time(before), modified);
}

TEST_F(TrainCliTest, TokenIdsAreCheckedBeforeStepOne) {
  ASSERT_EQ(run(run_args("good", 3)), 0) << err();
  EXPECT_NE(err().find("token ids checked: 4000 tokens, largest id 31 < vocabulary 32, in "), std::string::npos) << err();
  // Id 500 in a file whose header says vocabulary 32, at a token no batch of a 3-step run reads.
  std::string bytes = tokenizer::read_file(path("tokens.bin"));
  const size_t at = tokenizer::kTokenFileHeaderSize + 2 * 3000;
  bytes[at] = static_cast<char>(500 & 0xff);
  bytes[at + 1] = static_cast<char>(500 >> 8);
  std::ofstream(path("tokens.bin"), std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  EXPECT_EQ(run(run_args("corrupt", 3)), 1);
  EXPECT_NE(err().find("tokens.bin, token 3000: id 500 is not below the model's vocabulary size 32"), std::string::npos)
      << err();
  EXPECT_FALSE(fs::exists(path("corrupt/metrics.jsonl")));
  EXPECT_TRUE(train::list_checkpoints(path("corrupt")).empty());
  // A token file prepared for a larger vocabulary, though every id it holds fits.
  testing::write_pattern_tokens(path("tokens.bin"));
  {
    tokenizer::TokenFileWriter wide(path("tokens.bin"), 64);
    wide.write(tokenizer::TokenFile(path("tokens.bin")).read_all());
    wide.close();
  }
  EXPECT_EQ(run(run_args("wide", 3)), 1);
  EXPECT_NE(err().find("tokens.bin: the token file's header gives a vocabulary of 64 ids, larger than the model's "
                       "vocabulary size 32"),
            std::string::npos) << err();
}

TEST_F(TrainCliTest, MessagesSayWhatHappened) {
  // --resume into a directory without checkpoints: the checkpoint is missing, not the data.
  EXPECT_EQ(run({"train", "--out", path("nothing"), "--resume", "--quiet"}), 1);
  EXPECT_NE(err().find("no checkpoint (ckpt_*.safetensors) in " + path("nothing") + " (no such directory)"),
            std::string::npos) << err();
  EXPECT_FALSE(fs::exists(path("nothing")));
  fs::create_directories(path("empty"));
  EXPECT_EQ(run({"train", "--out", path("empty"), "--resume", "--quiet"}), 1);
  EXPECT_NE(err().find("no checkpoint (ckpt_*.safetensors) in " + path("empty") + ": nothing to resume"),
            std::string::npos) << err();
  // An empty token file: no tokens, not text that needs a tokenizer.
  std::ofstream(path("empty.bin")).close();
  auto empty = run_args("empty_data", 3);
  empty[10] = path("empty.bin");
  EXPECT_EQ(run(empty), 1);
  EXPECT_NE(err().find(path("empty.bin") + ": the data file is empty (0 bytes): it holds no tokens"), std::string::npos)
      << err();
  // A metrics file that cannot be written (a full disk): an error naming it.
  fs::create_directories(path("full"));
  fs::create_symlink("/dev/full", path("full/metrics.jsonl"));
  EXPECT_EQ(run(run_args("full", 3)), 1);
  EXPECT_NE(err().find("cannot write " + path("full/metrics.jsonl") + " (No space left on device)"), std::string::npos)
      << err();
}

TEST_F(TrainCliTest, ResumeWorksFromAnyDirectoryAndFindsMovedData) {
  std::string text;
  for (int i = 0; i < 100; ++i) text += "the quick brown fox jumps over the lazy dog\n";
  std::ofstream(path("shak.txt")) << text;
  tokenizer::CharTokenizer::train(text).save(path("chars.json"));
  fs::create_directories(path("a"));
  fs::create_directories(path("elsewhere"));
  auto args = [](const std::string& data, const std::string& tokenizer, const std::string& out) {
    return std::vector<std::string>{"train", "--config", "llama2c-stories260k", "--set", "vocab_size=32", "--set",
                                    "dim=32", "--set", "max_seq_len=16", "--data", data, "-t", tokenizer,
                                    "--batch-size", "4", "--context", "16", "--steps", "3", "--eval-every", "0",
                                    "--eval-batches", "2", "--out", out, "--quiet"};
  };
  // Paths as typed, relative to the run's directory, the tokenizer as a/../chars.json.
  ASSERT_EQ(run_in(dir_.string(), args("shak.txt", "a/../chars.json", "run")), 0) << err();
  const train::TrainCheckpoint saved = train::read_train_checkpoint(train::checkpoint_path(path("run"), 3));
  EXPECT_EQ(saved.config.data.train_paths, std::vector<std::string>{path("shak.txt")});
  EXPECT_EQ(saved.config.data.tokenizer, path("chars.json"));
  EXPECT_EQ(saved.config.out_dir, path("run"));
  // From another directory: by the stored paths, or naming them again relative or absolute.
  ASSERT_EQ(run_in(path("elsewhere"), {"train", "--out", "../run", "--resume", "--quiet"}), 0) << err();
  ASSERT_EQ(run_in(path("elsewhere"), {"train", "--out", "../run", "--resume", "--data", path("shak.txt"), "-t",
                                       "../a/../chars.json", "--quiet"}),
            0)
      << err();
  // The data moved: refused where it was, found by its content where --data names it.
  fs::rename(path("shak.txt"), path("elsewhere/moved.txt"));
  EXPECT_EQ(run_in(path("elsewhere"), {"train", "--out", "../run", "--resume", "--quiet"}), 1);
  EXPECT_NE(err().find(path("shak.txt") + " (data.train_paths[0], recorded when the run started) cannot be read"),
            std::string::npos) << err();
  EXPECT_NE(err().find("name its new place with --data"), std::string::npos) << err();
  ASSERT_EQ(run_in(path("elsewhere"), {"train", "--out", "../run", "--resume", "--data", "moved.txt", "--quiet"}), 0)
      << err();
  EXPECT_NE(err().find("resume: data.train_paths[0]: " + path("shak.txt") + " moved to " + path("elsewhere/moved.txt") +
                       " (the same 4400 bytes"),
            std::string::npos) << err();
  // Other content under the run's name, or at another path, is refused.
  std::ofstream(path("other.txt")) << text.substr(1) << "t";
  EXPECT_EQ(run({"train", "--out", path("run"), "--resume", "--data", path("other.txt"), "--quiet"}), 1);
  EXPECT_NE(err().find("data.train_paths[0]: " + path("other.txt") + " is not the content of " + path("shak.txt") +
                       " (the run's): 4400 bytes, head and tail hash "),
            std::string::npos) << err();
  fs::rename(path("other.txt"), path("shak.txt"));
  EXPECT_EQ(run({"train", "--out", path("run"), "--resume", "--quiet"}), 1);
  EXPECT_NE(err().find("data.train_paths[0]: " + path("shak.txt") + " changed since the run started"),
            std::string::npos) << err();
}

TEST_F(TrainCliTest, RaisingStepsOnResumeContinuesAsTheLongerRun) {
  // wsd over 6 steps decays in none of them (T_d = round(0.2 x 6) = 1, stable while t <= 5), so the
  // 6-step run is the start of the 12-step one, and raising --steps extends its stable phase.
  auto whole = run_args("whole", 12), short_run = run_args("short", 6);
  for (auto* args : {&whole, &short_run}) args->insert(args->end(), {"--schedule", "wsd"});
  ASSERT_EQ(run(whole), 0) << err();
  ASSERT_EQ(run(short_run), 0) << err();
  ASSERT_EQ(run({"train", "--out", path("short"), "--resume", "--steps", "12", "--quiet"}), 0) << err();
  EXPECT_NE(err().find("resume: --steps 6 -> 12: the wsd schedule is recomputed over 12 steps; the lr goes from "
                       "0.003 (step 6) to 0.003 (step 7)"),
            std::string::npos) << err();
  expect_identical_files(train::checkpoint_path(path("whole"), 12), train::checkpoint_path(path("short"), 12));
  // Below the step the run has reached: refused.
  EXPECT_EQ(run({"train", "--out", path("short"), "--resume", "--steps", "5", "--quiet"}), 1);
  EXPECT_NE(err().find("--steps 5 is below step 12, which " + train::checkpoint_path(path("short"), 12) +
                       " has reached: give --steps 12 or more"),
            std::string::npos) << err();
}

TEST_F(TrainCliTest, LoRARunWritesAdaptersThatLoraMergeFolds) {
  auto args = run_args("lora", 3);
  args.insert(args.end(), {"--lora-rank", "2", "--lora-alpha", "8", "--lora-targets", "q,v,down"});
  ASSERT_EQ(run(args), 0) << err();
  // llama2c-stories260k has 5 layers: 15 adapted
  EXPECT_NE(err().find("lora: rank 2, alpha 8, dropout 0, 15 adapted layers; base " + path("lora") + "/base.safetensors"),
            std::string::npos) << err();
  const std::string last = train::list_checkpoints(path("lora")).back().second;
  const formats::LoRAAdapterInfo info = formats::read_lora_adapter_info(last);
  EXPECT_EQ(info.options.targets, (std::vector<std::string>{"q", "v", "down"}));
  EXPECT_EQ(info.options.alpha, 8.0);
  // the adapters, their Adam moments and the run metadata: under a quarter of the base
  EXPECT_LT(fs::file_size(last) * 4, fs::file_size(path("lora") + "/base.safetensors"));
  ASSERT_EQ(run({"lora", "merge", "--adapter", last, "--out", path("merged.safetensors")}), 0) << err();
  const auto merged = formats::load_decoder_lm(path("merged.safetensors"));
  const auto adapted = formats::load_decoder_lm(path("lora") + "/base.safetensors");
  formats::load_lora_adapter(*adapted, last);
  const Tensor ids = Tensor::of({1, 2, 3, 4, 5, 6, 7, 8}, {1, 8}, DType::i64);
  merged->eval();
  adapted->eval();
  EXPECT_TENSOR_CLOSE(merged->forward(ids).logits, adapted->forward(ids).logits, 1e-5, 0.0);

  EXPECT_EQ(run({"train", "--out", path("lora"), "--resume", "--lora-rank", "4", "--quiet"}), 1);
  EXPECT_NE(err().find("lora.rank: 2 -> 4"), std::string::npos) << err();
  auto unpaired = run_args("unpaired", 3);
  unpaired.insert(unpaired.end(), {"--lora-alpha", "8"});
  EXPECT_EQ(run(unpaired), 1);
  EXPECT_NE(err().find("need --lora-rank"), std::string::npos) << err();
  auto unknown = run_args("unknown", 3);
  unknown.insert(unknown.end(), {"--lora-rank", "2", "--lora-targets", "q,wq"});
  EXPECT_EQ(run(unknown), 1);
  EXPECT_NE(err().find("unknown target 'wq' (known: q, k, v, o, gate, up, down, fc, proj)"), std::string::npos) << err();
}

// QLoRA: the base's Linear weights held in Q4_0 while the adapters train; the adapter file records
// the base type, so resuming and merging hold the base the same way, and the merged model is the
// dequantised base plus the adapters.
TEST_F(TrainCliTest, QLoRATrainsOverAQ4_0BaseResumesAndMerges) {
  auto args = run_args("qlora", 4);
  args.insert(args.end(), {"--lora-rank", "2", "--lora-targets", "q,v,down", "--lora-base-type", "q4_0"});
  args.erase(std::find(args.begin(), args.end(), "--quiet"));  // the run's summary names the base type
  ASSERT_EQ(run(args), 0) << err();
  EXPECT_NE(err().find("adapted layers; base " + path("qlora") + "/base.safetensors held in q4_0"), std::string::npos)
      << err();
  const std::string last = train::list_checkpoints(path("qlora")).back().second;
  EXPECT_EQ(formats::read_lora_adapter_info(last).options.base_type, QuantType::q4_0);
  ASSERT_EQ(run({"train", "--out", path("qlora"), "--resume", "--steps", "6", "--quiet"}), 0) << err();
  const std::string resumed = train::list_checkpoints(path("qlora")).back().second;
  ASSERT_EQ(run({"lora", "merge", "--adapter", resumed, "--out", path("merged.safetensors")}), 0) << err();
  const auto merged = formats::load_decoder_lm(path("merged.safetensors"));
  const auto adapted = formats::load_decoder_lm(path("qlora") + "/base.safetensors");
  formats::load_lora_adapter(*adapted, resumed);
  EXPECT_FALSE(adapted->named_quantized().empty());  // loading the adapter quantised the base again
  EXPECT_TRUE(merged->named_quantized().empty());
  const Tensor ids = Tensor::of({1, 2, 3, 4, 5, 6, 7, 8}, {1, 8}, DType::i64);
  merged->eval();
  adapted->eval();
  // equal but for the activations' 8-bit rounding in the adapted model's quantised layers
  const Tensor a = adapted->forward(ids).logits, m = merged->forward(ids).logits;
  EXPECT_LT(max(abs(a - m)).item(), 0.02 * max(abs(a)).item());
  // dense formats refuse a quantised model instead of dropping its weights
  formats::save_checkpoint(*merged, path("dense.safetensors"));
  EXPECT_THROW_WITH(formats::save_checkpoint(*adapted, path("nope.safetensors")), "quantised weights", "q4_0",
                    "write gguf");
}

// Options are checked before anything is written, each refusal one line naming the flag: --lr 0,
// --context beyond max_seq_len, --warmup with a schedule that has none, a huge --lora-rank (the
// memory estimate counts the adapters), --config with --init-from.
TEST_F(TrainCliTest, OptionsAreCheckedBeforeTheDiskAndNamed) {
  expect_refused(with(run_args("r", 3), "--lr", "0"), {"lr 0 (--lr) must be > 0"}, "r");
  expect_refused(with(run_args("r", 3), "--context", "32"), {"--context 32 exceeds the model's max_seq_len 16"}, "r");
  for (const char* schedule : {"constant", "minimind_cosine"})
    expect_refused(with(run_args("r", 4), "--schedule", schedule),
                   {std::string("schedule ") + schedule + " has no warmup", "(--warmup)"}, "r");
  expect_refused(with(run_args("r", 3), "--lora-rank", "1000000000"), {"this LoRA run needs about", "LoRA adapters",
                                                                         "--lora-rank"}, "r");
  EXPECT_EQ(err().find("bad_alloc"), std::string::npos) << err();
  expect_refused(with(run_args("r", 3), "--data", path("missing.bin")), {"missing.bin"}, "r");
  const std::string init = path("init.safetensors");
  formats::save_checkpoint(models::DecoderLM(models::parse_model_config(models::model_config_with_overrides(
                              "llama2c-stories260k", {"vocab_size=32", "dim=32", "max_seq_len=16"}))),
                          init);
  expect_refused(with(run_args("r", 3), "--init-from", init), {"--config", "--init-from", "give one"}, "r");
  // flags the chosen schedule or optimizer would ignore
  expect_refused(with(with(run_args("r", 4), "--schedule", "wsd"), "--min-lr", "1e-4"),
                 {"--min-lr would be ignored: --schedule wsd does not use it"}, "r");
  expect_refused(with(run_args("r", 3), "--warmdown-fraction", "0.3"), {"--warmdown-fraction would be ignored"}, "r");
  expect_refused(with(run_args("r", 3), "--momentum", "0.8"), {"--momentum would be ignored: --optimizer adamw"}, "r");
  expect_refused(with(with(run_args("r", 3), "--optimizer", "sgd"), "--beta1", "0.8"), {"--beta1 would be ignored"}, "r");
  expect_refused(with(run_args("r", 3), "--optimizer", "nanochat"), {"--lr would be ignored: --optimizer nanochat"}, "r");
}

// With --val-fraction 0 there is no validation: the summary says so instead of "best val loss 0.0000".
TEST_F(TrainCliTest, NoValidationIsSaidSo) {
  ASSERT_EQ(run(with(run_args("noval", 3), "--val-fraction", "0")), 0) << err();
  EXPECT_NE(out().find("; no validation"), std::string::npos) << out();
  EXPECT_EQ(out().find("best val loss"), std::string::npos) << out();
}

// --set with --init-from: what keeps every weight (dropout) is applied and recorded, what would
// change a weight's shape (dim) is refused before anything is written.
TEST_F(TrainCliTest, SetWithInitFromAppliesWhatKeepsTheWeightsAndRefusesTheRest) {
  const std::string init = path("init.safetensors");
  formats::save_checkpoint(models::DecoderLM(models::parse_model_config(models::model_config_with_overrides(
                              "llama2c-stories260k", {"vocab_size=32", "dim=32", "max_seq_len=16"}))),
                          init);
  std::vector<std::string> args = run_args("ft", 3);
  args.erase(args.begin() + 1, args.begin() + 9);  // --config llama2c-stories260k and its three --set
  args.insert(args.end(), {"--init-from", init, "--set", "dropout=0.1"});
  ASSERT_EQ(run(args), 0) << err();
  const std::string last = train::list_checkpoints(path("ft")).back().second;
  EXPECT_EQ(formats::read_checkpoint_config(last).dropout, 0.1);
  EXPECT_EQ(train::read_train_checkpoint(last).config.model_overrides, std::vector<std::string>{"dropout=0.1"});
  args = with(with(args, "--set", "dim=64"), "--out", path("wide"));
  expect_refused(args, {init, "--set would change its weights", "dim 32 -> 64"}, "wide");
}

// Without --weight-decay each optimizer preset has its documented default: nanochat and muon decay
// nothing (003), adamw 0.1; an explicit --weight-decay reaches Muon's matrices.
TEST_F(TrainCliTest, OptimizerPresetsHaveTheirOwnWeightDecay) {
  const std::pair<std::vector<std::string>, std::vector<std::string>> cases[] = {
      {{"--optimizer", "nanochat"}, {"adamw unembedding", "adamw vectors", "muon matrices"}},
      {{"--optimizer", "muon"}, {"adamw decay", "muon matrices"}}};
  for (const auto& [flags, groups] : cases) {
    std::vector<std::string> args = run_args(flags[1], 3);
    if (flags[1] == "nanochat") args.erase(std::find(args.begin(), args.end(), "--lr"), std::find(args.begin(), args.end(), "--lr") + 2);
    args.insert(args.end(), flags.begin(), flags.end());
    ASSERT_EQ(run(args), 0) << err();
    for (const std::string& group : groups) {
      const size_t at = err().find(group + ":");
      ASSERT_NE(at, std::string::npos) << group << " in " << err();
      const std::string line = err().substr(at, err().find('\n', at) - at);
      EXPECT_TRUE(line.ends_with("weight_decay 0")) << line;
    }
  }
  auto args = run_args("adamw", 3);
  ASSERT_EQ(run(args), 0) << err();
  EXPECT_NE(err().find("weight_decay 0.1\n"), std::string::npos) << err();
  args = run_args("muon_wd", 3);
  args.insert(args.end(), {"--optimizer", "muon", "--weight-decay", "0.05"});
  ASSERT_EQ(run(args), 0) << err();
  const size_t at = err().find("muon matrices:");
  ASSERT_NE(at, std::string::npos) << err();
  EXPECT_TRUE(err().substr(at, err().find('\n', at) - at).ends_with("weight_decay 0.05")) << err();
}

// `demo` checks every option before touching the disk and never removes a directory it did not
// make: a bad --problems (negative, 0, more than the digits allow) leaves --out as it was, a
// non-empty --out without the demo's marker is refused, a previous demo's run directory is replaced.
TEST_F(TrainCliTest, DemoValidatesFirstAndRemovesOnlyItsOwnRunDirectory) {
  fs::create_directories(path("victim"));
  std::ofstream(path("victim/notes.txt")) << "mine";
  for (const char* problems : {"-1000", "0", "100000"})
    expect_refused({"demo", "--steps", "1", "--problems", problems, "--out", path("victim")},
                   {std::string("--problems ") + problems});
  expect_refused({"demo", "--steps", "1", "--problems", "50", "--out", path("victim")},
                 {path("victim"), "not empty", "choose another --out"});
  EXPECT_EQ(testing::read_text(path("victim/notes.txt")), "mine");
  for (int run_number = 0; run_number < 2; ++run_number) {  // the second run replaces the first's directory
    ASSERT_EQ(run({"demo", "--steps", "1", "--problems", "50", "--out", path("demo")}), 0) << err();
    EXPECT_NE(out().find("held-out problems answered exactly"), std::string::npos) << out();
    EXPECT_TRUE(fs::exists(path("demo/.nanoformer-demo")));
  }
}

// A MiniMind DPO file of `pairs` lines: the chosen answer repeats the user's letter, the rejected
// one answers "no".
void write_preference_file(const std::string& path, int pairs) {
  std::ofstream out(path);
  for (int i = 0; i < pairs; ++i) {
    const std::string letter(1, static_cast<char>('a' + i % 26));
    const std::string user = R"({"role": "user", "content": "say )" + letter + R"("})";
    out << R"({"chosen": [)" << user << R"(, {"role": "assistant", "content": ")" << letter << letter << letter
        << R"("}], "rejected": [)" << user << R"(, {"role": "assistant", "content": "no"}]})" << "\n";
  }
}

// The per-step lines of a run's metrics.jsonl (those with rewards).
std::vector<nlohmann::json> dpo_steps(const std::string& metrics) {
  std::vector<nlohmann::json> steps;
  std::ifstream in(metrics);
  for (std::string line; std::getline(in, line);) {
    nlohmann::json j = nlohmann::json::parse(line);
    if (j.contains("rewards/margins")) steps.push_back(std::move(j));
  }
  return steps;
}

class DpoCliTest : public TrainCliTest {
 protected:
  void SetUp() override {
    TrainCliTest::SetUp();
    testing::save_tiny_chat_model(path("chat"));
    write_preference_file(path("dpo.jsonl"), 24);
  }
  std::vector<std::string> dpo_args(const std::string& out, int steps) const {
    return {"train", "--objective", "dpo", "--init-from", path("chat/model.safetensors"), "--tokenizer",
            path("chat/tokenizer.json"), "--data", path("dpo.jsonl"), "--batch-size", "4", "--context", "96",
            "--steps", std::to_string(steps), "--lr", "3e-3", "--warmup", "0", "--schedule", "constant",
            "--eval-every", "0", "--eval-batches", "2", "--val-fraction", "0.25", "--out", path(out), "--quiet"};
  }
  // Trains and checks what DPO promises: step 1 sees the policy equal to the reference (rewards 0,
  // loss at its value for z = 0), then the margin and the accuracy rise, nothing is nan.
  void expect_preference_learned(const std::vector<std::string>& args, const std::string& out, double start_loss,
                                 double min_margin = 0.5) {
    ASSERT_EQ(run(args), 0) << err();
    const auto steps = dpo_steps(path(out + "/metrics.jsonl"));
    ASSERT_EQ(steps.size(), 30u) << err();
    EXPECT_EQ(steps.front()["rewards/margins"].get<double>(), 0.0);
    EXPECT_EQ(steps.front()["rewards/accuracies"].get<double>(), 0.0);
    EXPECT_NEAR(steps.front()["loss"].get<double>(), start_loss, 1e-6);
    for (const auto& s : steps) {
      for (const char* key : {"loss", "rewards/chosen", "rewards/rejected", "rewards/margins", "rewards/accuracies"})
        EXPECT_TRUE(std::isfinite(s[key].get<double>())) << key << " at " << s.dump();
      EXPECT_NEAR(s["rewards/margins"].get<double>(),
                  s["rewards/chosen"].get<double>() - s["rewards/rejected"].get<double>(), 1e-9);
    }
    double last_accuracy = 0, last_margin = 0;  // the mean of the last 5 steps
    for (size_t i = steps.size() - 5; i < steps.size(); ++i) {
      last_accuracy += steps[i]["rewards/accuracies"].get<double>() / 5;
      last_margin += steps[i]["rewards/margins"].get<double>() / 5;
    }
    EXPECT_GE(last_accuracy, 0.9) << err();
    EXPECT_GT(last_margin, min_margin) << err();
    EXPECT_LT(steps.back()["loss"].get<double>(), start_loss);
    // validation on the held-out pairs: the preference generalises to letters seen in training
    std::ifstream in(path(out + "/metrics.jsonl"));
    nlohmann::json val;
    for (std::string line; std::getline(in, line);)
      if (line.find("val_loss") != std::string::npos) val = nlohmann::json::parse(line);
    ASSERT_FALSE(val.is_null()) << err();
    EXPECT_GT(val["val_rewards/margins"].get<double>(), 0.0) << val.dump();
    EXPECT_FALSE(val.contains("val_ppl"));
  }
};

TEST_F(DpoCliTest, RaisesThePreferenceAccuracyAndMarginWithoutNan) {
  expect_preference_learned(dpo_args("dpo", 30), "dpo", std::log(2.0));
  EXPECT_NE(err().find("objective: dpo, sigmoid loss, beta 0.1, reference: the starting model"), std::string::npos)
      << err();
}

TEST_F(DpoCliTest, IpoAndLoRATrainToo) {
  // IPO at z = 0: (1 / (2 beta))^2 = 25 for beta 0.1
  expect_preference_learned(with(dpo_args("ipo", 30), "--dpo-loss", "ipo"), "ipo", 25.0);
  auto lora = with(dpo_args("lora", 30), "--lr", "1e-2");
  lora.insert(lora.end(), {"--lora-rank", "4", "--lora-targets", "q,k,v,o,gate,up,down"});
  expect_preference_learned(lora, "lora", std::log(2.0), 0.1);  // 4672 adapter weights move it less
  EXPECT_NE(err().find("reference: the base (LoRA adapters off)"), std::string::npos) << err();
}

TEST_F(DpoCliTest, AResumedRunKeepsTheStartingModelAsReference) {
  // the reference after --resume is the --init-from model again, not the checkpoint: the resumed
  // run's next-batch check passes and it ends bit-identical to the uninterrupted one
  ASSERT_EQ(run(with(dpo_args("whole", 6), "--save-every", "3")), 0) << err();
  ASSERT_EQ(run(with(dpo_args("parts", 3), "--save-every", "3")), 0) << err();
  ASSERT_EQ(run({"train", "--out", path("parts"), "--resume", "--steps", "6", "--quiet"}), 0) << err();
  expect_identical_files(path("whole/ckpt_00000006.safetensors"), path("parts/ckpt_00000006.safetensors"));
  EXPECT_EQ(dpo_steps(path("whole/metrics.jsonl")).back()["rewards/margins"],
            dpo_steps(path("parts/metrics.jsonl")).back()["rewards/margins"]);
}

TEST_F(DpoCliTest, WarnsWhenThePolicyStaysTheReference) {
  // an update too small to change a float: the policy stays the reference
  ASSERT_EQ(run(with(dpo_args("stuck", 6), "--lr", "1e-30")), 0) << err();
  EXPECT_NE(err().find("warning: DPO: after 5 steps the loss is still 0.6931 (ln 2) with zero rewards and margins: "
                       "the policy equals the reference"),
            std::string::npos)
      << err();
  ASSERT_EQ(run(dpo_args("moving", 6)), 0) << err();
  EXPECT_EQ(err().find("warning: DPO"), std::string::npos) << err();
}

TEST_F(DpoCliTest, BadRecordsAndFlagsAreOneLineNamingFileLineAndField) {
  auto bad_file = [&](const std::string& name, const std::string& second_line) {
    std::ofstream out(path(name));
    out << R"({"chosen": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yes"}], )"
        << R"("rejected": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "no"}]})" << "\n"
        << second_line << "\n";
    return with(dpo_args("bad", 3), "--data", path(name));
  };
  expect_refused(bad_file("no_chosen.jsonl", R"({"rejected": [{"role": "user", "content": "hi"}]})"),
                 {path("no_chosen.jsonl") + ":2: ", "no \"chosen\" field"}, "bad");
  expect_refused(bad_file("no_rejected.jsonl", R"({"chosen": [{"role": "user", "content": "hi"}]})"),
                 {path("no_rejected.jsonl") + ":2: ", "no \"rejected\" field"}, "bad");
  expect_refused(bad_file("string.jsonl", R"({"chosen": "yes", "rejected": []})"),
                 {path("string.jsonl") + ":2: ", "\"chosen\" is not an array of messages but \"yes\""}, "bad");
  expect_refused(bad_file("role.jsonl", R"({"chosen": [{"content": "hi"}], "rejected": []})"),
                 {path("role.jsonl") + ":2: ", "\"chosen\": message 0 has no \"role\""}, "bad");
  expect_refused(bad_file("content.jsonl", R"({"chosen": [], "rejected": [{"role": "user", "content": 5}]})"),
                 {path("content.jsonl") + ":2: ", "\"rejected\": message 0: \"content\" is not a string but 5"},
                 "bad");
  expect_refused(bad_file("array.jsonl", R"([1, 2])"), {path("array.jsonl") + ":2: ", "expected a JSON object"}, "bad");
  // pairs without --objective dpo, and DPO's flags without it
  expect_refused(with(run_args("pairs", 3), "--data", path("dpo.jsonl")),
                 {path("dpo.jsonl"), "chosen/rejected preference pairs", "--objective dpo"}, "pairs");
  expect_refused(with(run_args("beta", 3), "--dpo-beta", "0.2"), {"--dpo-beta would be ignored", "--objective lm"},
                 "beta");
  expect_refused(with(dpo_args("beta", 3), "--dpo-beta", "0"), {"--dpo-beta must be > 0, got 0"}, "beta");
  expect_refused(with(dpo_args("loss", 3), "--dpo-loss", "hinge"),
                 {"--dpo-loss: unknown DPO loss \"hinge\" (known: sigmoid, ipo)"}, "loss");
  expect_refused(with(dpo_args("objective", 3), "--objective", "rlhf"),
                 {"--objective: unknown objective 'rlhf' (known: lm, dpo, distill, grpo, ppo)"}, "objective");
  // a token file is not pairs
  expect_refused(with(dpo_args("tokens", 3), "--data", path("tokens.bin")),
                 {path("tokens.bin"), "preference pairs (DPO) are read from JSONL"}, "tokens");
}

// The per-step lines of a run's metrics.jsonl (those with a loss).
std::vector<nlohmann::json> step_lines(const std::string& metrics) {
  std::vector<nlohmann::json> steps;
  std::ifstream in(metrics);
  for (std::string line; std::getline(in, line);) {
    nlohmann::json j = nlohmann::json::parse(line);
    if (j.contains("loss")) steps.push_back(std::move(j));
  }
  return steps;
}

// GRPO on a task a fresh tiny model can learn from its own samples: gsm8k-layout prompts whose
// answer is always 7, one new token per completion from a character vocabulary of 28, rewarded by
// the numeric verifier (1 when the completion's number is 7).
class GrpoCliTest : public TrainCliTest {
 protected:
  void SetUp() override {
    TrainCliTest::SetUp();
    {
      std::ofstream chars(path("chars.txt"));
      chars << "Question: copy 0123456789\nAnswer:#\n";
    }
    ASSERT_EQ(run({"tokenizer", "train", "--char", "--input", path("chars.txt"), "-o", path("vocab.txt")}), 0) << err();
    std::ofstream tasks(path("tasks.jsonl"));
    for (int i = 0; i < 16; ++i)
      tasks << R"({"question": "copy )" << i % 10 << R"(", "answer": "copy it #### 7"})" << "\n";
  }
  std::vector<std::string> grpo_args(const std::string& out, int steps) const {
    return {"train", "--objective", "grpo", "--config", "llama2c-stories260k", "--set", "vocab_size=28", "--set",
            "dim=32", "--set", "max_seq_len=64", "--data", path("tasks.jsonl"), "--tokenizer", path("vocab.txt"),
            "--batch-size", "2", "--context", "32", "--grpo-group", "8", "--max-new-tokens", "1", "--steps",
            std::to_string(steps), "--lr", "3e-2", "--warmup", "0", "--schedule", "constant", "--out", path(out),
            "--quiet"};
  }
};

TEST_F(GrpoCliTest, TheMeanRewardRisesWithoutNan) {
  ASSERT_EQ(run(grpo_args("grpo", 20)), 0) << err();
  EXPECT_NE(err().find("objective: grpo, grpo loss, 8 completions per prompt, advantages (r - mean) / (std + 1e-4)"),
            std::string::npos)
      << err();
  const auto steps = step_lines(path("grpo/metrics.jsonl"));
  ASSERT_EQ(steps.size(), 20u) << err();
  double first = 0, last = 0;  // mean reward of the first and of the last 5 steps
  for (size_t i = 0; i < steps.size(); ++i) {
    const auto& s = steps[i];
    for (const char* key : {"loss", "reward", "reward_std", "accuracy", "clip_ratio/region_mean",
                            "completions/mean_length", "rollout_tokens_per_s", "grad_norm"})
      EXPECT_TRUE(s.contains(key) && std::isfinite(s[key].get<double>())) << key << " at " << s.dump();
    EXPECT_EQ(s["accuracy"].get<double>(), s["reward"].get<double>());  // a 0/1 verifier
    EXPECT_EQ(s["completions/mean_length"].get<double>(), 1.0);
    EXPECT_EQ(s["tokens"].get<int64_t>(), 16 * static_cast<int64_t>(i + 1));  // 2 prompts x 8 completions x 1 token
    if (i < 5) first += s["reward"].get<double>() / 5;
    if (i + 5 >= steps.size()) last += s["reward"].get<double>() / 5;
  }
  EXPECT_GT(last, first + 0.2) << "mean reward: first 5 steps " << first << ", last 5 " << last;
}

TEST_F(GrpoCliTest, CispoWithKLIterationsAndLoRARunWithoutNan) {
  auto args = with(with(grpo_args("cispo", 4), "--grpo-loss", "cispo"), "--grpo-beta", "0.04");
  args = with(with(args, "--grpo-iterations", "2"), "--grpo-epsilon-high", "5");
  ASSERT_EQ(run(args), 0) << err();
  EXPECT_NE(err().find("reference: the starting model (a frozen copy), 2 iteration(s) per rollout"), std::string::npos)
      << err();
  for (const auto& s : step_lines(path("cispo/metrics.jsonl")))
    for (const char* key : {"loss", "kl", "cispo_clip_ratio"})
      EXPECT_TRUE(s.contains(key) && std::isfinite(s[key].get<double>())) << key << " at " << s.dump();
  auto lora = with(with(grpo_args("lora", 3), "--lora-rank", "4"), "--grpo-beta", "0.1");
  lora = with(lora, "--grpo-loss", "reinforce");
  ASSERT_EQ(run(lora), 0) << err();
  EXPECT_NE(err().find("reinforce loss, 8 completions per prompt, advantages r - mean"), std::string::npos) << err();
  EXPECT_NE(err().find("reference: the base (LoRA adapters off)"), std::string::npos) << err();
  const auto steps = step_lines(path("lora/metrics.jsonl"));
  ASSERT_EQ(steps.size(), 3u);
  EXPECT_EQ(steps.front()["kl"].get<double>(), 0.0);  // the adapters start at B = 0: the policy is the base
}

TEST_F(GrpoCliTest, AResumedRunSamplesAndEndsAsTheUninterruptedOne) {
  // the rollouts' draws follow from --seed and the step: a resume continues bit for bit
  auto args = [&](const std::string& out, int steps) {
    return with(with(grpo_args(out, steps), "--save-every", "2"), "--grpo-beta", "0.04");
  };
  ASSERT_EQ(run(args("whole", 4)), 0) << err();
  ASSERT_EQ(run(args("parts", 2)), 0) << err();
  ASSERT_EQ(run({"train", "--out", path("parts"), "--resume", "--steps", "4", "--quiet"}), 0) << err();
  EXPECT_NE(err().find("objective: grpo, grpo loss, 8 completions per prompt"), std::string::npos) << err();
  expect_identical_files(path("whole/ckpt_00000004.safetensors"), path("parts/ckpt_00000004.safetensors"));
  const auto whole = step_lines(path("whole/metrics.jsonl")), parts = step_lines(path("parts/metrics.jsonl"));
  ASSERT_EQ(whole.size(), 4u);
  ASSERT_EQ(parts.size(), 4u);
  for (const char* key : {"reward", "kl", "grad_norm"}) EXPECT_EQ(whole.back()[key], parts.back()[key]) << key;
}

TEST_F(GrpoCliTest, AVerifierCommandGivesTheReward) {
  // echo ignores its stdin and prints {"reward": 1} for every completion: argv, no shell
  auto args = with(with(grpo_args("cmd", 2), "--verifier", "command"), "--verifier-command", R"(echo {"reward": 1})");
  ASSERT_EQ(run(args), 0) << err();
  for (const auto& s : step_lines(path("cmd/metrics.jsonl"))) {
    EXPECT_EQ(s["reward"].get<double>(), 1.0) << s.dump();
    EXPECT_EQ(s["reward_std"].get<double>(), 0.0) << s.dump();
  }
}

TEST_F(GrpoCliTest, BadRecordsVerifiersAndFlagsAreOneLine) {
  {
    std::ofstream bad(path("no_answer.jsonl"));
    bad << R"({"question": "copy 1", "answer": "#### 7"})" << "\n" << R"({"question": "copy 2"})" << "\n";
  }
  expect_refused(with(grpo_args("bad", 2), "--data", path("no_answer.jsonl")),
                 {path("no_answer.jsonl") + ":2: ", "field 'answer' is missing"}, "bad");
  const std::string where = path("tasks.jsonl") + ":";
  // a verifier fails during the first step, after the run's description: its error is the one
  // line after it
  auto expect_verifier_error = [&](const std::vector<std::string>& args, const std::vector<std::string>& parts) {
    EXPECT_EQ(run(args), 1) << err();
    const std::string e = err();
    const std::string last = e.substr(e.rfind('\n', e.size() - 2) + 1);
    EXPECT_EQ(e.find("nanoformer: "), e.find(last)) << e;  // no other error line before it
    EXPECT_EQ(std::count(last.begin(), last.end(), '\n'), 1) << e;
    for (const std::string& part : parts) EXPECT_NE(last.find(part), std::string::npos) << part << " in: " << e;
  };
  auto verifier = [&](const std::string& command) {
    return with(with(grpo_args("v", 2), "--verifier", "command"), "--verifier-command", command);
  };
  expect_verifier_error(verifier("echo not-json"),
                 {"train: --verifier-command 'echo not-json': " + where, "printed malformed JSON, not {\"reward\": R}: \"not-json\""});
  expect_verifier_error(verifier("false"), {"train: --verifier-command 'false': " + where, ": exited with status 1"});
  expect_verifier_error(verifier(R"(echo {"score": 1})"), {where, "printed no field 'reward': {\"score\":1}"});
  expect_verifier_error(verifier(R"(echo {"reward": "high"})"), {where, "field 'reward' is not a finite number but \"high\""});
  expect_refused(with(with(grpo_args("np", 2), "--verifier", "command"), "--verifier-command",
                      path("no-such-program")),  // before the run's directory is made
                 {"train: --verifier-command '" + path("no-such-program") + "': " + path("no-such-program") +
                  " is not an executable program"},
                 "np");
  expect_verifier_error(with(verifier("sleep 5"), "--verifier-timeout", "0.2"),
                 {"train: --verifier-command 'sleep 5': " + where, "no answer within --verifier-timeout 0.2 s"});
  // flags
  expect_refused(with(grpo_args("f", 2), "--grpo-loss", "ppo"),
                 {"--grpo-loss: unknown loss 'ppo' (known: grpo, bnpo, dr_grpo, dapo, cispo, reinforce)"}, "f");
  expect_refused(with(grpo_args("f", 2), "--grpo-group", "1"), {"--grpo-group must be >= 2"}, "f");
  expect_refused(with(grpo_args("f", 2), "--verifier", "command"), {"--verifier command needs --verifier-command"}, "f");
  expect_refused(with(grpo_args("f", 2), "--max-new-tokens", "40"),
                 {path("tasks.jsonl") + ":1: the prompt's", "and --max-new-tokens 40 exceed --context 32"}, "f");
  expect_refused(with(run_args("f", 2), "--grpo-beta", "0.1"), {"--grpo-beta would be ignored", "--objective lm"}, "f");
  expect_refused(with(grpo_args("f", 2), "--tools", "shell"), {"--tools: unknown tool 'shell'", "calculator"}, "f");
  expect_refused(with(run_args("f", 2), "--tools", "calculator"), {"--tools would be ignored", "grpo and ppo"}, "f");
  // the tasks' character vocabulary has no nanochat tokens, and no chat template to call tools through
  expect_refused(with(grpo_args("f", 2), "--tools", "calculator"), {"--tools", "has no chat template to call tools through"}, "f");
  expect_refused(with(grpo_args("f", 2), "--max-tool-turns", "-1"), {"--max-tool-turns must be >= 0"}, "f");
  expect_refused(with(grpo_args("f", 2), "--call-reward", "-0.5"), {"--call-reward must be >= 0"}, "f");
}

class DistillCliTest : public TrainCliTest {
 protected:
  void SetUp() override {
    TrainCliTest::SetUp();
    // the teacher: the pattern learned for a while by a model of the student's vocabulary
    ASSERT_EQ(run(with(run_args("teacher", 40, "dim=48"), "--save-every", "40")), 0) << err();
  }
  std::string teacher() const { return path("teacher/ckpt_00000040.safetensors"); }
  // A fresh, smaller student distilled from the teacher for `steps` steps into `out`.
  std::vector<std::string> distill_args(const std::string& out, int steps) const {
    auto args = with(with(run_args(out, steps, "dim=16"), "--save-every", std::to_string(steps)), "--lr", "1e-2");
    args.insert(args.end(), {"--objective", "distill", "--teacher", teacher()});
    return args;
  }
};

TEST_F(DistillCliTest, LowersTheKlFromTheTeacherWithoutNanAndLogsBothParts) {
  // the mean distill_loss (T^2 KL) of the first and of the last 5 steps of a run at `alpha`, T = 2
  auto kl_first_and_last = [&](const std::string& out, const std::string& alpha) {
    auto args = with(distill_args(out, 30), "--distill-temperature", "2");
    args.insert(args.end(), {"--distill-alpha", alpha});
    EXPECT_EQ(run(args), 0) << err();
    EXPECT_NE(err().find("objective: distill, teacher " + teacher() + ", temperature 2, alpha " + alpha),
              std::string::npos)
        << err();
    const auto steps = step_lines(path(out + "/metrics.jsonl"));
    EXPECT_EQ(steps.size(), 30u) << err();
    const double a = std::stod(alpha);
    double first = 0, last = 0;
    for (size_t i = 0; i < steps.size(); ++i) {
      const auto& s = steps[i];
      for (const char* key : {"loss", "ce_loss", "distill_loss"})
        EXPECT_TRUE(std::isfinite(s[key].get<double>())) << key << " at " << s.dump();
      // loss = alpha ce_loss + (1 - alpha) distill_loss, distill_loss = T^2 KL
      EXPECT_NEAR(s["loss"].get<double>(), a * s["ce_loss"].get<double>() + (1 - a) * s["distill_loss"].get<double>(),
                  1e-5)
          << s.dump();
      if (i < 5) first += s["distill_loss"].get<double>() / 5;
      if (i + 5 >= steps.size()) last += s["distill_loss"].get<double>() / 5;
    }
    return std::pair{first, last};
  };
  const auto [first, last] = kl_first_and_last("kd", "0");  // the teacher alone
  EXPECT_GT(first, 0.05);
  EXPECT_LT(last, 0.5 * first) << "KL: first 5 steps " << first << ", last 5 " << last;
  // the data alone (alpha 1: the KL weighs nothing) bring the student less close to the teacher
  const auto [ce_first, ce_last] = kl_first_and_last("ce", "1");
  EXPECT_LT(last, 0.5 * ce_last) << "KL after 30 steps: distilled " << last << ", cross-entropy only " << ce_last;
  // validation stays the student's cross-entropy (perplexity beside it)
  const std::string metrics = testing::read_text(path("kd/metrics.jsonl"));
  EXPECT_NE(metrics.find("val_ppl"), std::string::npos) << metrics;
}

TEST_F(DistillCliTest, AStudentThatIsTheTeacherStartsAtKlZero) {
  // the teacher's logits are computed on the fly by a frozen copy: at step 1 they are the student's
  ASSERT_EQ(run({"train", "--init-from", teacher(), "--objective", "distill", "--teacher", teacher(), "--data",
                 path("tokens.bin"), "--batch-size", "4", "--context", "16", "--steps", "2", "--lr", "1e-2",
                 "--warmup", "0", "--eval-every", "0", "--out", path("same"), "--quiet"}),
            0)
      << err();
  EXPECT_NE(err().find("temperature 1, alpha 0.5 (loss = alpha CE + (1 - alpha) T^2 KL)"), std::string::npos)
      << err();  // the defaults
  const auto steps = step_lines(path("same/metrics.jsonl"));
  ASSERT_EQ(steps.size(), 2u) << err();
  EXPECT_NEAR(steps[0]["distill_loss"].get<double>(), 0.0, 1e-6) << steps[0].dump();
  EXPECT_GT(steps[1]["distill_loss"].get<double>(), 1e-6) << steps[1].dump();  // the student moved, the teacher not
}

TEST_F(DistillCliTest, AResumedRunReloadsTheTeacherAndItsSettings) {
  // the teacher, T and alpha are in the checkpoint's config: `--resume` alone continues the same run
  const auto kd = [&](const std::string& out, int steps) {
    auto args = with(with(distill_args(out, steps), "--save-every", "3"), "--distill-temperature", "1.5");
    args.insert(args.end(), {"--distill-alpha", "0.2"});
    return args;
  };
  ASSERT_EQ(run(kd("whole", 6)), 0) << err();
  ASSERT_EQ(run(kd("parts", 3)), 0) << err();
  ASSERT_EQ(run({"train", "--out", path("parts"), "--resume", "--steps", "6", "--quiet"}), 0) << err();
  EXPECT_NE(err().find("objective: distill, teacher " + teacher() + ", temperature 1.5, alpha 0.2"), std::string::npos)
      << err();
  expect_identical_files(path("whole/ckpt_00000006.safetensors"), path("parts/ckpt_00000006.safetensors"));
  EXPECT_EQ(step_lines(path("whole/metrics.jsonl")).back()["distill_loss"],
            step_lines(path("parts/metrics.jsonl")).back()["distill_loss"]);
}

TEST_F(DistillCliTest, OnChatDataTheCrossEntropyIsTheLmObjectivesOverTheResponseMask) {
  // SFT data: the distillation's ce_loss at step 1 is the lm objective's loss on the same batch
  // (the assistant's tokens only), and a teacher equal to the student adds KL 0
  testing::save_tiny_chat_model(path("chat"));
  {
    std::ofstream chat(path("chat.jsonl"));
    for (int i = 0; i < 16; ++i)
      chat << R"({"conversations": [{"role": "user", "content": "say )" << static_cast<char>('a' + i)
           << R"("}, {"role": "assistant", "content": "ok )" << static_cast<char>('a' + i) << R"("}]})" << "\n";
  }
  const auto sft = [&](const std::string& out) {
    return std::vector<std::string>{"train", "--init-from", path("chat/model.safetensors"), "--tokenizer",
                                    path("chat/tokenizer.json"), "--data", path("chat.jsonl"), "--batch-size", "4",
                                    "--context", "64", "--steps", "1", "--warmup", "0", "--eval-every", "0",
                                    "--out", path(out), "--quiet"};
  };
  ASSERT_EQ(run(sft("lm")), 0) << err();
  auto kd = sft("kd");
  kd.insert(kd.end(), {"--objective", "distill", "--teacher", path("chat/model.safetensors")});
  ASSERT_EQ(run(kd), 0) << err();
  const auto lm_step = step_lines(path("lm/metrics.jsonl")).at(0), kd_step = step_lines(path("kd/metrics.jsonl")).at(0);
  EXPECT_NEAR(kd_step["ce_loss"].get<double>(), lm_step["loss"].get<double>(), 1e-6) << kd_step.dump();
  EXPECT_EQ(kd_step["tokens"], lm_step["tokens"]);  // the target tokens: the answers'
  EXPECT_NEAR(kd_step["distill_loss"].get<double>(), 0.0, 1e-6) << kd_step.dump();
  // a teacher of nanochat's padded vocabulary (320) is not the student's (259)
  testing::save_tiny_chat_model(path("padded"), false, 128, 320);
  expect_refused(with(with(kd, "--teacher", path("padded/model.safetensors")), "--out", path("padded_kd")),
                 {"--teacher " + path("padded/model.safetensors") + " has vocab_size 320 but the student has 259"},
                 "padded_kd");
}

// `args` without `flag` and its value.
std::vector<std::string> without(std::vector<std::string> args, const std::string& flag) {
  const auto at = std::find(args.begin(), args.end(), flag);
  if (at != args.end()) args.erase(at, at + 2);
  return args;
}

TEST_F(DistillCliTest, TeacherLogitsReadFromAFileGiveTheOnTheFlyTeachersRun) {
  // --write-teacher-logits runs the teacher on the run's batches (6 steps x 2 micro-batches) and trains
  // nothing; --teacher-logits then trains bit-identically to the teacher computed on the fly
  const std::string file = path("teacher_logits.safetensors");
  const auto kd = [&](const std::string& out) {
    return with(with(distill_args(out, 6), "--grad-accum", "2"), "--distill-temperature", "1.5");
  };
  ASSERT_EQ(run(with(kd("written"), "--write-teacher-logits", file)), 0) << err();
  EXPECT_NE(out().find("wrote the logits of " + teacher() + " on 12 batches to " + file), std::string::npos) << out();
  EXPECT_FALSE(fs::exists(path("written"))) << "no run directory for the file alone";
  ASSERT_EQ(run(kd("on_the_fly")), 0) << err();
  ASSERT_EQ(run(with(without(kd("from_file"), "--teacher"), "--teacher-logits", file)), 0) << err();
  EXPECT_NE(err().find("objective: distill, teacher logits from " + file + " (12 batches), temperature 1.5"),
            std::string::npos)
      << err();
  const auto fly = step_lines(path("on_the_fly/metrics.jsonl")), read = step_lines(path("from_file/metrics.jsonl"));
  ASSERT_EQ(fly.size(), 6u);
  ASSERT_EQ(read.size(), 6u);
  for (size_t i = 0; i < fly.size(); ++i)
    for (const char* key : {"loss", "ce_loss", "distill_loss"}) {
      EXPECT_TRUE(std::isfinite(read[i][key].get<double>())) << read[i].dump();
      EXPECT_EQ(read[i][key], fly[i][key]) << key << " at step " << i + 1;
    }
  expect_identical_files(path("on_the_fly/ckpt_00000006.safetensors"), path("from_file/ckpt_00000006.safetensors"));
  // --resume reads the file again (its path is in the run's config)
  ASSERT_EQ(run(with(with(without(kd("parts"), "--teacher"), "--teacher-logits", file), "--steps", "3")), 0) << err();
  ASSERT_EQ(run({"train", "--out", path("parts"), "--resume", "--steps", "6", "--quiet"}), 0) << err();
  expect_identical_files(path("on_the_fly/ckpt_00000006.safetensors"), path("parts/ckpt_00000006.safetensors"));
}

TEST_F(DistillCliTest, AMismatchedTeacherLogitsFileIsOneLineNamingIt) {
  const std::string file = path("teacher_logits.safetensors");
  ASSERT_EQ(run(with(distill_args("w", 3), "--write-teacher-logits", file)), 0) << err();
  const auto from_file = [&](const std::string& out, int steps) {
    return with(without(distill_args(out, steps), "--teacher"), "--teacher-logits", file);
  };
  // before the run's directory is made
  expect_refused(from_file("long", 5),
                 {"--teacher-logits " + file + ": holds 3 batches but the run trains on 5 (--steps x --grad-accum)"},
                 "long");
  expect_refused(with(from_file("vocab", 3), "--set", "vocab_size=48"),
                 {"--teacher-logits " + file + ": logits over a vocabulary of 32 but the student has vocab_size 48"},
                 "vocab");
  expect_refused(with(from_file("model", 3), "--teacher-logits", teacher()),
                 {"--teacher-logits " + teacher() + ": not a teacher-logits file"}, "model");
  expect_refused(with(from_file("missing", 3), "--teacher-logits", path("nothing.safetensors")),
                 {"--teacher-logits " + path("nothing.safetensors") + ": "}, "missing");
  expect_refused(with(distill_args("both", 3), "--teacher-logits", file),
                 {"--teacher " + teacher() + " and --teacher-logits " + file + " both give the teacher"}, "both");
  expect_refused(with(run_args("lm", 3), "--teacher-logits", file), {"--teacher-logits would be ignored"}, "lm");
  expect_refused(with(run_args("lm", 3), "--write-teacher-logits", file),
                 {"--write-teacher-logits would be ignored"}, "lm");
  expect_refused(with(from_file("no_teacher", 3), "--write-teacher-logits", path("other.safetensors")),
                 {"--write-teacher-logits needs --objective distill and --teacher MODEL"}, "no_teacher");
  // another batch: at the step that reads it, one line naming the file and the batch
  const auto expect_last_line = [&](const std::vector<std::string>& args, const std::string& part) {
    EXPECT_EQ(run(args), 1) << err();
    const std::string e = err();
    const std::string last = e.substr(e.rfind('\n', e.size() - 2) + 1);
    EXPECT_EQ(last.rfind("nanoformer: ", 0), 0u) << e;
    EXPECT_NE(last.find(part), std::string::npos) << part << " in: " << e;
  };
  expect_last_line(with(from_file("seed", 3), "--data-seed", "77"),
                   "--teacher-logits " + file + ": batch 0 holds other input ids than the run's batch 0");
  expect_last_line(with(from_file("context", 3), "--context", "8"),
                   "--teacher-logits " + file + ": batch 0's inputs are i64 (4, 16) but the run's batch is i64 (4, 8)");
}

TEST_F(DistillCliTest, BadTeacherAndFlagsAreOneLineNamingTheFlag) {
  expect_refused(with(distill_args("vocab", 3), "--set", "vocab_size=48"),
                 {"--teacher " + teacher() + " has vocab_size 32 but the student has 48"}, "vocab");
  expect_refused(with(run_args("lm", 3), "--teacher", teacher()), {"--teacher would be ignored", "--objective lm"},
                 "lm");
  for (const std::string t : {"0", "-1"})
    expect_refused(with(distill_args("temperature", 3), "--distill-temperature", t),
                   {"--distill-temperature must be > 0, got " + t}, "temperature");
  for (const std::string a : {"1.5", "-0.1"})
    expect_refused(with(distill_args("alpha", 3), "--distill-alpha", a), {"--distill-alpha must be in [0, 1], got " + a},
                   "alpha");
  auto no_teacher = distill_args("none", 3);
  no_teacher.erase(std::find(no_teacher.begin(), no_teacher.end(), "--teacher"),
                   std::find(no_teacher.begin(), no_teacher.end(), "--teacher") + 2);
  expect_refused(no_teacher, {"--objective distill needs --teacher MODEL"}, "none");
  expect_refused(with(distill_args("missing", 3), "--teacher", path("nothing.safetensors")),
                 {path("nothing.safetensors")}, "missing");
  // --zero 1 outside mpirun has no ranks to shard across: said, not silently ignored
  expect_refused(with(distill_args("zero", 3), "--zero", "1"), {"--zero 1 shards the optimizer state", "runs alone"}, "zero");
}

}  // namespace
}  // namespace nf
