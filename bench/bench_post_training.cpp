// Post-training's speed on one model (minimind2-small, random weights, fp32), in one invocation:
// an SFT step (forward with the loss on the second half of each row, backward, AdamW step), a DPO
// step on the same rows as pairs (policy and frozen reference forwards, backward, AdamW step), a
// GRPO step (the policy's forward on sampled completions, backward, AdamW step), and GRPO's
// rollouts: 2 prompts x 8 completions of 32 tokens sampled by the batched decode. tokens/s is the
// `items_per_second` column (rows x length for the steps, completion tokens for the rollouts);
// the reporter prints the median time ratio of the DPO step to the SFT step at the same rows.
//   NANOFORMER_THREADS=2 ./build/bench_post_training --benchmark_repetitions=3
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <vector>

#include "bench_support.h"
#include "nanoformer/autograd/grad_mode.h"
#include "nanoformer/models/config/model_config.h"
#include "nanoformer/models/decoder_lm.h"
#include "nanoformer/optim/adam.h"
#include "nanoformer/optim/param_groups.h"
#include "nanoformer/ops/factory.h"
#include "nanoformer/train/dpo.h"
#include "nanoformer/train/grpo.h"

namespace {

using namespace nf;
constexpr int64_t kLength = 64;

std::unique_ptr<models::DecoderLM> build_model() {
  Generator gen(1);
  return std::make_unique<models::DecoderLM>(models::preset_config("minimind2-small"), gen);
}

// `rows` rows of random ids; targets only on the second half of each row (a response).
data::Batch response_batch(int64_t rows, int64_t vocab) {
  Generator gen(2);
  data::Batch b;
  b.inputs = randint(0, vocab, {rows, kLength}, gen);
  std::vector<int64_t> targets = randint(0, vocab, {rows, kLength}, gen).to_vector<int64_t>();
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t t = 0; t < kLength / 2; ++t) targets[static_cast<size_t>(r * kLength + t)] = data::kIgnoreIndex;
  b.targets = Tensor::from_vector(targets, {rows, kLength});
  b.target_tokens = rows * kLength / 2;
  return b;
}

optim::AdamW optimizer_for(models::DecoderLM& lm) { return optim::AdamW(optim::default_param_groups(lm, 1e-5, 0.1)); }

void BM_sft_step(benchmark::State& state) {
  auto lm = build_model();
  lm->train();
  optim::AdamW optimizer = optimizer_for(*lm);
  const data::Batch b = response_batch(state.range(0), lm->config().vocab_size);
  for (auto _ : state) {
    lm->forward(b.inputs, b.targets).loss.backward();
    optimizer.step();
    optimizer.zero_grad();
  }
  state.SetItemsProcessed(state.iterations() * state.range(0) * kLength);
}

void BM_dpo_step(benchmark::State& state) {
  auto lm = build_model(), reference = build_model();
  lm->train();
  reference->requires_grad_(false);
  optim::AdamW optimizer = optimizer_for(*lm);
  const data::Batch b = response_batch(state.range(0), lm->config().vocab_size);  // rows 2i, 2i + 1: a pair
  for (auto _ : state) {
    train::dpo_batch_loss(*lm, reference.get(), b, {}).loss.backward();
    optimizer.step();
    optimizer.zero_grad();
  }
  state.SetItemsProcessed(state.iterations() * state.range(0) * kLength);
}

// A task file and a character vocabulary for GRPO's prompts, in a directory of this process.
struct GrpoFiles {
  std::filesystem::path dir = std::filesystem::temp_directory_path() /
                              ("nf_bench_post_training_" + std::to_string(::getpid()));
  GrpoFiles() {
    std::filesystem::create_directories(dir);
    std::ofstream(dir / "vocab.txt") << R"({"code_points":[10,32,35,48,49,50,51,52,53,54,55,56,57,58,65,81,97,)"
                                     << R"(99,100,101,105,110,111,112,113,114,115,116,117,119,121],)"
                                     << R"("type":"nanoformer-char","version":1})";
    std::ofstream tasks(dir / "tasks.jsonl");
    for (int i = 0; i < 4; ++i) tasks << R"({"question": "add )" << i << R"( and 3", "answer": "#### 7"})" << "\n";
  }
  ~GrpoFiles() { std::filesystem::remove_all(dir); }
  train::TrainConfig config() const {
    train::TrainConfig c;
    c.objective = train::Objective::grpo;
    c.data.train_paths = {(dir / "tasks.jsonl").string()};
    c.data.tokenizer = (dir / "vocab.txt").string();
    c.data.batch_size = 2;
    c.data.context = 96;
    c.grpo.group_size = 8;
    c.grpo.max_new_tokens = 32;
    c.grpo.stop = {std::string(40, 'Q')};  // never completed: every completion has 32 tokens
    return c;
  }
};

void BM_grpo_rollout(benchmark::State& state) {
  auto lm = build_model();
  const GrpoFiles files;
  const train::GrpoStep grpo(files.config());
  int64_t tokens = 0, step = 0;
  for (auto _ : state) tokens += grpo.rollout(*lm, step++).completion_tokens;
  state.SetItemsProcessed(tokens);
}

void BM_grpo_step(benchmark::State& state) {
  auto lm = build_model();
  const GrpoFiles files;
  const train::GrpoStep grpo(files.config());
  const train::GrpoRollouts rollouts = grpo.rollout(*lm, 0);
  lm->train();
  optim::AdamW optimizer = optimizer_for(*lm);
  for (auto _ : state) {
    grpo.loss(*lm, nullptr, rollouts).loss.backward();
    optimizer.step();
    optimizer.zero_grad();
  }
  state.SetItemsProcessed(state.iterations() * rollouts.inputs.numel());
}

}  // namespace

BENCHMARK(BM_sft_step)->Arg(4)->ArgName("rows")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_dpo_step)->Arg(4)->ArgName("rows")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_grpo_step)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_grpo_rollout)->Unit(benchmark::kMillisecond)->UseRealTime();

int main(int argc, char** argv) { return nf::bench::run_benchmarks(argc, argv, {{"BM_dpo_step", "BM_sft_step"}}); }
