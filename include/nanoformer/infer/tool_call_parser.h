#pragma once
// A chat answer's tool calls in the syntax of Hermes, Qwen2.5/Qwen3 and MiniMind's templates:
//   <tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>
// one or several, parsed back into OpenAI's tool_calls (arguments as JSON text); the rest of the
// answer is its content. A call's JSON must be an object with a string "name" and an "arguments"
// object (or a string of one; absent: {}), else the whole tagged text stays content, as does a
// <tool_call> never closed. White space before, between and after the calls is dropped.
// Text arrives piece by piece (streamed): content that may be the start of a <tool_call> is held
// back until it is known, and a call is given when its </tool_call> arrives, so that any split of
// the answer into pieces gives the same content and calls. Linear in the text however it arrives
// (a call's body is searched for </tool_call> once per byte), so a model's or a client's text of
// any length costs one pass. Shared by the server's tool_calls (serve/completion_service.h) and
// the tools run while decoding (infer/hermes_tools.h).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace nf::infer {

struct ToolCall {
  std::string id;         // call_<24 random letters and digits>
  std::string name;
  std::string arguments;  // a JSON object's text
};

struct ToolCallParts {
  std::string content;
  std::vector<ToolCall> calls;
  int64_t malformed = 0;  // closed <tool_call> blocks that are no call (their text is in content)
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
  size_t searched_ = 0;     // in a call: the bytes of held_ known to hold no </tool_call>
};

// A new tool call id: "call_" and 24 random letters and digits.
std::string new_tool_call_id();

}  // namespace nf::infer
