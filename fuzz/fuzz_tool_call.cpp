// A model's (or, through the server's grammar field and prompts, a client's) text read for Hermes
// tool calls (infer/tool_call_parser.h) and the calls answered by the tool registry
// (infer/hermes_tools.h, with the calculator): the first byte chooses where the rest is cut into
// streamed pieces. The content and calls must be the same however the text is cut (as one piece,
// and byte by byte), every call's name non-empty and its arguments a JSON object, and every answer
// given without an exception escaping.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "fuzz_support.h"
#include "nanoformer/infer/hermes_tools.h"

namespace {

struct Parsed {
  std::string content;
  std::vector<std::pair<std::string, std::string>> calls;
  int64_t malformed = 0;
  bool operator==(const Parsed&) const = default;
};

void add(Parsed& out, const nf::infer::ToolCallParts& p) {
  out.content += p.content;
  for (const nf::infer::ToolCall& c : p.calls) out.calls.emplace_back(c.name, c.arguments);
  out.malformed += p.malformed;
}

// The text pushed in pieces of `piece` bytes (0: one piece).
Parsed parse(std::string_view text, size_t piece) {
  nf::infer::ToolCallParser parser;
  Parsed out;
  if (piece == 0) {
    add(out, parser.push(text));
  } else {
    for (size_t at = 0; at < text.size(); at += piece) add(out, parser.push(text.substr(at, piece)));
  }
  add(out, parser.finish());
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t piece = data[0] % 16;
  const std::string_view text = nf::fuzz::as_text(data + 1, size - 1);
  const Parsed whole = parse(text, 0);
  NF_FUZZ_CHECK(parse(text, piece) == whole, "cutting the text in pieces of ", piece, " bytes changed what was parsed");
  NF_FUZZ_CHECK(parse(text, 1) == whole, "streaming the text byte by byte changed what was parsed");
  nf::infer::ToolRegistry registry;
  registry.add("calculator", nf::infer::calculator_tool);
  for (const auto& [name, arguments] : whole.calls) {
    NF_FUZZ_CHECK(!name.empty(), "a call without a name");
    NF_FUZZ_CHECK(nlohmann::json::parse(arguments, nullptr, false).is_object(), "arguments that are no JSON object: ", arguments);
    (void)registry.answer({.id = "call_x", .name = name, .arguments = arguments});  // answers or errors, never throws
  }
  return 0;
}
