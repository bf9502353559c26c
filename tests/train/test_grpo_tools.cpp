// GRPO rollouts that call a chat-template model's tools (train/grpo.h, infer/tool_transcript.h,
// train/call_reward.h).
//
// The rollout's tokens and loss mask, position by position, equal a row-by-row reference built as
// MiniMind's agent rollout builds them (jingyaogong/minimind@d65ef2c, trainer/train_agent.py,
// rollout_single): generate until a call is complete, then render the whole conversation so far
// ([user, assistant: the turn's text, tool: the answer]) with the template, the tokens past what
// was decoded masked 0, and go on; its loss gradient equals the one computed on the reference's
// rows and masks. The model is scripted: one layer whose blocks add nothing, one-hot embeddings and
// a head that maps each token to the next of a script (a bigram table), so that greedy decoding
// calls the calculator after every "\n" (the end of the template's assistant opening;
// tests/infer/bigram_model.h). Also the reward terms of MiniMind's scheme, by hand.
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "infer/bigram_model.h"
#include "nanoformer/infer/hermes_tools.h"
#include "nanoformer/ops/elementwise.h"
#include "nanoformer/ops/indexing.h"
#include "nanoformer/ops/reduce.h"
#include "nanoformer/ops/softmax.h"
#include "nanoformer/tokenizer/chat_template.h"
#include "nanoformer/tokenizer/tokenizer_json.h"
#include "nanoformer/train/grpo.h"
#include "nanoformer/train/ppo.h"
#include "nanoformer/infer/tool_transcript.h"
#include "nanoformer/train/call_reward.h"
#include "support/temp_dir.h"
#include "support/testing.h"
#include "tokenizer/fixtures.h"

namespace nf::train {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

// The call the script writes, in pieces that are single tokens (added tokens of the byte tokenizer),
// so that each piece has one successor.
const std::vector<std::string> kSpecials = {"<|endoftext|>", "<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>",
                                            R"({"name": "calculator", "arguments": {"expression": ")", "12*34", R"("}})"};

infer::ToolTurn no_turn() { return {}; }

class GrpoToolsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tokenizer::save_tokenizer_json(tokenizer::testing::byte_tokenizer(kSpecials), path("tokenizer.json"));
    tok_ = tokenizer::load_tokenizer(path("tokenizer.json"));
    // Qwen2.5's template, as transformers renders it (the tokenizer fixtures' copy)
    const json doc = json::parse(tokenizer::read_file(tokenizer::testing::fixture("hf_chat_templates.json")));
    for (const json& t : doc.at("templates"))
      if (t.at("name") == "qwen2.5")
        std::ofstream(path("tokenizer_config.json"))
            << json{{"chat_template", t.at("template")}, {"eos_token", "<|im_end|>"}, {"pad_token", "<|endoftext|>"}}.dump();
    std::ofstream(path("tasks.jsonl")) << R"({"question": "What is 12 times 34?", "answer": "#### 408"})" << "\n";
  }
  std::string path(const std::string& name) const { return dir_.file(name); }
  int64_t id(const std::string& special) const { return static_cast<int64_t>(*tok_->token_id(special)); }

  // The bigram model of the script: "\n" <tool_call> HEAD 12*34 TAIL </tool_call> <|im_end|>.
  std::shared_ptr<models::DecoderLM> scripted_model(double scale) const {
    return testing::bigram_model(static_cast<int64_t>(256 + kSpecials.size()),
                                 {{'\n', id("<tool_call>")},
                                  {id("<tool_call>"), id(kSpecials[5])},
                                  {id(kSpecials[5]), id("12*34")},
                                  {id("12*34"), id(kSpecials[7])},
                                  {id(kSpecials[7]), id("</tool_call>")},
                                  {id("</tool_call>"), id("<|im_end|>")}},
                                 scale);
  }

  TrainConfig config() const {
    TrainConfig c;
    c.data.train_paths = {path("tasks.jsonl")};
    c.data.tokenizer = path("tokenizer.json");
    c.data.chat_template = path("tokenizer_config.json");
    c.data.batch_size = 1;
    c.data.context = 1024;
    c.objective = Objective::grpo;
    c.grpo.group_size = 2;
    c.grpo.top_k = 1;  // greedy
    c.grpo.max_new_tokens = 200;
    c.grpo.tools.tools = {"calculator"};
    c.grpo.tools.max_turns = 2;
    return c;
  }

  testing::TempDir dir_;
  std::unique_ptr<tokenizer::Tokenizer> tok_;
};

// MiniMind's rollout_single for one row, greedily, with a turn limit: the sequence (prompt and
// response) and the response mask (1 generated, 0 what the template added after a call).
struct ReferenceRow {
  std::vector<int64_t> ids, mask;
  int64_t prompt = 0;
};

ReferenceRow minimind_rollout(models::DecoderLM& model, const tokenizer::Tokenizer& tok,
                              const tokenizer::ChatTemplate& chat_template, const std::string& offered,
                              const std::string& question, int64_t max_turns, int64_t end_token) {
  std::vector<tokenizer::ChatMessage> messages = {{"user", question}};
  const auto render = [&] {
    const std::vector<tokenizer::TokenId> ids = chat_template.render_for_completion(messages, offered);
    return std::vector<int64_t>(ids.begin(), ids.end());
  };
  ReferenceRow row;
  row.ids = render();
  row.prompt = static_cast<int64_t>(row.ids.size());
  std::vector<tokenizer::TokenId> turn;  // this turn's generated tokens
  for (int64_t turns = 0; static_cast<int64_t>(row.ids.size()) < row.prompt + 200;) {
    const auto T = static_cast<int64_t>(row.ids.size());
    const Tensor logits = model.forward(Tensor::from_vector(row.ids, {1, T})).logits.to(DType::f32).contiguous();
    const float* last = logits.data<float>() + (T - 1) * logits.size(2);
    const auto next = static_cast<int64_t>(std::max_element(last, last + logits.size(2)) - last);
    row.ids.push_back(next);
    row.mask.push_back(1);
    if (next == end_token) break;
    turn.push_back(static_cast<tokenizer::TokenId>(next));
    const std::string text = tok.decode(turn);
    if (!text.ends_with("</tool_call>") || turns == max_turns) continue;
    const size_t open = text.rfind("<tool_call>") + 11;
    const json call = json::parse(text.substr(open, text.size() - 12 - open));
    messages.push_back({"assistant", text});
    messages.push_back({"tool", infer::calculator_tool({.id = "", .name = call.at("name"), .arguments = call.at("arguments").dump()})});
    const std::vector<int64_t> full = render();
    EXPECT_TRUE(std::equal(row.ids.begin(), row.ids.end(), full.begin())) << "the render does not extend the rollout";
    for (size_t i = row.ids.size(); i < full.size(); ++i) {
      row.ids.push_back(full[i]);
      row.mask.push_back(0);
    }
    turn.clear();
    ++turns;
  }
  return row;
}

TEST_F(GrpoToolsTest, RolloutsAndMasksEqualMiniMindsTurnByTurnRollout) {
  const auto model = scripted_model(0.3);  // a logit margin of 0.3 sqrt(V): greedy follows the script, p < 1
  const TrainConfig c = config();
  const GrpoStep step(c);
  ASSERT_TRUE(step.calls_tools_by_template());
  const GrpoRollouts r = step.rollout(*model, 0);
  const auto chat_template = tokenizer::make_chat_template(path("tokenizer_config.json"), *tok_);
  auto registry = std::make_shared<infer::ToolRegistry>();
  registry->add("calculator", infer::calculator_tool, infer::calculator_schema());
  const ReferenceRow want = minimind_rollout(*model, *tok_, *chat_template, registry->offered(), "What is 12 times 34?",
                                             2, id("<|im_end|>"));
  // the prompt offers the calculator as the template renders a tools list
  const std::string prompt = tok_->decode(std::vector<tokenizer::TokenId>(want.ids.begin(), want.ids.begin() + want.prompt));
  EXPECT_NE(prompt.find(R"("name": "calculator")"), std::string::npos) << prompt;
  EXPECT_EQ(std::count(want.mask.begin(), want.mask.end(), 1), 3 * 5 + 1);  // three calls of 5 tokens, <|im_end|>
  ASSERT_EQ(r.inputs.size(0), 2);
  for (int64_t row = 0; row < 2; ++row) {
    std::vector<int64_t> ids = {static_cast<int64_t>(r.inputs.at({row, 0}))}, mask;
    for (int64_t t = 0; t < r.inputs.size(1); ++t) {
      const auto target = static_cast<int64_t>(r.targets.at({row, t}));
      if (t + 1 < want.prompt) {
        ids.push_back(static_cast<int64_t>(r.inputs.at({row, t + 1})));
        EXPECT_EQ(target, data::kIgnoreIndex);
        continue;
      }
      if (target == data::kIgnoreIndex) break;
      ids.push_back(target);
      mask.push_back(static_cast<int64_t>(r.mask.at({row, t})));
    }
    EXPECT_EQ(ids, want.ids) << "row " << row;
    EXPECT_EQ(mask, want.mask) << "row " << row;
    EXPECT_EQ(r.tool_calls[static_cast<size_t>(row)], 3);  // two answered, the third past --max-tool-turns 2
    EXPECT_EQ(r.invalid_tool_calls[static_cast<size_t>(row)], 0);
    EXPECT_EQ(r.completions[static_cast<size_t>(row)], "");  // unfinished: no final answer
    EXPECT_EQ(r.answer_rewards[static_cast<size_t>(row)], 0.0);
    EXPECT_EQ(r.rewards[static_cast<size_t>(row)], 0.5 - 0.5);  // every call valid, unfinished
  }

  // PPO's rows of the same rollout: the response through its last token, sampled where the mask is 1
  const PpoRows rows = ppo_rows(r.inputs, r.targets, r.mask);
  for (int64_t row = 0; row < 2; ++row) {
    EXPECT_EQ(rows.starts[static_cast<size_t>(row)], want.prompt - 1);
    EXPECT_EQ(rows.lengths[static_cast<size_t>(row)], static_cast<int64_t>(want.mask.size()));
    for (size_t k = 0; k < want.mask.size(); ++k)
      EXPECT_EQ(rows.sampled.at({row, want.prompt - 1 + static_cast<int64_t>(k)}), static_cast<double>(want.mask[k])) << k;
  }

  // the loss's gradient is that of REINFORCE on the reference's rows, on their mask-1 tokens only:
  // sum over rows and tokens of -A / (tokens of the row * R) log softmax(logits / T) at the next token
  GrpoRollouts weighted = r;
  const std::vector<float> advantages = {1.0f, -0.5f};
  weighted.advantages = Tensor::from_vector(advantages, {2});
  model->train();
  model->zero_grad();
  step.loss(*model, nullptr, weighted).loss.backward();
  const Tensor got = model->named_parameters().back().second.grad().to(DType::f64);  // output.weight
  model->zero_grad();
  const auto T = static_cast<int64_t>(want.ids.size()) - 1;
  const std::vector<int64_t> in(want.ids.begin(), want.ids.end() - 1), next(want.ids.begin() + 1, want.ids.end());
  const Tensor log_p = log_softmax(model->forward(Tensor::from_vector(in, {1, T})).logits, -1);
  const Tensor picked = gather(log_p, 2, Tensor::from_vector(next, {1, T, 1})).reshape({T});
  const auto n = static_cast<float>(std::count(want.mask.begin(), want.mask.end(), 1));
  std::vector<float> w(static_cast<size_t>(T), 0.0f);
  for (size_t k = 0; k < want.mask.size(); ++k)
    if (want.mask[k] == 1) w[static_cast<size_t>(want.prompt) - 1 + k] = -(advantages[0] + advantages[1]) / (n * 2);
  sum(mul(picked, Tensor::from_vector(w, {T}))).backward();
  ASSERT_EQ(model->named_parameters().back().first, "output.weight");
  const std::vector<double> want_grad = model->named_parameters().back().second.grad().to(DType::f64).to_vector<double>();
  const std::vector<double> got_grad = got.to_vector<double>();
  double largest = 0;
  for (size_t k = 0; k < want_grad.size(); ++k) {
    largest = std::max(largest, std::abs(want_grad[k]));
    ASSERT_NEAR(got_grad[k], want_grad[k], 1e-6 + 1e-4 * std::abs(want_grad[k])) << "value " << k;
  }
  EXPECT_GT(largest, 1e-4);
}

TEST_F(GrpoToolsTest, ATemplateWithoutToolMessagesIsOneLine) {
  TrainConfig c = config();
  c.data.chat_template = "chatml";  // built in: renders no tool messages
  EXPECT_THROW_WITH(GrpoStep{c}, "the model's chat template chatml renders no tool messages");
  fs::remove(path("tokenizer_config.json"));
  c.data.chat_template = "";  // none beside the tokenizer: ChatML's, by its special tokens
  EXPECT_THROW_WITH(GrpoStep{c}, "renders no tool messages");
}

// A transcript's turns and final answer, and MiniMind's call terms (train/call_reward.h), by hand.
TEST(CallReward, TurnsFinalAnswerAndMiniMindsCallTerms) {
  const auto turn = [](std::vector<std::string> names, std::vector<std::string> answers, bool ran = true) {
    infer::ToolTurn t;
    for (const std::string& n : names) t.calls.push_back({.id = "", .name = n, .arguments = "{}"});
    t.answers = std::move(answers);
    t.ran = ran;
    return t;
  };
  {  // one valid call, then the answer: +w
    infer::ToolTranscript r({"STOP"});
    EXPECT_TRUE(r.push("Let me see. <tool_call>{...}</tool_call>", false));
    r.record(turn({"calculator"}, {"408"}));
    EXPECT_TRUE(r.push("<|im_end|>\n<|im_start|>user\n<tool_response>408", true));  // forced: no turn's text
    EXPECT_TRUE(r.push("The answer is 4", false));
    EXPECT_TRUE(r.push("08. ST", false));
    EXPECT_FALSE(r.push("OP and more", false));  // a stop string in the model's own text
    r.finish();
    EXPECT_EQ(r.turns(), (std::vector<std::string>{"Let me see. <tool_call>{...}</tool_call>", "The answer is 408. "}));
    EXPECT_EQ(r.final_answer(), "The answer is 408. ");
    EXPECT_EQ(r.calls(), 1);
    EXPECT_DOUBLE_EQ(call_reward(r, 0.5), 0.5);
  }
  {  // an unknown tool and a malformed block (errors), one good call: -w per invalid one
    infer::ToolTranscript r({});
    r.push("<tool_call>x</tool_call><tool_call>y</tool_call><tool_call>z</tool_call>", false);
    r.record(turn({"nope", "", "calculator"}, {infer::tool_error("unknown tool"), infer::tool_error("malformed"), "7"}));
    r.push("FORCED", true);
    r.push("It is 7 <tool_call>", false);  // a tag left open: -w
    r.finish();
    EXPECT_EQ(r.final_answer(), "It is 7 <tool_call>");
    EXPECT_EQ(r.invalid_calls(), 2);
    EXPECT_DOUBLE_EQ(call_reward(r, 0.5), -0.5 * 2 - 0.5 * 1);
    EXPECT_DOUBLE_EQ(call_reward(r, 0.0), 0.0);
  }
  {  // a call past the turn limit: unfinished, no final answer, -w; the text after the last </tool_call>
    infer::ToolTranscript r({});
    r.push("<tool_call>a</tool_call>", false);
    r.record(turn({"calculator"}, {}, /*ran=*/false));
    r.push(" so 5", false);
    r.finish();
    EXPECT_TRUE(r.unfinished());
    EXPECT_EQ(r.final_answer(), "");
    EXPECT_DOUBLE_EQ(call_reward(r, 0.5), 0.5 - 0.5);  // its calls not run count as neither
  }
  {  // no calls: no call terms; the final answer is everything
    infer::ToolTranscript r({});
    r.push("just 12", false);
    r.record(no_turn());
    r.finish();
    EXPECT_EQ(r.final_answer(), "just 12");
    EXPECT_DOUBLE_EQ(call_reward(r, 0.5), 0.0);
  }
  EXPECT_TRUE(infer::is_tool_error(infer::tool_error("x")));
  EXPECT_FALSE(infer::is_tool_error(R"({"error": "x", "result": 1})"));
  EXPECT_FALSE(infer::is_tool_error("408"));
}

}  // namespace
}  // namespace nf::train
