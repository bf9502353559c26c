// nanochat's calculator in decoding (infer/tool_use.h): engine.py's RowState machine on scripted
// tokens, with a byte-level tokenizer holding nanochat's special tokens (every other token one byte).
#include <gtest/gtest.h>

#include <string>

#include "nanoformer/infer/tool_use.h"
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

}  // namespace
}  // namespace nf::infer
