// <tool_call> JSON </tool_call> parsed out of an answer (infer/tool_call_parser.h).
#include "nanoformer/infer/tool_call_parser.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <utility>

#include "infer/streamed_tags.h"
#include "util/json_input.h"

namespace nf::infer {
namespace {

using json = nlohmann::ordered_json;  // arguments keep the model's order

constexpr std::string_view kOpen = "<tool_call>", kClose = "</tool_call>";
constexpr int kMaxJsonDepth = 512;  // as the server's bound on any JSON text (serve/json_depth.h)

// The call a tag's body holds: {"name": string, "arguments": object or a string of one}; none when malformed.
std::optional<ToolCall> parse_call(std::string_view body) {
  if (util::json_depth(body, kMaxJsonDepth) > kMaxJsonDepth) return std::nullopt;
  const json call = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (call.is_discarded() || !call.is_object()) return std::nullopt;
  const auto name = call.find("name");
  if (name == call.end() || !name->is_string() || name->get<std::string>().empty()) return std::nullopt;
  json arguments = json::object();
  if (const auto it = call.find("arguments"); it != call.end()) {
    if (it->is_string() && util::json_depth(it->get_ref<const std::string&>(), kMaxJsonDepth) > kMaxJsonDepth) return std::nullopt;
    arguments = it->is_string() ? json::parse(it->get<std::string>(), nullptr, false) : *it;
    if (!arguments.is_object()) return std::nullopt;
  }
  return ToolCall{.id = new_tool_call_id(), .name = name->get<std::string>(), .arguments = arguments.dump()};
}

}  // namespace

std::string new_tool_call_id() {
  static constexpr std::string_view kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  thread_local std::mt19937_64 gen{std::random_device{}()};
  std::uniform_int_distribution<size_t> pick(0, kAlphabet.size() - 1);
  std::string id = "call_";
  for (int i = 0; i < 24; ++i) id += kAlphabet[pick(gen)];
  return id;
}

ToolCallParts ToolCallParser::push(std::string_view text) {
  held_ += text;
  return drain(false);
}

ToolCallParts ToolCallParser::finish() { return drain(true); }

// Content text: its trailing white space is held in space_ (a call may follow); what came before it is given.
void ToolCallParser::give_content(ToolCallParts& out, std::string_view text) {
  if (after_call_) text.remove_prefix(static_cast<size_t>(std::find_if_not(text.begin(), text.end(), is_space) - text.begin()));
  const auto last = std::find_if_not(text.rbegin(), text.rend(), is_space);
  const auto kept = static_cast<size_t>(text.rend() - last);  // up to and with the last non-space
  if (kept == 0) {
    space_ += text;  // (none right after a call: dropped above)
    return;
  }
  out.content += space_;
  out.content += text.substr(0, kept);
  space_ = std::string(text.substr(kept));
  after_call_ = false;
}

ToolCallParts ToolCallParser::drain(bool end) {
  ToolCallParts out;
  for (;;) {
    if (!in_call_) {
      const size_t open = held_.find(kOpen);
      if (open != std::string::npos) {
        give_content(out, std::string_view(held_).substr(0, open));
        held_.erase(0, open + kOpen.size());
        in_call_ = true;
        searched_ = 0;
        continue;
      }
      const size_t keep = end ? 0 : partial_tag(held_, kOpen);
      give_content(out, std::string_view(held_).substr(0, held_.size() - keep));
      held_.erase(0, held_.size() - keep);
      if (end) out.content += std::exchange(space_, {});
      return out;
    }
    const size_t close = held_.find(kClose, searched_);
    if (close == std::string::npos && !end) {  // the call's body so far: a later search starts where a </tool_call> may
      searched_ = held_.size() - std::min(held_.size(), kClose.size() - 1);
      return out;
    }
    if (close != std::string::npos) {
      if (auto call = parse_call(std::string_view(held_).substr(0, close))) {
        out.calls.push_back(std::move(*call));
        space_.clear();  // white space before a call is dropped, and after it
        after_call_ = true;
        held_.erase(0, close + kClose.size());
        in_call_ = false;
        continue;
      }
    }
    // malformed, or never closed: the tagged text is content, as written
    if (close != std::string::npos) ++out.malformed;
    const size_t taken = close == std::string::npos ? held_.size() : close + kClose.size();
    out.content += std::exchange(space_, {});
    out.content += kOpen;
    out.content += held_.substr(0, taken);
    after_call_ = false;
    held_.erase(0, taken);
    in_call_ = false;
  }
}

}  // namespace nf::infer
