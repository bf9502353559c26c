// Chat fine-tuning (SFT) end to end on a generated task, "reverse: dag" -> "gad":
// - a byte-level BPE tokenizer with ChatML's special tokens is trained here, on the task's chats,
//   by the project's BPE trainer;
// - the loss mask is exact: in a batch of two conversations of different lengths every target is
//   -100 except those predicting the assistant's reply, its <|im_end|> and the "\n" after it
//   (MiniMind's mask), and the padding of the shorter row is -100 too;
// - a tiny model trained from scratch with the Trainer on the chats answers held-out prompts (strings
//   it never saw) by greedy decoding (render_for_completion, then greedy_generate up to <|im_end|>).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "nanoformer/core/parallel.h"
#include "nanoformer/data/sft_data.h"
#include "nanoformer/infer/greedy.h"
#include "nanoformer/tokenizer/bpe_trainer.h"
#include "nanoformer/tokenizer/chat_template.h"
#include "nanoformer/train/trainer.h"

namespace nf::train {
namespace {

namespace fs = std::filesystem;
namespace tk = nf::tokenizer;

// "reverse: 314" -> "413" on every string of 3 digits, taken in a scattered order (k -> 7919 k mod
// 1000 is a bijection): the first kTrain are the training chats, the other 200 are held out.
constexpr int64_t kStrings = 1000, kTrain = 800;

struct ReverseTask {
  std::vector<std::string> train, held_out;
};

ReverseTask make_reverse_task() {
  ReverseTask task;
  for (int64_t k = 0; k < kStrings; ++k) {
    char digits[8];
    std::snprintf(digits, sizeof digits, "%03lld", static_cast<long long>(k * 7919 % kStrings));
    (k < kTrain ? task.train : task.held_out).push_back(digits);
  }
  return task;
}

std::string reversed(const std::string& s) { return {s.rbegin(), s.rend()}; }

std::string chat_line(const std::string& s) {
  return nlohmann::json{{"conversations",
                         {{{"role", "user"}, {"content", "reverse: " + s}}, {{"role", "assistant"}, {"content", reversed(s)}}}}}
             .dump() +
         "\n";
}

class SftTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("nf_sft_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    task_ = make_reverse_task();
    std::string chats, rendered;
    for (const std::string& s : task_.train) {
      chats += chat_line(s);
      rendered += "<|im_start|>system\nYou are a helpful assistant<|im_end|>\n<|im_start|>user\nreverse: " + s +
                  "<|im_end|>\n<|im_start|>assistant\n" + reversed(s) + "<|im_end|>\n";
    }
    chats_ = (dir_ / "chats.jsonl").string();
    std::ofstream(chats_) << chats;
    // Merges stop below 400 occurrences: the template's words (800 of each) merge, the digits (about
    // 30 of each pair) do not, so every digit is a token of its own, " 3" two ("Ġ", "3").
    tk::BpeTrainerOptions options;
    options.vocab_size = 400;
    options.special_tokens = {"<|endoftext|>", "<|im_start|>", "<|im_end|>"};
    options.min_frequency = task_.train.size() / 2;
    options.threads = 1;
    tokenizer_ = std::make_unique<tk::BpeTokenizer>(tk::train_bpe_from_text(rendered, options));
    tokenizer_path_ = (dir_ / "tokenizer.json").string();
    tokenizer_->save(tokenizer_path_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  tk::TokenId id_of(const std::string& special) const { return tk::require_special_token(*tokenizer_, special, "the test"); }
  std::vector<int64_t> encode(const std::string& text) const {
    const auto ids = tokenizer_->encode(text);
    return {ids.begin(), ids.end()};
  }

  fs::path dir_;
  ReverseTask task_;
  std::string chats_, tokenizer_path_;
  std::unique_ptr<tk::BpeTokenizer> tokenizer_;
};

TEST_F(SftTest, LossMaskCoversOnlyTheRepliesAndNeverThePadding) {
  // Two conversations of different lengths, in one batch (in the order the epoch's shuffle gives).
  const std::vector<std::string> strings{"12", "9876543"};
  const std::string path = (dir_ / "mask.jsonl").string();
  std::ofstream(path) << chat_line(strings[0]) + chat_line(strings[1]);
  data::DataOptions o;
  o.train_paths = {path};
  o.tokenizer = tokenizer_path_;
  o.batch_size = 2;
  o.context = 64;
  o.val_fraction = 0;
  o.show_progress = false;
  const data::TrainingData data = load_training_data(o);
  const auto& sft = dynamic_cast<const data::SftBatches&>(*data.train);
  const data::Batch batch = data.train->batch(0);

  // Each conversation as the pieces the template joins, encoded one by one.
  const int64_t start = id_of("<|im_start|>"), end = id_of("<|im_end|>");
  std::vector<std::vector<int64_t>> prompts, replies;
  for (const std::string& s : strings) {
    std::vector<int64_t> prompt{start};
    for (const auto& piece : {encode("system\nYou are a helpful assistant"), std::vector<int64_t>{end}, encode("\n"),
                              std::vector<int64_t>{start}, encode("user\nreverse: " + s), std::vector<int64_t>{end},
                              encode("\n"), std::vector<int64_t>{start}, encode("assistant\n")})
      prompt.insert(prompt.end(), piece.begin(), piece.end());
    std::vector<int64_t> reply = encode(reversed(s));
    reply.push_back(end);
    for (int64_t id : encode("\n")) reply.push_back(id);
    prompts.push_back(prompt);
    replies.push_back(reply);
  }
  const auto length = [&](size_t i) { return static_cast<int64_t>(prompts[i].size() + replies[i].size()); };
  ASSERT_LT(length(0), length(1));
  const int64_t T = length(1) - 1;  // padded to the longer row
  ASSERT_EQ(batch.inputs.shape(), (Shape{2, T}));
  const auto inputs = batch.inputs.to_vector<int64_t>(), targets = batch.targets.to_vector<int64_t>();
  int64_t trained = 0;
  for (int64_t row = 0; row < 2; ++row) {
    const size_t k = sft.example_index(0, row);
    std::vector<int64_t> ids = prompts[k];
    ids.insert(ids.end(), replies[k].begin(), replies[k].end());
    const int64_t n = static_cast<int64_t>(ids.size()), first_trained = static_cast<int64_t>(prompts[k].size());
    for (int64_t t = 0; t < T; ++t) {
      SCOPED_TRACE("row " + std::to_string(row) + ", position " + std::to_string(t));
      const int64_t at = row * T + t;
      // the input is the conversation, then padding with <|im_end|>
      EXPECT_EQ(inputs[at], t < n - 1 ? ids[t] : end);
      // the target is the next token inside the reply (its <|im_end|> and "\n" included), else -100
      const bool in_reply = t + 1 >= first_trained && t + 1 < n;
      EXPECT_EQ(targets[at], in_reply ? ids[t + 1] : data::kIgnoreIndex);
      trained += in_reply;
    }
  }
  EXPECT_EQ(trained, static_cast<int64_t>(replies[0].size() + replies[1].size()));
  EXPECT_EQ(batch.target_tokens, trained);
}

TEST_F(SftTest, FineTunedModelReversesHeldOutStrings) {
  // One thread: the run is the same on any machine's thread count, and fast beside other tests.
  const int threads = num_threads();
  set_num_threads(1);
  TrainConfig c;
  c.model = "llama2c-stories260k";  // LLaMA-style: RMSNorm, RoPE, SwiGLU; 0.4 M parameters here
  c.model_overrides = {"name=\"sft-reverse\"", "vocab_size=" + std::to_string(tokenizer_->vocab_size()), "dim=128",
                       "n_layers=2", "n_heads=4", "n_kv_heads=4", "max_seq_len=64"};
  c.data.train_paths = {chats_};
  c.data.tokenizer = tokenizer_path_;
  c.data.chat_template = "chatml";
  c.data.val_fraction = 0;
  c.data.batch_size = 32;
  c.data.context = 64;
  c.data.show_progress = false;
  c.optimizer.name = "adamw";
  c.optimizer.lr = 3e-3;
  c.optimizer.weight_decay = 0.1;
  c.schedule = {.kind = optim::ScheduleKind::warmup_cosine, .lr = 3e-3, .total_steps = 300, .warmup_steps = 30, .min_lr = 3e-4};
  c.out_dir = (dir_ / "run").string();
  c.quiet = true;
  Trainer trainer(c);
  trainer.run();

  const auto chatml = tk::make_chat_template("chatml", *tokenizer_);
  const int64_t end = chatml->end_token();
  int correct = 0;
  for (const std::string& s : task_.held_out) {
    const std::vector<tk::ChatMessage> messages{{"user", "reverse: " + s}};
    const auto prompt_ids = chatml->render_for_completion(messages);
    const std::vector<int64_t> prompt(prompt_ids.begin(), prompt_ids.end());
    const auto answer = infer::greedy_generate(trainer.model(), prompt, 8, end);
    const bool closed = !answer.empty() && answer.back() == end;
    const std::vector<tk::TokenId> reply(answer.begin(), answer.end() - closed);
    const bool right = closed && tokenizer_->decode(reply) == reversed(s);
    correct += right;
    if (!right) std::printf("  reverse: %s -> '%s'\n", s.c_str(), tokenizer_->decode(reply).c_str());
  }
  set_num_threads(threads);
  std::printf("held-out prompts answered exactly (greedy): %d / %zu\n", correct, task_.held_out.size());
  // 200 / 200 here (other seeds: at most 1 of the first 64 missed); the bound leaves room for
  // another BLAS's rounding
  EXPECT_GE(correct, 180);
}

}  // namespace
}  // namespace nf::train
