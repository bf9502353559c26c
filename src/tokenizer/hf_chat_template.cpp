// Hugging Face chat templates rendered by the Jinja interpreter (hf_chat_template.h).
#include "nanoformer/tokenizer/hf_chat_template.h"

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "nanoformer/core/error.h"
#include "nanoformer/io/gguf.h"
#include "nanoformer/tokenizer/gguf_tokenizer.h"
#include "util/json_input.h"

namespace nf::tokenizer {
namespace {

// `text` parsed as JSON for the template (keys in order, nesting bounded), its errors naming `what`.
jinja::Value json_value(std::string_view text, const std::string& what) {
  return jinja::from_json(util::parse_ordered_json(text, what + " is "));
}

jinja::Value messages_value(std::span<const ChatMessage> messages) {
  jinja::List list;
  for (size_t i = 0; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
    jinja::Dict d;
    d.items = {{"role", jinja::Value::string(m.role)}, {"content", jinja::Value::string(m.content)}};
    if (!m.tool_calls.empty())
      d.set("tool_calls", json_value(m.tool_calls, "message " + std::to_string(i) + ": tool_calls"));
    if (!m.tool_call_id.empty()) d.set("tool_call_id", jinja::Value::string(m.tool_call_id));
    if (m.reasoning_content) d.set("reasoning_content", jinja::Value::string(*m.reasoning_content));
    list.push_back(jinja::Value::dict(std::move(d)));
  }
  return jinja::Value::list(std::move(list));
}

// The tools as the template sees them: None when empty, else the JSON array.
jinja::Value tools_value(std::string_view tools) {
  if (tools.empty()) return jinja::Value::none();
  jinja::Value v = json_value(tools, "tools");
  NF_CHECK(v.is_list(), "tools is not a JSON array of tools: ", util::shorten(std::string(tools)));
  return v;
}

bool starts_at(std::span<const TokenId> ids, size_t i, std::span<const TokenId> pattern) {
  return i + pattern.size() <= ids.size() && std::equal(pattern.begin(), pattern.end(), ids.begin() + i);
}

// MiniMind's SFTDataset.generate_labels (dataset/lm_dataset.py at d65ef2c), step for step: for each
// run of `open` (the ids of bos_token + "assistant\n") at i, start = i + |open| and end = the first run
// of `close` (eos_token + "\n") at or after start (or the end); positions start .. end + |close| - 1 are
// labels (trained).
std::vector<uint8_t> minimind_labels(std::span<const TokenId> ids, std::span<const TokenId> open,
                                     std::span<const TokenId> close) {
  std::vector<uint8_t> trained(ids.size(), 0);
  for (size_t i = 0; i < ids.size();) {
    if (!starts_at(ids, i, open)) {
      ++i;
      continue;
    }
    const size_t start = i + open.size();
    size_t end = start;
    while (end < ids.size() && !starts_at(ids, end, close)) ++end;
    for (size_t j = start; j < std::min(end + close.size(), ids.size()); ++j) trained[j] = 1;
    i = end < ids.size() ? end + close.size() : ids.size();
  }
  return trained;
}

// Whether `id` is an added token: one id for its text, but several when read as plain text.
bool is_added_token(const Tokenizer& tokenizer, TokenId id) {
  const std::string text(tokenizer.token_bytes(id));
  std::vector<TokenId> plain;
  tokenizer.encode_ordinary(text, plain);
  return text.size() > 1 && tokenizer.token_id(text) == id && plain != std::vector<TokenId>{id};
}

// The template parsed, its errors (a construct outside the subset) naming the file it came from.
jinja::Template compile(const std::string& name, std::string_view source) {
  try {
    return jinja::Template(source);
  } catch (const Error& e) {
    NF_FAIL(name, ": ", e.what());
  }
}

// A GGUF file's tokenizer.chat_template, with the texts of its special ids as transformers names them.
HfChatTemplate::Source gguf_source(const std::string& path) {
  const io::GGUFFile file = io::GGUFFile::open(path);
  const std::string key = "tokenizer.chat_template";
  NF_CHECK(file.has(key), path, ": no key '", key, "'");
  HfChatTemplate::Source out{.name = path + " (" + key + ")", .text = file.get_string(key), .special_tokens = {}};
  const BpeTokenizer tokenizer = tokenizer_from_gguf(file);
  for (const auto& [name, id] : gguf_special_ids(file)) {
    const char* as = name == "bos" ? "bos_token" : name == "eos" ? "eos_token" : name == "unknown" ? "unk_token"
                   : name == "seperator" ? "sep_token" : name == "padding" ? "pad_token" : nullptr;
    if (as) out.special_tokens.emplace_back(as, std::string(tokenizer.token_bytes(id)));
  }
  return out;
}

}  // namespace

HfChatTemplate::HfChatTemplate(std::string name, std::string_view source,
                               std::vector<std::pair<std::string, std::string>> special_tokens, const Tokenizer& tokenizer)
    : name_(std::move(name)), template_(compile(name_, source)), special_tokens_(std::move(special_tokens)), tokenizer_(tokenizer) {
  // the end token: what follows the assistant's content in a [user, assistant] exchange
  const std::string content = "Hello";
  const std::vector<ChatMessage> exchange{{"user", "Hi"}, {"assistant", content}};
  std::string text;
  try {
    text = render_text(exchange, false);
  } catch (const Error& e) {
    NF_FAIL(name_, ": rendering a [user, assistant] exchange failed: ", e.what());
  }
  const size_t at = text.rfind(content);
  NF_CHECK(at != std::string::npos, name_, ": a rendered [user, assistant] exchange does not contain the assistant's text");
  const std::string tail = text.substr(at + content.size());
  for (const auto& [key, value] : special_tokens_)
    if (key == "eos_token" && !value.empty() && tail.find(value) != std::string::npos && tokenizer.token_id(value)) {
      end_text_ = value;
      end_ = *tokenizer.token_id(value);
      break;
    }
  if (end_text_.empty())
    for (const TokenId id : tokenizer.encode(tail))
      if (is_added_token(tokenizer, id)) {
        end_ = id;
        end_text_ = std::string(tokenizer.token_bytes(id));
        break;
      }
  NF_CHECK(!end_text_.empty(), name_, ": no special token ends the assistant's turn (after it comes ",
           util::shorten(tail), "), so generation would not know where to stop");
  // MiniMind's rule for MiniMind's template: the generation prompt is bos_token + "assistant\n" and more
  // (the closed empty <think> block) and a reply closes with eos_token + "\n" (each an added token)
  std::string bos, eos;
  for (const auto& [key, value] : special_tokens_) {
    if (key == "bos_token") bos = value;
    if (key == "eos_token") eos = value;
  }
  auto added = [&](const std::string& token) {
    return !token.empty() && tokenizer.token_id(token) && is_added_token(tokenizer, *tokenizer.token_id(token));
  };
  if (!added(bos) || !added(eos)) return;
  const std::string opening = bos + "assistant\n";
  const std::string history = render_text(std::span(exchange).first(1), false);
  const std::string prompt = render_text(std::span(exchange).first(1), true);
  if (prompt.compare(0, history.size(), history) == 0 && prompt.compare(history.size(), opening.size(), opening) == 0 &&
      prompt.size() > history.size() + opening.size() && text.find(content + eos + "\n") != std::string::npos) {
    minimind_open_ = tokenizer.encode(opening);
    minimind_close_ = tokenizer.encode(eos + "\n");
  }
}

std::unique_ptr<HfChatTemplate> HfChatTemplate::from_file(const std::string& path, const Tokenizer& tokenizer) {
  Source s = read_source(path);
  return std::make_unique<HfChatTemplate>(std::move(s.name), s.text, std::move(s.special_tokens), tokenizer);
}

HfChatTemplate::Source HfChatTemplate::read_source(const std::string& path) {
  if (io::is_gguf_file(path)) return gguf_source(path);
  const auto doc = util::parse_json(read_file(path), path + ": ");
  NF_CHECK(doc.is_object(), path, ": a tokenizer_config.json is a JSON object");
  std::vector<std::pair<std::string, std::string>> special;
  for (const char* key : {"bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"}) {
    const auto it = doc.find(key);
    if (it == doc.end() || it->is_null()) continue;
    if (it->is_string()) special.emplace_back(key, it->get<std::string>());
    else if (it->is_object() && it->contains("content") && (*it)["content"].is_string())
      special.emplace_back(key, (*it)["content"].get<std::string>());
    else NF_FAIL(path, ": \"", key, "\" is neither a string nor an object with a \"content\" string: ", util::json_excerpt(*it));
  }
  const std::filesystem::path jinja_file = std::filesystem::path(path).parent_path() / "chat_template.jinja";
  std::error_code ec;
  if (std::filesystem::is_regular_file(jinja_file, ec))
    return {.name = jinja_file.string(), .text = read_file(jinja_file.string()), .special_tokens = std::move(special)};
  const auto it = doc.find("chat_template");
  NF_CHECK(it != doc.end(), path, ": no \"chat_template\" key (and no chat_template.jinja beside it)");
  std::string source;
  if (it->is_string()) {
    source = it->get<std::string>();
  } else if (it->is_array()) {  // named templates: [{"name": "default", "template": "..."}, ...]
    for (const auto& entry : *it)
      if (entry.is_object() && entry.value("name", "") == "default" && entry.contains("template") &&
          entry["template"].is_string())
        source = entry["template"].get<std::string>();
    NF_CHECK(!source.empty(), path, ": \"chat_template\" is a list without a \"default\" template");
  } else {
    NF_FAIL(path, ": \"chat_template\" is not a string but ", util::json_excerpt(*it));
  }
  return {.name = path, .text = std::move(source), .special_tokens = std::move(special)};
}

std::string HfChatTemplate::render_text(std::span<const ChatMessage> messages, bool add_generation_prompt,
                                        std::string_view tools) const {
  return render_text(messages, add_generation_prompt, tools_value(tools));
}

std::string HfChatTemplate::render_text(std::span<const ChatMessage> messages, bool add_generation_prompt,
                                        const jinja::Value& tools) const {
  jinja::Dict context;
  context.set("messages", messages_value(messages));
  context.set("add_generation_prompt", jinja::Value::boolean(add_generation_prompt));
  context.set("tools", tools);
  context.set("documents", jinja::Value::none());
  for (const auto& [key, value] : special_tokens_) context.set(key, jinja::Value::string(value));
  return template_.render(jinja::Value::dict(std::move(context)));
}

RenderedChat HfChatTemplate::render_chat(std::span<const ChatMessage> messages, std::string_view tools_json) const {
  const jinja::Value tools = tools_value(tools_json);
  const std::string text = render_text(messages, false, tools);
  RenderedChat out;
  out.ids = tokenizer_.encode(text);
  out.trained.assign(out.ids.size(), 0);
  // where each token starts in the text (decoding is the exact inverse of encoding)
  std::vector<size_t> starts;
  size_t offset = 0;
  for (const TokenId id : out.ids) {
    starts.push_back(offset);
    offset += tokenizer_.token_bytes(id).size();
  }
  NF_CHECK(offset == text.size(), name_, ": the tokens of the rendered text do not decode to it");
  if (!minimind_open_.empty()) {
    out.trained = minimind_labels(out.ids, minimind_open_, minimind_close_);
    return out;
  }
  for (size_t i = 0; i < messages.size(); ++i) {
    if (messages[i].role != "assistant") continue;
    // the reply starts where the whole text parts from the conversation before it with the generation
    // prompt (and the same tools): at the prompt's end, or inside the prompt when the template renders a
    // reply's opening otherwise (MiniMind's prompt closes an empty <think> block, a reply may think)
    const std::string before = render_text(messages.first(i), true, tools);
    const size_t begin = static_cast<size_t>(
        std::mismatch(before.begin(), before.end(), text.begin(), text.end()).first - before.begin());
    if (begin < before.size()) {
      const std::string history = render_text(messages.first(i), false, tools);
      NF_CHECK(begin >= history.size() && text.compare(0, history.size(), history) == 0, name_, ": message ", i,
               ": the whole conversation does not begin with the conversation before it, so the assistant's tokens "
               "cannot be told apart for training");
    }
    const size_t end_at = text.find(end_text_, begin);
    const size_t end = end_at == std::string::npos ? text.size() : end_at + end_text_.size();
    for (size_t t = 0; t < starts.size(); ++t)
      if (starts[t] >= begin && starts[t] < end) out.trained[t] = 1;
  }
  return out;
}

std::vector<TokenId> HfChatTemplate::render_prompt(std::span<const ChatMessage> messages, std::string_view tools) const {
  return tokenizer_.encode(render_text(messages, true, tools));
}

}  // namespace nf::tokenizer
