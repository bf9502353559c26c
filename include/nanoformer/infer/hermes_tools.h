#pragma once
// Tools for chat-template models, in the Hermes syntax of Qwen2.5/Qwen3's and MiniMind's templates
// (infer/tool_call_parser.h): while it decodes, the model writes
//   <tool_call>\n{"name": "calculator", "arguments": {"expression": "12*34"}}\n</tool_call>
// and once that block is complete, the named tool runs and its answer is forced into the sequence
// (infer/tool_use.h) as the model's own chat template renders it: the end of the assistant's turn,
// a `tool` message with the answer, and the opening of the next assistant turn; the model then goes
// on. That is MiniMind's agent rollout (jingyaogong/minimind@d65ef2c, trainer/train_agent.py,
// rollout_single: the assistant's text so far and the tool messages rendered by
// apply_chat_template(add_generation_prompt=True), the tokens past what was decoded fed next), in
// the one decoding loop instead of a generation per turn.
//
// What is forced is what the template writes after an assistant message: the conversation
// [user, assistant, tool...] is rendered with a marker as the assistant's content, and the text
// after the marker is encoded (a template that drops the content fails at construction, naming
// it). So for Qwen2.5 after "...</tool_call>": <|im_end|>\n<|im_start|>user\n<tool_response>\n
// ANSWER\n</tool_response><|im_end|>\n<|im_start|>assistant\n, as transformers renders it
// (tests/infer/test_hermes_tools.cpp against tests/fixtures/tokenizer/hf_chat_templates.json).
//
// Answers: a tool's text; an unknown name, a malformed block (closed, but not JSON of a call) or a
// tool that fails answers {"error": "..."} instead (as agents expect: the model reads it), never an
// exception. Calls stop being run after max_turns tool turns: a later call is reported as not run
// and decoding goes on without an answer. Built-in tools: calculator (nanochat's evaluator,
// infer/nanochat_calculator.h, on {"expression": "..."}) and command (a user-given program,
// infer/command_tool.h). Only Jinja templates render tool messages (tokenizer/hf_chat_template.h).
//
// Where the tools run: inside after(), on the decoding thread (the default: generate, chat); or,
// after answer_off_thread (the server), a turn's calls run one after the other on a thread of its
// own, which holds the registry, the calls and a promise of their answers (so it may outlive the
// tool use); the turn is reported and its tool message rendered and forced when the stream takes
// the answers (take_answer(), on the decoding thread). The tokens forced are the same either way.
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "nanoformer/infer/command_tool.h"
#include "nanoformer/infer/tool_call_parser.h"
#include "nanoformer/infer/tool_use.h"
#include "nanoformer/tokenizer/hf_chat_template.h"
#include "nanoformer/tokenizer/stream_decoder.h"

namespace nf::infer {

// A tool: a call (its name and its arguments, a JSON object's text) to its answer's text. It may
// throw: the answer is then {"error": the exception's message}.
using ToolFunction = std::function<std::string(const ToolCall& call)>;

class ToolRegistry {
 public:
  // `function`: what the model is told of the tool (OpenAI's function object without its name, JSON
  // text: {"description": ..., "parameters": {JSON Schema}}); empty: {"parameters": {"type": "object"}}.
  // Throws nf::Error naming a duplicate or empty name, or a function that is not a JSON object.
  void add(std::string name, ToolFunction run, std::string_view function = {});
  bool has(std::string_view name) const;
  std::vector<std::string> names() const;
  bool empty() const { return tools_.empty(); }
  // The named tool's answer to `call`, or {"error": ...} for an unknown name or a tool that threw.
  std::string answer(const ToolCall& call) const;
  // The tools as a chat template's `tools` (OpenAI's list of {"type": "function", "function": {"name",
  // ...}}, JSON text), in the order added: what the prompt offers the model.
  std::string offered() const;

 private:
  struct Tool {
    std::string name;
    ToolFunction run;
    std::string function;  // JSON object text, with its name
  };
  std::vector<Tool> tools_;
};

// {"expression": "..."}: nanochat_calculator's answer (Python's arithmetic on Python's numbers,
// never a Python or a shell), or an error naming what it cannot evaluate.
std::string calculator_tool(const ToolCall& call);
// The calculator's function object for ToolRegistry::add: its description and parameters.
std::string_view calculator_schema();

// A program run with the call's JSON ({"name": ..., "arguments": {...}}) on its standard input
// under `limits`; the answer is its standard output, or an error naming the time limit, the output
// limit, its exit code or why it could not start. argv[0] is looked up in PATH.
ToolFunction command_tool(std::vector<std::string> argv, CommandLimits limits);

// {"error": message} as JSON text.
std::string tool_error(std::string_view message);

class HermesToolUse : public ToolUse {
 public:
  // The registry, the template and the tokenizer (the template's) must outlive the tool use and its
  // clones. Throws nf::Error naming the template when its text after an assistant message cannot
  // be found (a template without tool messages, or one that drops the assistant's content).
  HermesToolUse(std::shared_ptr<const ToolRegistry> registry, const tokenizer::HfChatTemplate& chat_template,
                const tokenizer::Tokenizer& tokenizer, int64_t max_turns = 8);

  std::vector<int64_t> after(int64_t id) override;
  std::unique_ptr<ToolUse> clone() const override;
  std::string offered_tools() const override { return registry_->offered(); }
  void answer_off_thread(std::shared_ptr<ToolAnswerBell> bell) override { bell_ = std::move(bell); }
  bool answering() const override { return answers_.valid(); }
  std::optional<std::vector<int64_t>> take_answer() override;
  void wait_for_answer() override;

  // Calls to these names are left to the caller's client (the server's request tools): a turn with
  // one of them runs nothing, forces nothing and reports nothing, so the model ends its turn.
  void leave_to_client(std::vector<std::string> names) { client_tools_ = std::move(names); }

  // The tokens forced after an assistant turn whose tool calls got `answers` (in order).
  std::vector<int64_t> render_answers(const std::vector<std::string>& answers) const;

 private:
  // A turn whose calls ran, with their answers: its tool message rendered and forced next, the
  // turn reported to on_turn; the tokens to force.
  std::vector<int64_t> answer_turn(ToolTurn turn, std::vector<std::string> answers);

  std::shared_ptr<const ToolRegistry> registry_;
  const tokenizer::HfChatTemplate& template_;
  const tokenizer::Tokenizer& tokenizer_;
  int64_t max_turns_;
  std::vector<std::string> client_tools_;
  int64_t turns_ = 0;    // tool turns answered
  int64_t forcing_ = 0;  // tokens of the last answer still to come back through after()
  tokenizer::StreamDecoder decoder_;
  ToolCallParser parser_;
  std::shared_ptr<ToolAnswerBell> bell_;  // set: calls run on their own thread, which rings it
  ToolTurn waiting_turn_;                 // the turn whose calls run there
  std::future<std::vector<std::string>> answers_;  // theirs; valid until taken
};

}  // namespace nf::infer
