#pragma once
// The tools of an OpenAI chat request (POST /v1/chat/completions), validated:
//   tools               [{"type": "function", "function": {"name": [a-zA-Z0-9_-]{1,64}, "description"?: string,
//                       "parameters"?: a JSON schema object, "strict"?: boolean}}], names unique
//   tool_choice         "auto" (the default), "none", "required", or {"type": "function", "function":
//                       {"name": one of the tools'}}; "required" and a named function need tools
//   parallel_tool_calls a boolean (default false, as llama.cpp's): "required" may then make several calls
// Each fault is an ApiError 400 naming the field ("tools[1].function.name"). The tools are offered
// to the chat template as transformers' apply_chat_template(tools=...) does, with "none" too (as
// llama.cpp and vLLM do: the prompt stays the same, only no call is parsed or forced). With "required"
// or a named function, the answer is constrained (tool_call_gbnf) to be calls in the <tool_call>
// syntax (infer/tool_call_parser.h) whose arguments validate against the function's parameters.
#include <string>

#include <nlohmann/json.hpp>

namespace nf::serve {

enum class ToolChoice { automatic, none, required, function };

struct ToolRequest {
  std::string tools;  // the tools as a JSON array (in the order given), for the template; empty: none
  ToolChoice choice = ToolChoice::automatic;
  std::string function;   // ToolChoice::function: its name
  bool parallel = false;  // parallel_tool_calls
  // Whether the answer's <tool_call> text is parsed into tool_calls.
  bool parsed() const { return !tools.empty() && choice != ToolChoice::none; }
  // Whether the answer must be calls (the grammar of tool_call_gbnf).
  bool forced() const { return !tools.empty() && (choice == ToolChoice::required || choice == ToolChoice::function); }
};

// tools, tool_choice and parallel_tool_calls of `body` (ordered: the tools keep their keys' order).
ToolRequest parse_tool_request(const nlohmann::ordered_json& body);

// The GBNF of the answer a forced request allows: one call (or, with parallel, one or more joined by
// "\n"), <tool_call>\n{"name": "NAME", "arguments": ARGUMENTS}\n</tool_call>, NAME a tool's (the named
// one's), ARGUMENTS JSON that validates against its parameters (grammar/json_schema.h). A
// schema keyword not supported: ApiError 400 naming tools[i].function.parameters.
std::string tool_call_gbnf(const ToolRequest& request);

}  // namespace nf::serve
