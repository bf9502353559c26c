// GRPO's pieces in the trainer (train/grpo.h, train/reward_verifier.h): group-normalised
// advantages by hand; per-token log-probs equal log_softmax gathered; the batched decode's rollouts
// at top-k 1 equal greedy generation of each prompt alone, with the completion mask on exactly the
// sampled tokens; with nanochat's calculator in the rollouts, the mask nanochat's engine gives (its
// forced answers out of the loss); the verifiers; a command's stdin, exit status and timeout.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "infer/tiny_lm.h"
#include "nanoformer/autograd/grad_mode.h"
#include "nanoformer/formats/model_io.h"
#include "nanoformer/infer/greedy.h"
#include "nanoformer/ops/elementwise.h"
#include "nanoformer/ops/indexing.h"
#include "nanoformer/ops/reduce.h"
#include "nanoformer/ops/softmax.h"
#include "nanoformer/tokenizer/tokenizer.h"
#include "nanoformer/train/grpo.h"
#include "nanoformer/tokenizer/tokenizer_json.h"
#include "support/testing.h"
#include "tokenizer/fixtures.h"

namespace nf::train {
namespace {

namespace fs = std::filesystem;

TEST(Grpo, GroupAdvantagesAreTheGroupsNormalisedRewards) {
  const std::vector<double> rewards = {1, 0, 0, 1, 0.5, 0.5, 0.5, 0.5};
  const std::vector<double> scaled = group_advantages(rewards, 4, true);
  const double a = 0.5 / (0.5 + 1e-4);  // mean 0.5, biased std 0.5
  const std::vector<double> expected = {a, -a, -a, a, 0, 0, 0, 0};
  for (size_t i = 0; i < rewards.size(); ++i) EXPECT_NEAR(scaled[i], expected[i], 1e-12) << i;
  const std::vector<double> centred = group_advantages(rewards, 4, false);
  for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(centred[i], rewards[i] - 0.5, 1e-12) << i;
  EXPECT_THROW_WITH(group_advantages(rewards, 3, true), "group_advantages: 8 rewards are not groups of 3");
}

TEST(Grpo, TokenLogProbsAreLogSoftmaxAtTheTargets) {
  const auto model = testing::tiny_lm();
  const Tensor inputs = Tensor::from_vector(std::vector<int64_t>{3, 9, 4, 1, 7, 7, 2, 0}, {2, 4});
  const Tensor targets = Tensor::from_vector(std::vector<int64_t>{data::kIgnoreIndex, 4, 1, 5, data::kIgnoreIndex, 2, 0, 9}, {2, 4});
  NoGradGuard no_grad;
  const Tensor logits = model->forward(inputs).logits;
  const Tensor got = token_log_probs(logits, targets).to(DType::f64);
  const Tensor log_p = log_softmax(logits.to(DType::f64), -1);
  for (int64_t r = 0; r < 2; ++r)
    for (int64_t t = 0; t < 4; ++t) {
      const auto target = static_cast<int64_t>(targets.at({r, t}));
      EXPECT_NEAR(got.at({r, t}), target == data::kIgnoreIndex ? 0.0 : log_p.at({r, t, target}), 1e-5) << r << "," << t;
    }
  // at a temperature: log_softmax(logits / T)
  const Tensor got_cool = token_log_probs(logits, targets, 0.7).to(DType::f64);
  const Tensor log_p_cool = log_softmax(div(logits.to(DType::f64), 0.7), -1);
  for (int64_t r = 0; r < 2; ++r)
    for (int64_t t = 0; t < 4; ++t) {
      const auto target = static_cast<int64_t>(targets.at({r, t}));
      EXPECT_NEAR(got_cool.at({r, t}), target == data::kIgnoreIndex ? 0.0 : log_p_cool.at({r, t, target}), 1e-5)
          << r << "," << t;
    }
  EXPECT_THROW_WITH(token_log_probs(logits, targets, 0.0), "token_log_probs: temperature must be > 0, got 0");
}

class GrpoRolloutTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("nf_grpo_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    std::ofstream vocab(path("vocab.txt"));  // 64 characters, the model's vocabulary: those of the prompts and more
    vocab << R"({"code_points":[10,32,33,34,35,36,37,38,39,40,41,42,43,44,45,46,47,48,49,50,51,52,53,54,55,56,57,58,59,60,61,62,)"
          << R"(63,64,65,66,67,68,69,70,71,72,73,74,75,76,77,78,79,80,81,82,99,101,105,110,111,112,114,115,116,117,119,121],"type":"nanoformer-char","version":1})";
    std::ofstream tasks(path("tasks.jsonl"));
    for (const char* q : {"copy 1", "copy 22", "copy 333"})
      tasks << R"({"question": ")" << q << R"(", "answer": "#### 7"})" << "\n";
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  TrainConfig config() const {
    TrainConfig c;
    c.data.train_paths = {path("tasks.jsonl")};
    c.data.tokenizer = path("vocab.txt");
    c.data.batch_size = 3;
    c.data.context = 32;
    c.data.vocab_size = 64;
    c.objective = Objective::grpo;
    c.grpo.group_size = 2;
    c.grpo.top_k = 1;  // sampling among one token: greedy
    c.grpo.max_new_tokens = 5;
    c.grpo.stop = {"QQQQQQ"};  // longer than a completion: never complete
    return c;
  }
  fs::path dir_;
};

TEST_F(GrpoRolloutTest, TheBatchedDecodeAtTopKOneIsGreedyGenerationOfEachPrompt) {
  const auto model = testing::tiny_lm();
  const TrainConfig c = config();
  const GrpoStep step(c);
  ASSERT_EQ(step.prompts(), 3);
  const auto tok = tokenizer::load_tokenizer(path("vocab.txt"));
  std::vector<std::vector<int64_t>> prompts;
  for (const char* q : {"copy 1", "copy 22", "copy 333"}) {
    std::vector<int64_t> ids;
    for (auto id : tok->encode(std::string("Question: ") + q + "\nAnswer:")) ids.push_back(static_cast<int64_t>(id));
    prompts.push_back(ids);
  }
  const GrpoRollouts r = step.rollout(*model, 0);
  ASSERT_EQ(r.inputs.size(0), 6);
  EXPECT_EQ(r.completion_tokens, 30);  // 3 prompts x 2 completions x 5 tokens, no stop
  std::vector<int> uses(3, 0);
  for (int64_t row = 0; row < 6; ++row) {
    std::vector<int64_t> prompt, completion;
    bool in_completion = false;
    for (int64_t t = 0; t < r.inputs.size(1); ++t) {
      const bool masked = r.mask.at({row, t}) == 1.0;
      EXPECT_EQ(masked, static_cast<int64_t>(r.targets.at({row, t})) != data::kIgnoreIndex) << row << "," << t;
      if (masked && !in_completion) {
        in_completion = true;
        for (int64_t p = 0; p <= t; ++p) prompt.push_back(static_cast<int64_t>(r.inputs.at({row, p})));
      }
      if (masked) completion.push_back(static_cast<int64_t>(r.targets.at({row, t})));
    }
    const auto which = std::find(prompts.begin(), prompts.end(), prompt) - prompts.begin();
    ASSERT_LT(which, 3) << "row " << row << " starts with no prompt of the file";
    ++uses[static_cast<size_t>(which)];
    EXPECT_EQ(completion, infer::greedy_generate(*model, prompt, 5)) << "row " << row;
    EXPECT_EQ(r.advantages.at({row}), 0.0);  // a group's completions are equal: no advantage
  }
  EXPECT_EQ(uses, (std::vector<int>{2, 2, 2}));  // one pass over the shuffled prompts, G = 2 each
}

// Rollouts that call nanochat's calculator (--tools calculator): the nanochat model of
// tests/fixtures/nanochat/engine_92d63d4, scripted to call it after any prompt ending in ":", writes
// what nanochat's Engine.generate wrote there, and the loss mask is the engine's own mask (1 sampled,
// 0 forced: nanochat's chat_rl.py leaves the forced answers out of the loss), position by position.
TEST_F(GrpoRolloutTest, ToolAnswersInTheRolloutsAreLeftOutOfTheLossAsNanochatsEngineMasksThem) {
  std::ifstream in(NF_TEST_DATA_DIR "/nanochat/engine_92d63d4.json");
  const nlohmann::json engine = nlohmann::json::parse(in);
  const auto model = models::model_as<models::DecoderLM>(
      formats::load_model(NF_TEST_DATA_DIR "/nanochat/engine_92d63d4"), "engine_92d63d4");
  tokenizer::save_tokenizer_json(tokenizer::testing::byte_tokenizer(engine["specials"].get<std::vector<std::string>>()),
                                 path("tokenizer.json"));
  std::ofstream(path("calc.jsonl")) << R"({"question": "Q", "answer": "#### 408"})" << "\n";
  TrainConfig c = config();
  c.data.train_paths = {path("calc.jsonl")};
  c.data.tokenizer = path("tokenizer.json");
  c.data.batch_size = 1;
  c.data.context = 64;
  c.data.vocab_size = model->config().vocab_size;
  c.grpo.max_new_tokens = 24;
  c.grpo.tools.tools = {"calculator"};
  const GrpoRollouts r = GrpoStep(c).rollout(*model, 0);
  const auto tokens = engine["tokens"].get<std::vector<int64_t>>();
  const auto masks = engine["masks"].get<std::vector<int>>();
  for (int64_t row = 0; row < 2; ++row) {
    std::vector<int64_t> completion;
    std::vector<int> mask;
    for (int64_t t = 0; t < r.inputs.size(1); ++t) {
      if (static_cast<int64_t>(r.targets.at({row, t})) == data::kIgnoreIndex) continue;
      completion.push_back(static_cast<int64_t>(r.targets.at({row, t})));
      mask.push_back(static_cast<int>(r.mask.at({row, t})));
    }
    EXPECT_EQ(completion, std::vector<int64_t>(tokens.begin(), tokens.begin() + 24)) << "row " << row;
    EXPECT_EQ(mask, std::vector<int>(masks.begin(), masks.begin() + 24)) << "row " << row;
    EXPECT_EQ(std::count(mask.begin(), mask.end(), 0), 8);  // <|output_start|> 4 0 8 <|output_end|>, and 3 of the next
  }
  EXPECT_EQ(r.completions[0].substr(0, 9), "=<|python");  // the text scored holds the calls and answers
  c.data.tokenizer = path("vocab.txt");  // no nanochat tokens, so a chat-template model's tools: it has no template
  EXPECT_THROW_WITH(GrpoStep{c}, "has no chat template to call tools through");
}

// The loss's gradient is REINFORCE's on exactly the sampled tokens, at the sampling temperature:
// for each row alone (its prompt and sampled completion, no padding), sum over its completion tokens
// of -A / (its length * R) log softmax(logits / T) at the next token (TRL's per-token log-probs
// divide the logits by the temperature); the parameters' gradients must equal those of the step's
// loss on the padded batch, its rows paired with their advantages.
TEST_F(GrpoRolloutTest, TheLossGradientIsReinforceOnTheSampledTokensAtTheTemperature) {
  const auto model = testing::tiny_lm();
  TrainConfig c = config();
  c.grpo.top_k = 0;
  c.grpo.temperature = 0.5;
  c.grpo.max_new_tokens = 6;
  c.grpo.stop = {"e", "o", "t"};  // some completions end early: rows of different lengths, padded
  const GrpoStep step(c);
  GrpoRollouts r = step.rollout(*model, 0);
  const auto tok = tokenizer::load_tokenizer(path("vocab.txt"));
  const int64_t R = r.inputs.size(0), L = r.inputs.size(1);
  ASSERT_EQ(R, 6);
  const std::vector<float> advantages = {1.0f, -0.5f, 0.25f, -1.0f, 0.75f, -0.25f};
  r.advantages = Tensor::from_vector(advantages, {R});
  model->train();
  model->zero_grad();
  step.loss(*model, nullptr, r).loss.backward();
  std::vector<std::vector<double>> got;
  for (const Tensor& p : model->parameters()) got.push_back(p.grad().to(DType::f64).to_vector<double>());

  model->zero_grad();
  Tensor total;
  bool distinct_rows = false;
  std::vector<int64_t> lengths;
  for (int64_t row = 0; row < R; ++row) {
    std::vector<int64_t> seq;
    int64_t first = -1, n = 0;  // the position whose target is the first completion token; completion tokens
    for (int64_t t = 0; t < L; ++t) {
      if (r.mask.at({row, t}) == 1.0) {
        if (first < 0) first = t;
        ++n;
      }
    }
    ASSERT_GT(n, 0);
    lengths.push_back(n);
    std::vector<tokenizer::TokenId> sampled;  // the trained tokens are those whose text was scored
    for (int64_t t = first; t < first + n; ++t) sampled.push_back(static_cast<tokenizer::TokenId>(r.targets.at({row, t})));
    const std::string text = tok->decode(sampled), scored = r.completions[static_cast<size_t>(row)];
    EXPECT_TRUE(text == scored || (n < c.grpo.max_new_tokens && text == scored + text.back() &&
                                   std::string("eot").find(text.back()) != std::string::npos))
        << "row " << row << ": trained \"" << text << "\", scored \"" << scored << "\"";
    for (int64_t t = 0; t < first + n; ++t) seq.push_back(static_cast<int64_t>(r.inputs.at({row, t})));
    seq.push_back(static_cast<int64_t>(r.targets.at({row, first + n - 1})));
    if (row > 0 && r.completions[static_cast<size_t>(row)] != r.completions[static_cast<size_t>(row - 1)])
      distinct_rows = true;
    const auto T = static_cast<int64_t>(seq.size()) - 1;
    const std::vector<int64_t> in(seq.begin(), seq.end() - 1), next(seq.begin() + 1, seq.end());
    const Tensor logits = model->forward(Tensor::from_vector(in, {1, T})).logits;
    const Tensor log_p = log_softmax(div(logits, c.grpo.temperature), -1);
    const Tensor picked = gather(log_p, 2, Tensor::from_vector(next, {1, T, 1})).reshape({T});
    std::vector<float> w(static_cast<size_t>(T), 0.0f);
    for (int64_t t = first; t < T; ++t)
      w[static_cast<size_t>(t)] = -advantages[static_cast<size_t>(row)] / static_cast<float>(n * R);
    const Tensor term = sum(mul(picked, Tensor::from_vector(w, {T})));
    total = total.defined() ? add(total, term) : term;
  }
  EXPECT_TRUE(distinct_rows) << "sampling at temperature 0.5 drew the same completion for every row";
  EXPECT_NE(*std::min_element(lengths.begin(), lengths.end()), *std::max_element(lengths.begin(), lengths.end()))
      << "no completion ended at a stop string before the others";
  total.backward();
  const std::vector<Tensor> params = model->parameters();
  double largest = 0;
  for (size_t i = 0; i < params.size(); ++i) {
    const std::vector<double> want = params[i].grad().to(DType::f64).to_vector<double>();
    ASSERT_EQ(want.size(), got[i].size());
    for (size_t k = 0; k < want.size(); ++k) {
      largest = std::max(largest, std::abs(want[k]));
      EXPECT_NEAR(got[i][k], want[k], 1e-5 + 1e-4 * std::abs(want[k])) << "parameter " << i << " value " << k;
    }
  }
  EXPECT_GT(largest, 1e-3);  // the gradient is not zero
}

TEST(RewardVerifier, BuiltInVerifiersMatchTheAnswer) {
  eval::TaskRecord record;
  record.answer = "1234";
  GrpoOptions o;
  const RewardVerifier numeric(o);
  EXPECT_EQ(numeric.reward(record, "", "so it is $1,234. #### 1,234", "f:1"), 1.0);
  EXPECT_EQ(numeric.reward(record, "", "The answer is 1234.", "f:1"), 1.0);  // the last number
  EXPECT_EQ(numeric.reward(record, "", "#### 123", "f:1"), 0.0);
  o.verifier = "exact";
  const RewardVerifier exact(o);
  EXPECT_EQ(exact.reward(record, "", " 1234\n", "f:1"), 1.0);
  EXPECT_EQ(exact.reward(record, "", "1234 apples", "f:1"), 0.0);
}

TEST(RewardVerifier, ACommandReadsTheRecordOnStdin) {
  const CommandResult r = run_command({"cat"}, R"({"completion": "x"})", 5.0);
  EXPECT_EQ(r.exit_status, 0);
  EXPECT_EQ(r.out, R"({"completion": "x"})");
  EXPECT_EQ(run_command({"false"}, "", 5.0).exit_status, 1);
  EXPECT_TRUE(run_command({"sleep", "5"}, "", 0.1).timed_out);
  EXPECT_THROW_WITH(run_command({"/no/such/program"}, "", 1.0), "cannot run /no/such/program: No such file or directory");
  eval::TaskRecord record;
  record.answer = "7";
  GrpoOptions o;
  o.verifier = "command";
  o.verifier_command = {"echo", "{\"reward\":", "0.25}"};
  EXPECT_EQ(RewardVerifier(o).reward(record, "p", "c", "f:3"), 0.25);
}

}  // namespace
}  // namespace nf::train
