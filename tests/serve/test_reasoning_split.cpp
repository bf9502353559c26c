// <think> ... </think> split into reasoning and reply (serve/reasoning_split.h): the tags never
// show, white space after them goes, an answer without a reasoning is all reply (its white space
// kept), a prompt that opened the reasoning, an unclosed reasoning; and the parts are the same
// however the text is cut into streamed pieces.
#include "nanoformer/serve/reasoning_split.h"

#include <gtest/gtest.h>

namespace nf::serve {
namespace {

AnswerParts whole(std::string_view text, bool opened = false) {
  ReasoningSplitter s(opened);
  AnswerParts a = s.push(text), b = s.finish();
  return {a.reasoning + b.reasoning, a.content + b.content};
}

// The text pushed in pieces of `size` bytes.
AnswerParts in_pieces(std::string_view text, size_t size, bool opened = false) {
  ReasoningSplitter s(opened);
  AnswerParts out;
  for (size_t at = 0; at < text.size(); at += size) {
    const AnswerParts p = s.push(text.substr(at, size));
    out.reasoning += p.reasoning, out.content += p.content;
  }
  const AnswerParts p = s.finish();
  return {out.reasoning + p.reasoning, out.content + p.content};
}

void expect_parts(std::string_view text, const std::string& reasoning, const std::string& content, bool opened = false) {
  for (size_t size = 1; size <= text.size() + 1; ++size) {
    const AnswerParts p = size > text.size() ? whole(text, opened) : in_pieces(text, size, opened);
    EXPECT_EQ(p.reasoning, reasoning) << "'" << text << "' in pieces of " << size;
    EXPECT_EQ(p.content, content) << "'" << text << "' in pieces of " << size;
  }
}

TEST(ReasoningSplit, TheTagsSplitTheAnswerHoweverItIsStreamed) {
  expect_parts("<think>\nLet me add 2 and 2.\n</think>\n\nIt is 4.", "Let me add 2 and 2.\n", "It is 4.");
  expect_parts("\n<think>short</think>reply", "short", "reply");
  expect_parts("<think>\n\n</think>\n\nNo thoughts.", "", "No thoughts.");  // Qwen3 without thinking
  expect_parts("  Hello <think> there", "", "  Hello <think> there");     // no reasoning: all reply
  expect_parts("<thinking>x</thinking>", "", "<thinking>x</thinking>");
  expect_parts("<thi", "", "<thi");                                       // ended before a tag
  expect_parts("<think>never closed </thi", "never closed </thi", "");    // a reasoning cut short
  expect_parts("a < b </think>so", "a < b ", "so", /*opened=*/true);      // the prompt opened it
  expect_parts("\n\nstill</think>", "still", "", /*opened=*/true);
  expect_parts("<think>a</think>b</think>c", "a", "b</think>c");          // one reasoning only
}

TEST(ReasoningSplit, NothingIsGivenWhileItMayBeATag) {
  ReasoningSplitter s;
  EXPECT_EQ(s.push("<th").content, "");
  EXPECT_EQ(s.push("ink>I").reasoning, "I");
  const AnswerParts p = s.push(" see</th");
  EXPECT_EQ(p.reasoning, " see");
  EXPECT_EQ(p.content, "");
  const AnswerParts q = s.push("ink> ok");
  EXPECT_EQ(q.reasoning, "");
  EXPECT_EQ(q.content, "ok");
}

}  // namespace
}  // namespace nf::serve
