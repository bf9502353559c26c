#pragma once
// Which tools a model calls while it decodes, from what the user asked for (the CLI's --tools,
// --tool-command, --tool-timeout, --tool-output-limit and --max-tool-turns; training's --tools):
//   a nanochat model (its tokenizer has <|python_start|>)  nanochat's calculator, as its engine
//                                                          runs it (infer/tool_use.h)
//   any other model                                        the named tools in a ToolRegistry, called
//                                                          in the Hermes syntax and answered as
//                                                          its Jinja chat template's tool messages
//                                                          (infer/hermes_tools.h)
// generate, chat, serve and GRPO's rollouts choose here, so that they agree.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "nanoformer/infer/tool_use.h"
#include "nanoformer/tokenizer/chat_template.h"
#include "nanoformer/tokenizer/tokenizer.h"

namespace nf::infer {

struct ToolOptions {
  std::vector<std::string> tools;     // built-in tools by name: calculator
  std::vector<std::string> commands;  // NAME=PROGRAM [ARGS...] (split at spaces, no shell)
  int64_t timeout_ms = 10000;         // a command tool's time limit
  int64_t output_limit = 65536;       // a command tool's output limit (bytes)
  int64_t max_turns = 8;              // tool turns per answer at most
  bool any() const { return !tools.empty() || !commands.empty(); }
};

// The names of the built-in tools, as --tools takes them.
const std::vector<std::string>& builtin_tool_names();

// The tool use for `options` (nullptr when it asks for none). The tokenizer and the chat template
// (a Jinja one for a chat-template model; ignored for a nanochat model) must outlive it. Throws
// nf::Error naming the flag: an unknown tool, a malformed --tool-command, a command tool for a
// nanochat model, or a chat-template model whose template renders no tool messages.
std::unique_ptr<ToolUse> make_tool_use(const ToolOptions& options, const tokenizer::Tokenizer& tokenizer,
                                       const tokenizer::ChatTemplate* chat_template);

}  // namespace nf::infer
