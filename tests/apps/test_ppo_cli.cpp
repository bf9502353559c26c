// `nanoformer train --objective ppo` as a process, on GRPO's task a fresh tiny model can learn from
// its own samples (gsm8k-layout prompts whose answer is always 7, a character vocabulary of 28, the
// numeric verifier): the mean reward rises with MiniMind's style and KL term, no value is nan, the critic is
// written beside each checkpoint and pruned with it; TRL's style with the KL in the reward resumed
// in the middle of a rollout ends with the policy, critic and rollout of the uninterrupted run;
// a missing critic and bad flags are one line, a damaged one is set aside with its checkpoint.
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "nanoformer/io/safetensors.h"
#include "support/cli_test.h"

namespace nf {
namespace {

namespace fs = std::filesystem;

class PpoCliTest : public testing::CliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    std::ofstream(path("chars.txt")) << "Question: copy 0123456789\nAnswer:#\n";
    ASSERT_EQ(cli("tokenizer train --char --input " + path("chars.txt") + " -o " + path("vocab.txt")).exit_code, 0);
    std::ofstream tasks(path("tasks.jsonl"));
    for (int i = 0; i < 16; ++i) tasks << R"({"question": "copy )" << i % 10 << R"(", "answer": "copy it #### 7"})" << "\n";
  }
  // 2 prompts x 8 responses a rollout; with kFourSteps, 2 epochs x 2 minibatches: 4 steps a rollout
  std::string ppo_args(const std::string& out, int steps, const std::string& more = "",
                       const std::string& objective = "ppo") const {
    return "train --objective " + objective + " --config llama2c-stories260k --set vocab_size=28 --set dim=32 --set max_seq_len=64"
           " --data " + path("tasks.jsonl") + " --tokenizer " + path("vocab.txt") +
           " --batch-size 2 --context 32 --grpo-group 8 --steps " + std::to_string(steps) +
           " --lr 3e-2 --warmup 0 --schedule constant --out " + path(out) + " --quiet " + more;
  }
};

const std::string kFourSteps = " --ppo-critic-lr 1e-2 --ppo-epochs 2 --ppo-minibatches 2 ";

std::vector<nlohmann::json> step_lines(const std::string& metrics) {
  std::vector<nlohmann::json> steps;
  std::ifstream in(metrics);
  for (std::string line; std::getline(in, line);) {
    nlohmann::json j = nlohmann::json::parse(line);
    if (j.contains("loss")) steps.push_back(std::move(j));
  }
  return steps;
}

// A KL between two evaluations of the same policy on the same rows: zero up to f32 rounding of the
// log-probs (~1e-7, so a KL of ~1e-14). The rollout's log-probs are taken on all its rows, a
// minibatch's on some of them in another order, and BLAS need not sum a row alike at every place in
// a batch (OpenBLAS's Haswell sgemm does not: on an AVX2-only Zen 3 a step 0's kl_ref was 3.6e-15).
constexpr double kSamePolicyKl = 1e-12;

void expect_identical_tensors(const std::string& a, const std::string& b) {
  const auto ta = io::load_safetensors(a), tb = io::load_safetensors(b);
  ASSERT_EQ(ta.size(), tb.size()) << a;
  for (const auto& [name, tensor] : ta) {
    SCOPED_TRACE(a + ": " + name);
    ASSERT_TRUE(tb.count(name));
    ASSERT_EQ(tensor.shape(), tb.at(name).shape());
    EXPECT_EQ(0, std::memcmp(tensor.raw_data(), tb.at(name).raw_data(), tensor.numel() * tensor.itemsize()));
  }
}

TEST_F(PpoCliTest, TheMeanRewardRisesWithoutNan) {
  // one new token a response, MiniMind's KL term (its default 0.02): the reward is 1 for a 7
  const testing::CliRun r = cli(ppo_args("ppo", 40, kFourSteps + "--max-new-tokens 1 --ppo-kl-coef 0.02 --save-every 20 --keep 1"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("objective: ppo (minimind style), 8 response(s) per prompt, gamma 1, lambda 0.95"),
            std::string::npos) << r.err;
  const auto steps = step_lines(path("ppo/metrics.jsonl"));
  ASSERT_EQ(steps.size(), 40u);
  double first = 0, last = 0;  // the mean reward of the first and of the last 3 rollouts' steps
  for (size_t i = 0; i < steps.size(); ++i) {
    for (const char* key : {"loss", "reward", "accuracy", "policy_loss", "value_loss", "approx_kl", "clipfrac",
                            "vf_clipfrac", "critic_grad_norm", "completions/mean_length", "early_stop", "grad_norm",
                            "kl_ref"})
      EXPECT_TRUE(steps[i].contains(key) && std::isfinite(steps[i][key].get<double>())) << key << " at " << steps[i].dump();
    if (i < 12) first += steps[i]["reward"].get<double>() / 12;
    if (i + 12 >= steps.size()) last += steps[i]["reward"].get<double>() / 12;
  }
  // MiniMind's early stop (approx KL above 0.25): the next step samples a new rollout, on-policy
  int stops = 0;
  for (size_t i = 0; i + 1 < steps.size(); ++i) {
    if (steps[i]["early_stop"].get<double>() == 0) continue;
    ++stops;
    EXPECT_GT(steps[i]["approx_kl"].get<double>(), 0.25) << steps[i].dump();
    EXPECT_LT(steps[i + 1]["approx_kl"].get<double>(), kSamePolicyKl) << steps[i + 1].dump();
  }
  EXPECT_GT(stops, 0);
  EXPECT_LT(steps[0]["approx_kl"].get<double>(), kSamePolicyKl);  // a rollout's first step is on-policy
  EXPECT_LT(steps[0]["kl_ref"].get<double>(), kSamePolicyKl);     // and the policy is still the reference
  EXPECT_GT(steps[2]["kl_ref"].get<double>(), kSamePolicyKl);
  EXPECT_GT(last, first + 0.3) << "mean reward: first 12 steps " << first << ", last 12 " << last;
  // the critic beside the one checkpoint kept
  EXPECT_TRUE(fs::exists(path("ppo/ckpt_00000040.critic.safetensors")));
  EXPECT_FALSE(fs::exists(path("ppo/ckpt_00000020.safetensors")));
  EXPECT_FALSE(fs::exists(path("ppo/ckpt_00000020.critic.safetensors")));
}

TEST_F(PpoCliTest, TrlStyleResumedMidRolloutEndsAsTheUninterruptedRun) {
  const std::string more = kFourSteps + "--max-new-tokens 3 --ppo-style trl --ppo-kl-coef 0.05 --keep 2";
  ASSERT_EQ(cli(ppo_args("whole", 16, more + " --save-every 4")).exit_code, 0);
  const testing::CliRun part = cli(ppo_args("parts", 9, more + " --save-every 9"));  // step 9: inside a rollout
  ASSERT_EQ(part.exit_code, 0) << part.err;
  EXPECT_NE(part.err.find("kl_coef 0.05 (in the reward)"), std::string::npos) << part.err;
  const testing::CliRun resumed = cli("train --out " + path("parts") + " --resume --steps 16 --quiet");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  expect_identical_tensors(path("whole/ckpt_00000016.safetensors"), path("parts/ckpt_00000016.safetensors"));
  expect_identical_tensors(path("whole/ckpt_00000016.critic.safetensors"),
                           path("parts/ckpt_00000016.critic.safetensors"));
  const auto whole = step_lines(path("whole/metrics.jsonl"));
  ASSERT_EQ(whole.size(), 16u);
  for (const auto& s : whole)
    for (const char* key : {"loss", "value_loss", "approx_kl", "reward"})
      EXPECT_TRUE(std::isfinite(s[key].get<double>())) << key << " at " << s.dump();
}

TEST_F(PpoCliTest, AMissingCriticAndBadFlagsAreOneLineADamagedOneIsSetAside) {
  ASSERT_EQ(cli(ppo_args("run", 4, "--max-new-tokens 1 --save-every 2")).exit_code, 0);
  const std::string critic = path("run/ckpt_00000004.critic.safetensors");
  fs::rename(critic, path("kept.safetensors"));
  expect_one_line_error("train --out " + path("run") + " --resume --steps 6 --quiet",
                        {"train --resume: " + critic + " is missing: a PPO checkpoint's critic is saved beside it"});
  fs::copy_file(path("kept.safetensors"), critic);
  {  // a flipped byte in the last tensor's data: the checkpoint and its critic are set aside, the run
     // resumes from the one before
    std::fstream f(critic, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-2, std::ios::end);
    f.put('\x7f');
  }
  const testing::CliRun resumed = cli("train --out " + path("run") + " --resume --steps 6 --quiet");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_NE(resumed.err.find(critic), std::string::npos) << resumed.err;
  EXPECT_NE(resumed.err.find("does not match its checksum"), std::string::npos) << resumed.err;
  EXPECT_NE(resumed.err.find("resumed from " + path("run/ckpt_00000002.safetensors") + " at step 2"), std::string::npos)
      << resumed.err;
  EXPECT_TRUE(fs::exists(critic + ".damaged"));
  EXPECT_TRUE(fs::exists(path("run/ckpt_00000004.safetensors.damaged")));
  EXPECT_TRUE(fs::exists(path("run/ckpt_00000006.critic.safetensors")));
  expect_one_line_error(ppo_args("f", 2, "--ppo-style openai"),
                        {"train: --ppo-style: unknown style 'openai' (known: minimind, trl)"});
  expect_one_line_error(ppo_args("f", 2, "--ppo-minibatches 3"),
                        {"--ppo-minibatches 3 must be >= 1 and divide the rollout's 16 responses"});
  expect_one_line_error(ppo_args("f", 2, "--ppo-gamma 1.5"), {"--ppo-gamma must be in [0, 1], got 1.5"});
  expect_one_line_error(ppo_args("f", 2, "--lora-rank 4"),
                        {"train: --objective ppo does not train LoRA adapters yet (the critic is a full copy)"});
  expect_one_line_error(ppo_args("f", 2, "--grpo-loss cispo"), {"--grpo-loss would be ignored", "--objective ppo"});
  expect_one_line_error(ppo_args("f", 2, "--ppo-epochs 3", "grpo"),
                        {"--ppo-epochs would be ignored", "--objective grpo"});
  EXPECT_FALSE(fs::exists(path("f")));
}

}  // namespace
}  // namespace nf
