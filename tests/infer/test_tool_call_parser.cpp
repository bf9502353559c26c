// Tool calls parsed out of a chat answer (infer/tool_call_parser.h): one call, several, text before
// them kept as content, malformed JSON or an unclosed tag kept as content word for word, ids of
// OpenAI's shape; and the same content and calls however the answer is cut into streamed pieces
// (every piece size, and random cuts); a long call streamed byte by byte costs one pass.
#include "nanoformer/infer/tool_call_parser.h"

#include <gtest/gtest.h>

#include <chrono>
#include <random>

namespace nf::infer {
namespace {

struct Parsed {
  std::string content;
  std::vector<std::pair<std::string, std::string>> calls;  // (name, arguments)
  int64_t malformed = 0;
};

void add(Parsed& out, const ToolCallParts& p) {
  out.content += p.content;
  for (const ToolCall& c : p.calls) out.calls.emplace_back(c.name, c.arguments);
  out.malformed += p.malformed;
}

// The text pushed in pieces cut at `cuts` (ascending byte offsets).
Parsed parse(std::string_view text, const std::vector<size_t>& cuts) {
  ToolCallParser parser;
  Parsed out;
  size_t at = 0;
  for (const size_t cut : cuts) {
    add(out, parser.push(text.substr(at, cut - at)));
    at = cut;
  }
  add(out, parser.push(text.substr(at)));
  add(out, parser.finish());
  return out;
}

using Calls = std::vector<std::pair<std::string, std::string>>;

void expect_parsed(std::string_view text, const std::string& content, const Calls& calls, int64_t malformed = 0) {
  const Parsed whole = parse(text, {});
  EXPECT_EQ(whole.content, content) << text;
  EXPECT_EQ(whole.calls, calls) << text;
  EXPECT_EQ(whole.malformed, malformed) << text;
  for (size_t size = 1; size <= text.size(); ++size) {  // pieces of `size` bytes
    std::vector<size_t> cuts;
    for (size_t at = size; at < text.size(); at += size) cuts.push_back(at);
    const Parsed p = parse(text, cuts);
    EXPECT_EQ(p.content, content) << "'" << text << "' in pieces of " << size;
    EXPECT_EQ(p.calls, calls) << "'" << text << "' in pieces of " << size;
    EXPECT_EQ(p.malformed, malformed) << "'" << text << "' in pieces of " << size;
  }
  std::mt19937 gen(7);
  for (int trial = 0; trial < 200 && !text.empty(); ++trial) {  // random cuts
    std::vector<size_t> cuts;
    for (size_t at = 1; at < text.size(); ++at)
      if (gen() % 4 == 0) cuts.push_back(at);
    const Parsed p = parse(text, cuts);
    EXPECT_EQ(p.content, content) << "'" << text << "' trial " << trial;
    EXPECT_EQ(p.calls, calls) << "'" << text << "' trial " << trial;
  }
}

TEST(ToolCallParser, OneCallIsParsedOutOfTheAnswer) {
  expect_parsed("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 2}}\n</tool_call>", "",
                {{"get_weather", R"({"city":"Paris","days":2})"}});
}

TEST(ToolCallParser, SeveralCallsAndTheTextBeforeThem) {
  expect_parsed("Let me look.\n<tool_call>\n{\"name\": \"a\", \"arguments\": {}}\n</tool_call>\n"
                "<tool_call>\n{\"name\": \"b\", \"arguments\": \"{\\\"x\\\": [1, 2]}\"}\n</tool_call>\n",
                "Let me look.", {{"a", "{}"}, {"b", R"({"x":[1,2]})"}});
  // MiniMind's parser takes a call without arguments as {}
  expect_parsed("<tool_call>{\"name\": \"now\"}</tool_call>", "", {{"now", "{}"}});
}

TEST(ToolCallParser, MalformedCallsStayContentWordForWord) {
  const std::string bad_json = "Hi <tool_call>\n{\"name\": \"a\", \"arguments\": {\"x\": }\n</tool_call> there";
  expect_parsed(bad_json, bad_json, {}, 1);
  expect_parsed("<tool_call>[1, 2]</tool_call>", "<tool_call>[1, 2]</tool_call>", {}, 1);
  expect_parsed("<tool_call>{\"arguments\": {}}</tool_call>", "<tool_call>{\"arguments\": {}}</tool_call>", {}, 1);  // no name
  expect_parsed("<tool_call>{\"name\": \"a\", \"arguments\": 3}</tool_call>", "<tool_call>{\"name\": \"a\", \"arguments\": 3}</tool_call>", {}, 1);
  expect_parsed("x <tool_call>{\"name\": \"a\"", "x <tool_call>{\"name\": \"a\"", {});  // never closed: not counted
  // a malformed call does not hide a good one after it
  expect_parsed("<tool_call>{oops}</tool_call><tool_call>{\"name\": \"b\", \"arguments\": {\"k\": true}}</tool_call>",
                "<tool_call>{oops}</tool_call>", {{"b", R"({"k":true})"}}, 1);
}

TEST(ToolCallParser, TextWithoutCallsIsContentWithItsWhiteSpace) {
  expect_parsed("  plain <tool text, < tool_call> and </tool_call>\n\n", "  plain <tool text, < tool_call> and </tool_call>\n\n", {});
  expect_parsed("ends with <tool_ca", "ends with <tool_ca", {});
}

// A model (or a client's streamed text) writing a call that never closes: each byte is searched
// once, not the whole body again per piece (which took 33 s for this body here, 0.2 s in one pass).
TEST(ToolCallParser, ALongCallStreamedByteByByteCostsOnePass) {
  ToolCallParser parser;
  const auto start = std::chrono::steady_clock::now();
  std::string body = "{\"name\": \"a\", \"arguments\": {\"x\": \"";
  body += std::string(size_t{2} << 20, 'y');
  body += "\"}}";
  EXPECT_TRUE(parser.push("<tool_call>").content.empty());
  for (const char c : body) EXPECT_TRUE(parser.push(std::string_view(&c, 1)).calls.empty());
  const ToolCallParts end = parser.push("</tool_call>");
  ASSERT_EQ(end.calls.size(), 1u);
  EXPECT_EQ(end.calls[0].arguments.size(), (size_t{2} << 20) + 8);  // {"x":"..."}
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 10.0);
}

TEST(ToolCallParser, IdsHaveOpenAIsShapeAndDiffer) {
  ToolCallParser parser;
  const ToolCallParts p = parser.push("<tool_call>{\"name\": \"a\"}</tool_call><tool_call>{\"name\": \"a\"}</tool_call>");
  ASSERT_EQ(p.calls.size(), 2u);
  for (const ToolCall& c : p.calls) {
    ASSERT_EQ(c.id.size(), 29u) << c.id;
    EXPECT_EQ(c.id.substr(0, 5), "call_");
    for (const char ch : c.id.substr(5)) EXPECT_TRUE(std::isalnum(static_cast<unsigned char>(ch))) << c.id;
  }
  EXPECT_NE(p.calls[0].id, p.calls[1].id);
}

}  // namespace
}  // namespace nf::infer
