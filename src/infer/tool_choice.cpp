// The tools a model calls while it decodes, chosen from the user's flags (infer/tool_choice.h).
#include "nanoformer/infer/tool_choice.h"

#include <algorithm>
#include <chrono>
#include <sstream>

#include "nanoformer/core/error.h"
#include "nanoformer/infer/hermes_tools.h"
#include "nanoformer/tokenizer/hf_chat_template.h"

namespace nf::infer {

const std::vector<std::string>& builtin_tool_names() {
  static const std::vector<std::string> names = {"calculator"};
  return names;
}

std::unique_ptr<ToolUse> make_tool_use(const ToolOptions& o, const tokenizer::Tokenizer& tokenizer,
                                       const tokenizer::ChatTemplate* chat_template) {
  if (!o.any()) return nullptr;
  for (const std::string& t : o.tools)
    NF_CHECK(std::find(builtin_tool_names().begin(), builtin_tool_names().end(), t) != builtin_tool_names().end(),
             "--tools: unknown tool '", t, "' (known: calculator)");
  if (tokenizer.token_id("<|python_start|>").has_value()) {  // a nanochat model: its engine's calculator
    NF_CHECK(o.commands.empty(), "--tool-command: a nanochat model calls nanochat's calculator only (--tools calculator)");
    return std::make_unique<NanochatCalculatorUse>(tokenizer);
  }
  const auto* jinja = dynamic_cast<const tokenizer::HfChatTemplate*>(chat_template);
  NF_CHECK(jinja != nullptr, "--tools / --tool-command: the model's chat template ",
           chat_template ? std::string(chat_template->name()) : std::string("(none)"),
           " renders no tool messages: give a Jinja one (--chat-template FILE, or a tokenizer_config.json beside the "
           "tokenizer)");
  auto registry = std::make_shared<ToolRegistry>();
  for (const std::string& t : o.tools) registry->add(t, calculator_tool, calculator_schema());
  for (const std::string& c : o.commands) {
    const size_t eq = c.find('=');
    NF_CHECK(eq != std::string::npos && eq > 0 && eq + 1 < c.size(), "--tool-command '", c, "': give NAME=PROGRAM [ARGS...]");
    std::vector<std::string> argv;
    std::istringstream words(c.substr(eq + 1));
    for (std::string w; words >> w;) argv.push_back(w);
    NF_CHECK(!argv.empty(), "--tool-command '", c, "': no program after '='");
    NF_CHECK(!registry->has(c.substr(0, eq)), "--tool-command '", c, "': the tool ", c.substr(0, eq), " is given twice");
    registry->add(c.substr(0, eq),
                  command_tool(std::move(argv), {.time = std::chrono::milliseconds(o.timeout_ms),
                                                 .output_bytes = static_cast<size_t>(o.output_limit)}));
  }
  return std::make_unique<HermesToolUse>(registry, *jinja, tokenizer, o.max_turns);
}

}  // namespace nf::infer
