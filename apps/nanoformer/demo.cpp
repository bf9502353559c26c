// `nanoformer demo`: the main job end to end on a built-in default, with nothing downloaded. It
// generates a multi-digit addition task (data/addition_task.h) as prompt-completion pairs, trains
// a small LLaMA-style language model on them at character level with the trainer of `nanoformer
// train` (the loss on the answers only, as in fine-tuning), then lets the model answer held-out
// problems greedily and reports exact-match accuracy and the validation loss on the answers.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>

#include "command.h"
#include "nanoformer/core/error.h"
#include "nanoformer/core/parallel.h"
#include "nanoformer/data/addition_task.h"
#include "nanoformer/infer/greedy.h"
#include "nanoformer/tokenizer/char_tokenizer.h"
#include "nanoformer/train/metrics_chart.h"
#include "nanoformer/train/trainer.h"

namespace nf::cli {
namespace {

namespace fs = std::filesystem;

struct DemoOptions {
  data::AdditionTaskOptions task{.digits = 2, .train_problems = 4500, .test_problems = 200, .seed = 1};
  int64_t steps = 3000;
  std::string out = "nanoformer-demo";
  int shown = 5;
};

// The file that marks a run directory as the demo's own: only such a directory is ever replaced.
constexpr const char* kMarker = ".nanoformer-demo";

// The options checked and the task built, before anything on disk is touched.
data::AdditionTask checked_task(const DemoOptions& o) {
  NF_CHECK(o.task.train_problems >= 1, "demo: --problems ", o.task.train_problems, " must be >= 1");
  NF_CHECK(!o.out.empty(), "demo: --out must name a directory");
  try {
    return data::make_addition_task(o.task);
  } catch (const Error& e) {
    NF_FAIL("demo: --problems ", o.task.train_problems, " with --digits ", o.task.digits, ": ", e.what());
  }
}

// A fresh run directory: `out` is created, or replaced when a previous demo made it (its marker is
// there); anything else that exists is refused, so the demo never removes what it did not create.
void fresh_run_directory(const std::string& out) {
  std::error_code ec;
  if (fs::exists(out, ec)) {
    NF_CHECK(fs::is_directory(out, ec), "demo: --out ", out, " exists and is not a directory");
    const bool ours = fs::is_regular_file(fs::path(out) / kMarker, ec);
    NF_CHECK(ours || fs::is_empty(out, ec), "demo: --out ", out, " is not empty and is not a previous demo's run ",
             "directory (no ", kMarker, " in it): choose another --out");
    if (ours) fs::remove_all(out);
  }
  fs::create_directories(out);
  std::ofstream(fs::path(out) / kMarker) << "a run directory of `nanoformer demo`: a rerun replaces it\n";
}

void run_demo(const DemoOptions& o) {
  const data::AdditionTask task = checked_task(o);
  fresh_run_directory(o.out);
  const std::string data_path = (fs::path(o.out) / "addition.jsonl").string();
  const std::string vocab_path = (fs::path(o.out) / "chars.json").string();
  {
    std::ofstream data(data_path);
    for (const data::AdditionProblem& p : task.train)
      data << nlohmann::json{{"prompt", p.prompt}, {"completion", p.answer}}.dump() << "\n";
  }
  const tokenizer::CharTokenizer chars = tokenizer::CharTokenizer::train("0123456789+=\n");
  chars.save(vocab_path);
  const data::AdditionProblem& example = task.train.front();
  std::printf("nanoformer demo: %d-digit addition, %lld training problems such as \"%s\" -> \"%s\" (the sum "
              "reversed), %d threads, BLAS: %s\n",
              o.task.digits, static_cast<long long>(o.task.train_problems), example.prompt.c_str(),
              example.answer.substr(0, example.answer.size() - 1).c_str(), num_threads(), blas_info());

  train::TrainConfig c;
  c.model = "llama2c-stories260k";
  c.model_overrides = {"name=\"demo-addition\"", "vocab_size=" + std::to_string(chars.vocab_size()), "dim=128",
                       "n_layers=4", "n_heads=4", "n_kv_heads=4", "max_seq_len=32"};
  c.data.train_paths = {data_path};
  c.data.tokenizer = vocab_path;
  c.data.val_fraction = 0.05;
  c.data.batch_size = 32;
  c.data.context = 32;
  c.optimizer.name = "adamw";
  c.optimizer.lr = 3e-3;
  c.optimizer.weight_decay = 0.1;
  c.schedule = {.kind = optim::ScheduleKind::warmup_cosine, .lr = 3e-3, .total_steps = o.steps,
                .warmup_steps = std::min<int64_t>(100, o.steps / 10), .min_lr = 3e-4};
  c.eval_every = std::max<int64_t>(1, o.steps / 10);
  c.eval_batches = 8;
  c.out_dir = o.out;
  train::Trainer trainer(c);
  std::printf("%s", trainer.describe().c_str());
  trainer.run();

  const std::string png = (fs::path(o.out) / "loss.png").string();
  train::write_metrics_chart(png, {{"demo", train::read_metrics_log((fs::path(o.out) / "metrics.jsonl").string())}},
                             "nanoformer demo: addition, character level (loss on the answers)");
  const double val = trainer.evaluate();
  std::printf("validation loss on the answers %.4f nats/char (a uniform guess of a digit: %.4f); loss curve: %s\n",
              val, std::log(10.0), png.c_str());

  const int64_t newline = *chars.token_id("\n");
  int correct = 0;
  for (size_t i = 0; i < task.test.size(); ++i) {
    const data::AdditionProblem& p = task.test[i];
    std::vector<int64_t> prompt;
    for (tokenizer::TokenId id : chars.encode(p.prompt)) prompt.push_back(id);
    const auto answer_ids = infer::greedy_generate(trainer.model(), prompt, o.task.digits + 2, newline);
    std::vector<tokenizer::TokenId> ids(answer_ids.begin(), answer_ids.end());
    const std::string answer = chars.decode(ids);
    correct += answer == p.answer;
    if (static_cast<int>(i) < o.shown)
      std::printf("  %s%s %s\n", p.prompt.c_str(), answer.substr(0, answer.size() - (answer.back() == '\n')).c_str(),
                  answer == p.answer ? "ok" : ("(expected " + p.answer.substr(0, p.answer.size() - 1) + ")").c_str());
  }
  std::printf("held-out problems answered exactly (greedy): %d / %zu = %.1f%%\n", correct, task.test.size(),
              100.0 * correct / static_cast<double>(task.test.size()));
}

}  // namespace

void add_demo_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "demo",
      "The main job end to end, nothing downloaded: generate a multi-digit addition task, train a small\n"
      "LLaMA-style language model on it at character level (progress bar, validation, checkpoints), then\n"
      "let it answer held-out problems greedily and report exact-match accuracy.\n"
      "  nanoformer demo                 (about a minute on 2 cores)\n"
      "  nanoformer demo --steps 300     (a quick look)");
  auto o = std::make_shared<DemoOptions>();
  cmd->add_option("--steps", o->steps, "Training steps")->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--digits", o->task.digits, "Digits per operand")->capture_default_str()->check(CLI::Range(1, 6));
  cmd->add_option("--problems", o->task.train_problems, "Training problems")->capture_default_str();
  cmd->add_option("--seed", o->task.seed, "Seed of the generated problems")->capture_default_str();
  cmd->add_option("--out", o->out, "Run directory: data, checkpoints, metrics, loss.png (a previous demo's is replaced; any other non-empty "
                  "directory is refused)")->capture_default_str();
  cmd->callback([o] { run_demo(*o); });
}

}  // namespace nf::cli
