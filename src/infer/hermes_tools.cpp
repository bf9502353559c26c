// Hermes tool calls run while decoding, their answers forced as the chat template's tool message
// (infer/hermes_tools.h).
#include "nanoformer/infer/hermes_tools.h"

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>
#include <utility>

#include "nanoformer/core/error.h"
#include "nanoformer/infer/nanochat_calculator.h"
#include "util/json_input.h"

namespace nf::infer {
namespace {

using json = nlohmann::ordered_json;

// The assistant's content in the rendering whose tail is forced: text no model writes.
constexpr std::string_view kMarker = "\x1e<nanoformer tool turn>\x1e";

std::string dump(const json& value) { return value.dump(-1, ' ', false, json::error_handler_t::replace); }

// A call's arguments as an object (the parser gives an object's text; anything else: none).
json arguments_of(const ToolCall& call) {
  json arguments = json::parse(call.arguments, nullptr, /*allow_exceptions=*/false);
  return arguments.is_object() ? arguments : json::object();
}

// The answers to a turn's calls, in order; a block that was no call (no name) answered with an error.
std::vector<std::string> answers_to(const ToolRegistry& registry, const std::vector<ToolCall>& calls) {
  std::vector<std::string> answers;
  for (const ToolCall& call : calls)
    answers.push_back(call.name.empty()
                          ? tool_error(R"(a tool call is JSON {"name": "...", "arguments": {...}} between <tool_call> and </tool_call>)")
                          : registry.answer(call));
  return answers;
}

}  // namespace

std::string tool_error(std::string_view message) { return dump(json{{"error", message}}); }

void ToolRegistry::add(std::string name, ToolFunction run, std::string_view function) {
  NF_CHECK(!name.empty(), "a tool needs a name");
  NF_CHECK(!has(name), "the tool '", name, "' is given twice");
  json f = function.empty() ? json{{"parameters", {{"type", "object"}}}}
                            : json::parse(function, nullptr, /*allow_exceptions=*/false);
  NF_CHECK(f.is_object(), "the tool '", name, "': its function is not a JSON object");
  f.erase("name");
  json named = {{"name", name}};
  named.update(f);
  tools_.push_back({std::move(name), std::move(run), dump(named)});
}

bool ToolRegistry::has(std::string_view name) const {
  for (const Tool& t : tools_)
    if (t.name == name) return true;
  return false;
}

std::vector<std::string> ToolRegistry::names() const {
  std::vector<std::string> out;
  for (const Tool& t : tools_) out.push_back(t.name);
  return out;
}

std::string ToolRegistry::offered() const {
  json list = json::array();
  for (const Tool& t : tools_) list.push_back({{"type", "function"}, {"function", json::parse(t.function)}});
  return dump(list);
}

std::string ToolRegistry::answer(const ToolCall& call) const {
  for (const Tool& t : tools_) {
    if (t.name != call.name) continue;
    try {
      return t.run(call);
    } catch (const std::exception& e) {
      return tool_error(e.what());
    }
  }
  std::string known;
  for (const Tool& t : tools_) known.append(known.empty() ? "" : ", ").append(t.name);
  return tool_error(detail::concat("unknown tool '", util::shorten(call.name), "'; the tools are: ", known.empty() ? "none" : known));
}

std::string calculator_tool(const ToolCall& call) {
  const json arguments = arguments_of(call);
  const auto expression = arguments.find("expression");
  if (expression == arguments.end() || !expression->is_string())
    return tool_error(R"x(the calculator takes {"expression": "..."}, e.g. {"expression": "12*(3+4)"})x");
  const std::string& text = expression->get_ref<const std::string&>();
  if (const std::optional<std::string> answer = nanochat_calculator(text)) return *answer;
  return tool_error(detail::concat("cannot evaluate '", util::shorten(text, 80), "': numbers, + - * / // and parentheses only"));
}

std::string_view calculator_schema() {
  return R"j({"description": "Evaluates an arithmetic expression exactly: numbers, + - * / // and parentheses", )j"
         R"j("parameters": {"type": "object", "properties": {"expression": {"type": "string", "description": )j"
         R"j("e.g. 12*(3+4)"}}, "required": ["expression"]}})j";
}

ToolFunction command_tool(std::vector<std::string> argv, CommandLimits limits) {
  NF_CHECK(!argv.empty() && !argv[0].empty(), "the command tool needs a program");
  return [argv = std::move(argv), limits](const ToolCall& call) {
    const CommandResult r = run_command(argv, dump(json{{"name", call.name}, {"arguments", arguments_of(call)}}), limits);
    if (!r.error.empty()) return tool_error(r.error);
    if (r.timed_out)
      return tool_error(detail::concat("the command '", argv[0], "' was stopped at its time limit of ", limits.time.count(), " ms"));
    if (r.truncated)
      return tool_error(detail::concat("the command '", argv[0], "' was stopped at its output limit of ", limits.output_bytes, " bytes"));
    if (r.exit_code != 0)
      return tool_error(detail::concat("the command '", argv[0], "' failed with exit code ", r.exit_code,
                                       r.output.empty() ? "" : ": ", r.output));
    return r.output;
  };
}

HermesToolUse::HermesToolUse(std::shared_ptr<const ToolRegistry> registry, const tokenizer::HfChatTemplate& chat_template,
                             const tokenizer::Tokenizer& tokenizer, int64_t max_turns)
    : registry_(std::move(registry)), template_(chat_template), tokenizer_(tokenizer), max_turns_(max_turns),
      decoder_(tokenizer) {
  NF_CHECK(registry_ != nullptr, "HermesToolUse: no tool registry");
  NF_CHECK(max_turns_ >= 0, "--max-tool-turns ", max_turns_, ": must be >= 0");
  (void)render_answers({"probe"});  // the template renders a tool turn after the assistant's content
}

std::vector<int64_t> HermesToolUse::render_answers(const std::vector<std::string>& answers) const {
  std::vector<tokenizer::ChatMessage> messages{{"user", "?"}, {"assistant", std::string(kMarker)}};
  for (const std::string& a : answers) messages.push_back({"tool", a});
  std::string text;
  try {
    text = template_.render_text(messages, /*add_generation_prompt=*/true);
  } catch (const Error& e) {
    NF_FAIL("the chat template ", template_.name(), " does not render a tool message after an assistant's: ", e.what());
  }
  const size_t at = text.find(kMarker);
  NF_CHECK(at != std::string::npos, "the chat template ", template_.name(),
           " does not render an assistant's content as written, so a tool's answer cannot follow it");
  std::vector<int64_t> ids;
  for (const tokenizer::TokenId id : tokenizer_.encode(std::string_view(text).substr(at + kMarker.size())))
    ids.push_back(static_cast<int64_t>(id));
  return ids;
}

std::vector<int64_t> HermesToolUse::after(int64_t id) {
  if (forcing_ > 0) {  // the last answer's tokens: not the model's text
    --forcing_;
    return {};
  }
  const std::string text = decoder_.push(static_cast<tokenizer::TokenId>(id));
  if (text.empty()) return {};
  ToolCallParts parts = parser_.push(text);
  if (parts.calls.empty() && parts.malformed == 0) return {};
  for (const ToolCall& call : parts.calls)
    if (std::find(client_tools_.begin(), client_tools_.end(), call.name) != client_tools_.end()) return {};
  ToolTurn turn{.calls = std::move(parts.calls), .answers = {}, .ran = turns_ < max_turns_, .forced = 0};
  for (int64_t i = 0; i < parts.malformed; ++i)  // a block that is no call: answered with an error, no name
    turn.calls.push_back({.id = new_tool_call_id(), .name = "", .arguments = ""});
  if (!turn.ran) {
    if (on_turn) on_turn(turn);
    return {};
  }
  if (!bell_) {
    std::vector<std::string> answers = answers_to(*registry_, turn.calls);
    return answer_turn(std::move(turn), std::move(answers));
  }
  // off the decoding thread: the thread owns what it reads, so it may finish after this tool use is gone
  std::promise<std::vector<std::string>> promise;
  answers_ = promise.get_future();
  bell_->call_started();
  try {
    std::thread([registry = registry_, calls = turn.calls, promise = std::move(promise), bell = bell_]() mutable {
      try {
        promise.set_value(answers_to(*registry, calls));
      } catch (...) {  // (answer() catches a tool's own exceptions: this is running out of memory)
        promise.set_exception(std::current_exception());
      }
      bell->call_answered();
    }).detach();
  } catch (...) {  // no thread: no call
    bell_->call_answered();
    throw;
  }
  waiting_turn_ = std::move(turn);
  return {};
}

std::optional<std::vector<int64_t>> HermesToolUse::take_answer() {
  if (!answers_.valid() || answers_.wait_for(std::chrono::seconds(0)) != std::future_status::ready) return std::nullopt;
  return answer_turn(std::move(waiting_turn_), answers_.get());
}

void HermesToolUse::wait_for_answer() {
  if (answers_.valid()) answers_.wait();
}

std::vector<int64_t> HermesToolUse::answer_turn(ToolTurn turn, std::vector<std::string> answers) {
  turn.answers = std::move(answers);
  std::vector<int64_t> forced = render_answers(turn.answers);
  ++turns_;
  forcing_ = static_cast<int64_t>(forced.size());
  turn.forced = forcing_;
  if (on_turn) on_turn(turn);
  return forced;
}

std::unique_ptr<ToolUse> HermesToolUse::clone() const {
  auto copy = std::make_unique<HermesToolUse>(registry_, template_, tokenizer_, max_turns_);
  copy->client_tools_ = client_tools_;
  return copy;
}

}  // namespace nf::infer
