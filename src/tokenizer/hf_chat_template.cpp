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

jinja::Value messages_value(std::span<const ChatMessage> messages) {
  jinja::List list;
  for (const ChatMessage& m : messages) {
    jinja::Dict d;
    d.items = {{"role", jinja::Value::string(m.role)}, {"content", jinja::Value::string(m.content)}};
    if (!m.tool_calls.empty()) d.set("tool_calls", jinja::from_json(nlohmann::ordered_json::parse(m.tool_calls)));
    if (!m.tool_call_id.empty()) d.set("tool_call_id", jinja::Value::string(m.tool_call_id));
    list.push_back(jinja::Value::dict(std::move(d)));
  }
  return jinja::Value::list(std::move(list));
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
      return;
    }
  for (const TokenId id : tokenizer.encode(tail))
    if (is_added_token(tokenizer, id)) {
      end_ = id;
      end_text_ = std::string(tokenizer.token_bytes(id));
      return;
    }
  NF_FAIL(name_, ": no special token ends the assistant's turn (after it comes ", util::shorten(tail),
          "), so generation would not know where to stop");
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
                                        const jinja::Value& extra) const {
  jinja::Dict context;
  context.set("messages", messages_value(messages));
  context.set("add_generation_prompt", jinja::Value::boolean(add_generation_prompt));
  context.set("tools", jinja::Value::none());
  context.set("documents", jinja::Value::none());
  for (const auto& [key, value] : special_tokens_) context.set(key, jinja::Value::string(value));
  if (extra.is_dict())
    for (const auto& [key, value] : extra.as_dict().items) context.set(key, value);
  return template_.render(jinja::Value::dict(std::move(context)));
}

RenderedChat HfChatTemplate::render(std::span<const ChatMessage> messages) const {
  const std::string text = render_text(messages, false);
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
  for (size_t i = 0; i < messages.size(); ++i) {
    if (messages[i].role != "assistant") continue;
    // the reply starts where the whole text parts from the conversation before it with the generation
    // prompt: at the prompt's end, or inside the prompt when the template renders a reply's opening
    // otherwise (MiniMind's prompt closes an empty <think> block, a reply may think)
    const std::string before = render_text(messages.first(i), true);
    const size_t begin = static_cast<size_t>(
        std::mismatch(before.begin(), before.end(), text.begin(), text.end()).first - before.begin());
    if (begin < before.size()) {
      const std::string history = render_text(messages.first(i), false);
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

std::vector<TokenId> HfChatTemplate::render_for_completion(std::span<const ChatMessage> messages) const {
  return tokenizer_.encode(render_text(messages, true));
}

std::vector<TokenId> HfChatTemplate::render_with_tools(std::span<const ChatMessage> messages, std::string_view tools) const {
  if (tools.empty()) return render_for_completion(messages);
  jinja::Dict extra;
  extra.set("tools", jinja::from_json(nlohmann::ordered_json::parse(tools)));
  return tokenizer_.encode(render_text(messages, true, jinja::Value::dict(std::move(extra))));
}

}  // namespace nf::tokenizer
