// nanochat's calculator in decoding (infer/tool_use.h): engine.py's RowState machine on scripted
// tokens, with a byte-level tokenizer holding nanochat's special tokens (every other token one byte),
// and whole generations equal to what nanochat's Engine.generate produced for a nanochat model.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "nanoformer/formats/model_io.h"

#include "nanoformer/infer/session.h"
#include "nanoformer/infer/tool_use.h"
#include "speculative_models.h"
#include "support/testing.h"
#include "tokenizer/fixtures.h"

namespace nf::infer {
namespace {

// <|python_start|> 256, <|python_end|> 257, <|output_start|> 258, <|output_end|> 259
constexpr int64_t kStart = 256, kEnd = 257, kOutStart = 258, kOutEnd = 259;

std::vector<int64_t> bytes(std::string_view s) { return {s.begin(), s.end()}; }

// Engine.generate's rows: each step takes a forced token if one waits, else the scripted "sampled"
// one; returns the tokens taken over `steps` steps.
std::vector<int64_t> run(ToolUse& tools, const std::vector<int64_t>& sampled) {
  std::vector<int64_t> taken, forced;
  size_t next_forced = 0;
  for (const int64_t s : sampled) {
    const int64_t id = next_forced < forced.size() ? forced[next_forced++] : s;
    taken.push_back(id);
    for (const int64_t f : tools.after(id)) forced.push_back(f);
  }
  return taken;
}

TEST(NanochatCalculatorUse, ForcesTheAnswerAfterAnExpressionAsNanochatsEngine) {
  const auto tok = tokenizer::testing::byte_tokenizer({"<|python_start|>", "<|python_end|>", "<|output_start|>", "<|output_end|>"});
  NanochatCalculatorUse tools(tok);
  // the model writes "x" <|python_start|> 12*34 <|python_end|>, then samples on (9s) while the
  // answer <|output_start|> 408 <|output_end|> is forced step by step
  std::vector<int64_t> sampled = bytes("x");
  sampled.push_back(kStart);
  for (const int64_t b : bytes("12*34")) sampled.push_back(b);
  sampled.push_back(kEnd);
  for (int i = 0; i < 7; ++i) sampled.push_back('9');
  std::vector<int64_t> want = bytes("x");
  want.push_back(kStart);
  for (const int64_t b : bytes("12*34")) want.push_back(b);
  want.push_back(kEnd);
  want.push_back(kOutStart);
  for (const int64_t b : bytes("408")) want.push_back(b);
  want.push_back(kOutEnd);
  want.push_back('9');  // sampling resumes
  want.push_back('9');
  EXPECT_EQ(run(tools, sampled), want);
}

TEST(NanochatCalculatorUse, ForcesNothingWithoutAnAnswerAndRestartsOnANewStart) {
  const auto tok = tokenizer::testing::byte_tokenizer({"<|python_start|>", "<|python_end|>", "<|output_start|>", "<|output_end|>"});
  NanochatCalculatorUse tools(tok);
  EXPECT_TRUE(tools.after(kEnd).empty());  // a close without an open
  EXPECT_TRUE(tools.after(kStart).empty());
  for (const int64_t b : bytes("2**8")) EXPECT_TRUE(tools.after(b).empty());
  EXPECT_TRUE(tools.after(kEnd).empty());  // no powers: nothing forced
  EXPECT_TRUE(tools.after(kStart).empty());
  EXPECT_TRUE(tools.after(kEnd).empty());  // an empty expression
  // a second start drops what an unclosed expression held
  tools.after(kStart);
  for (const int64_t b : bytes("1/0")) tools.after(b);
  tools.after(kStart);
  for (const int64_t b : bytes("7/2")) tools.after(b);
  std::vector<int64_t> want{kOutStart};
  for (const int64_t b : bytes("3.5")) want.push_back(b);
  want.push_back(kOutEnd);
  EXPECT_EQ(tools.after(kEnd), want);
  EXPECT_THROW_WITH(NanochatCalculatorUse(tokenizer::testing::byte_tokenizer({"<|python_start|>"})), "no <|python_end|> token");
}

// A nanochat model (tests/fixtures/nanochat/engine_92d63d4, scripted so that greedy decoding calls
// the calculator again and again) decodes with the calculator as nanochat's Engine.generate at
// 92d63d4 did (tools/golden/nanochat_engine_fixtures.py): the same 48 tokens, the same 16 forced
// (with and without prompt lookup drafting around them).
TEST(NanochatCalculatorUse, DecodesAsNanochatsEngine) {
  std::ifstream in(NF_TEST_DATA_DIR "/nanochat/engine_92d63d4.json");
  ASSERT_TRUE(in) << "missing fixture: run tools/golden/nanochat_engine_fixtures.py";
  const nlohmann::json fixture = nlohmann::json::parse(in);
  const auto model = models::model_as<models::DecoderLM>(
      formats::load_model(NF_TEST_DATA_DIR "/nanochat/engine_92d63d4"), "engine_92d63d4");
  model->eval();
  const auto tok = tokenizer::testing::byte_tokenizer(fixture["specials"].get<std::vector<std::string>>());
  const auto prompt = fixture["prompt"].get<std::vector<int64_t>>();
  const auto expected = fixture["tokens"].get<std::vector<int64_t>>();
  const auto masks = fixture["masks"].get<std::vector<int>>();
  ASSERT_EQ(std::count(masks.begin(), masks.end(), 0), 16);
  for (const SpeculativeConfig& speculative : {SpeculativeConfig{}, SpeculativeConfig{.lookup_ngram = 3}}) {
    NanochatCalculatorUse tools(tok);
    Sampler greedy({.temperature = 0});
    const GenerationResult got = Session(*model).generate(
        prompt, greedy, {.max_new_tokens = fixture["max_tokens"].get<int64_t>()}, {}, nullptr, speculative, &tools);
    EXPECT_EQ(got.tokens, expected) << "lookup " << speculative.lookup_ngram;
  }
}

// A tool that answers token `trigger` with `answer` (a stand-in for any tool in the decoding loop).
struct Echo : ToolUse {
  int64_t trigger;
  std::vector<int64_t> answer;
  Echo(int64_t t, std::vector<int64_t> a) : trigger(t), answer(std::move(a)) {}
  std::vector<int64_t> after(int64_t id) override { return id == trigger ? answer : std::vector<int64_t>{}; }
  std::unique_ptr<ToolUse> clone() const override { return std::make_unique<Echo>(trigger, answer); }
};

// In the decoding loop: the tokens a tool hands back are the next ones taken and fed, and decoding
// then goes on from them exactly as plain decoding of that sequence would; prompt lookup drafts
// nothing while they wait, and its output is the same.
TEST(ToolUse, ForcedTokensAreTakenAndFedAsIfTheModelHadWrittenThem) {
  const auto model = testing::tiny_llama(256);
  model->eval();
  const std::vector<int64_t> prompt{1, 2, 3, 4, 5};
  Sampler greedy({.temperature = 0});
  const StopCriteria stop{.max_new_tokens = 40};
  const std::vector<int64_t> plain = Session(*model).generate(prompt, greedy, stop).tokens;
  // the trigger: the first generated token from the 4th on that did not come before
  size_t at = 3;
  while (std::find(plain.begin(), plain.begin() + static_cast<int64_t>(at), plain[at]) != plain.begin() + static_cast<int64_t>(at)) ++at;
  ASSERT_LT(at, 30u);
  const int64_t trigger = plain[at];
  std::vector<int64_t> answer;
  for (int64_t id = 60; answer.size() < 3; --id)
    if (id != trigger) answer.push_back(id);
  std::vector<int64_t> expected(plain.begin(), plain.begin() + static_cast<int64_t>(at) + 1);
  expected.insert(expected.end(), answer.begin(), answer.end());
  std::vector<int64_t> rest = prompt;
  rest.insert(rest.end(), expected.begin(), expected.end());
  const std::vector<int64_t> after =
      Session(*model).generate(rest, greedy, {.max_new_tokens = 40 - static_cast<int64_t>(expected.size())}).tokens;
  // the plain continuation may contain the trigger again: every occurrence is answered
  for (size_t i = 0; i < after.size() && expected.size() < 40; ++i) {
    expected.push_back(after[i]);
    if (after[i] == trigger) break;  // what follows is answered again: compare up to here
  }
  for (const SpeculativeConfig& speculative : {SpeculativeConfig{}, SpeculativeConfig{.lookup_ngram = 3}}) {
    Echo tools(trigger, answer);
    const std::vector<int64_t> got =
        Session(*model).generate(prompt, greedy, stop, {}, nullptr, speculative, &tools).tokens;
    ASSERT_GE(got.size(), expected.size());
    EXPECT_EQ(std::vector<int64_t>(got.begin(), got.begin() + static_cast<int64_t>(expected.size())), expected)
        << "lookup " << speculative.lookup_ngram;
  }
}

}  // namespace
}  // namespace nf::infer
