#pragma once
// A chat answer's tool calls in the syntax of Hermes, Qwen2.5/Qwen3 and MiniMind's templates:
//   <tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>
// one or several, parsed back into OpenAI's tool_calls (arguments as JSON text); the rest of the
// answer is its content. A call's JSON must be an object with a string "name" and an "arguments"
// object (or a string of one; absent: {}), else the whole tagged text stays content, as does a
// <tool_call> never closed. White space before, between and after the calls is dropped.
// Text arrives piece by piece (streamed): content that may be the start of a <tool_call> is held
// back until it is known, and a call is given when its </tool_call> arrives, so that any split of
// the answer into pieces gives the same content and calls.
#include <string>
#include <string_view>
#include <vector>

namespace nf::serve {

struct ToolCall {
  std::string id;         // call_<24 random letters and digits>
  std::string name;
  std::string arguments;  // a JSON object's text
};

struct ToolCallParts {
  std::string content;
  std::vector<ToolCall> calls;
};

class ToolCallParser {
 public:
  // The content and calls that became final with `text`.
  ToolCallParts push(std::string_view text);
  // What was held back, at the end of the answer.
  ToolCallParts finish();

 private:
  ToolCallParts drain(bool end);
  void give_content(ToolCallParts& out, std::string_view text);

  bool in_call_ = false;    // after a <tool_call>
  bool after_call_ = false; // the last thing given was a call: white space after it is dropped
  std::string space_;       // white space at the content's end, held: dropped if a call follows
  std::string held_;        // not yet given: a call's body, or what may start a <tool_call>
};

// A new tool call id: "call_" and 24 random letters and digits.
std::string new_tool_call_id();

}  // namespace nf::serve
