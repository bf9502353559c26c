#include "nanoformer/tokenizer/chat_template.h"

#include <algorithm>
#include <filesystem>

#include "nanoformer/core/error.h"
#include "nanoformer/io/gguf.h"
#include "nanoformer/tokenizer/hf_chat_template.h"
#include "util/json_input.h"

namespace nf::tokenizer {
namespace {

bool starts_at(const std::vector<TokenId>& ids, size_t i, const std::vector<TokenId>& pattern) {
  return i + pattern.size() <= ids.size() && std::equal(pattern.begin(), pattern.end(), ids.begin() + i);
}

void check_known_role(const ChatMessage& m, size_t index, std::string_view template_name) {
  NF_CHECK(m.role == "system" || m.role == "user" || m.role == "assistant", "message ", index, ": unknown role '",
           m.role, "' (the ", template_name, " template knows system, user and assistant)");
}

// MiniMind2's ChatML template (see the header).
class ChatMlTemplate final : public ChatTemplate {
 public:
  explicit ChatMlTemplate(const Tokenizer& tokenizer)
      : tokenizer_(tokenizer),
        im_end_(require_special_token(tokenizer, "<|im_end|>", "the chatml template")),
        assistant_opening_(tokenizer.encode("<|im_start|>assistant")) {
    require_special_token(tokenizer, "<|im_start|>", "the chatml template");
  }

  std::string_view name() const override { return "chatml"; }
  TokenId end_token() const override { return im_end_; }

  RenderedChat render_chat(std::span<const ChatMessage> messages, std::string_view) const override {
    RenderedChat out;
    out.ids = tokenizer_.encode(text(messages));
    out.trained = minimind_loss_mask(out.ids);
    return out;
  }

  std::vector<TokenId> render_prompt(std::span<const ChatMessage> messages, std::string_view) const override {
    return tokenizer_.encode(text(messages) + "<|im_start|>assistant\n");
  }

 private:
  static std::string text(std::span<const ChatMessage> messages) {
    std::string out;
    if (messages.empty() || messages.front().role != "system")
      out += "<|im_start|>system\nYou are a helpful assistant<|im_end|>\n";
    for (size_t i = 0; i < messages.size(); ++i) {
      check_known_role(messages[i], i, "chatml");
      out += "<|im_start|>" + messages[i].role + "\n" + messages[i].content + "<|im_end|>\n";
    }
    return out;
  }

  // MiniMind's SFTDataset._generate_loss_mask, step for step: bos = the ids of
  // "<|im_start|>assistant", eos = [<|im_end|>]; for each bos at i, start = i + |bos| and end = the
  // next eos at or after start (or the end); positions start + 1 .. end + |eos| are trained.
  std::vector<uint8_t> minimind_loss_mask(const std::vector<TokenId>& ids) const {
    const std::vector<TokenId> eos{im_end_};
    std::vector<uint8_t> mask(ids.size(), 0);
    for (size_t i = 0; i < ids.size();) {
      if (!starts_at(ids, i, assistant_opening_)) {
        ++i;
        continue;
      }
      const size_t start = i + assistant_opening_.size();
      size_t end = start;
      while (end < ids.size() && !starts_at(ids, end, eos)) ++end;
      for (size_t j = start + 1; j < std::min(end + eos.size() + 1, ids.size()); ++j) mask[j] = 1;
      i = end < ids.size() ? end + eos.size() : ids.size();
    }
    return mask;
  }

  const Tokenizer& tokenizer_;
  TokenId im_end_;
  std::vector<TokenId> assistant_opening_;
};

// nanochat's render_conversation (see the header).
class NanochatTemplate final : public ChatTemplate {
 public:
  explicit NanochatTemplate(const Tokenizer& tokenizer)
      : tokenizer_(tokenizer),
        bos_(special(tokenizer, "<|bos|>")),
        user_start_(special(tokenizer, "<|user_start|>")),
        user_end_(special(tokenizer, "<|user_end|>")),
        assistant_start_(special(tokenizer, "<|assistant_start|>")),
        assistant_end_(special(tokenizer, "<|assistant_end|>")) {}

  std::string_view name() const override { return "nanochat"; }
  TokenId end_token() const override { return assistant_end_; }

  RenderedChat render_chat(std::span<const ChatMessage> messages, std::string_view) const override {
    RenderedChat out;
    auto add = [&out](TokenId id, uint8_t trained) {
      out.ids.push_back(id);
      out.trained.push_back(trained);
    };
    auto add_text = [&](const std::string& content, uint8_t trained) {
      tokenizer_.encode_ordinary(content, out.ids);
      out.trained.resize(out.ids.size(), trained);
    };
    // A leading system message is merged into the first user message.
    size_t first = 0;
    std::string merged_user;
    if (!messages.empty() && messages[0].role == "system") {
      NF_CHECK(messages.size() > 1 && messages[1].role == "user",
               "message 0: a system message must be followed by a user message (the nanochat template merges them)");
      merged_user = messages[0].content + "\n\n" + messages[1].content;
      first = 1;
    }
    add(bos_, 0);
    for (size_t i = first; i < messages.size(); ++i) {
      const ChatMessage& m = messages[i];
      check_known_role(m, i, "nanochat");
      const char* expected = (i - first) % 2 == 0 ? "user" : "assistant";
      NF_CHECK(m.role == expected, "message ", i, ": role '", m.role, "' where the nanochat template needs '", expected,
               "' (a conversation alternates user and assistant, user first)");
      if (m.role == "user") {
        add(user_start_, 0);
        add_text(i == first && first == 1 ? merged_user : m.content, 0);
        add(user_end_, 0);
      } else {
        add(assistant_start_, 0);
        add_text(m.content, 1);
        add(assistant_end_, 1);
      }
    }
    return out;
  }

  std::vector<TokenId> render_prompt(std::span<const ChatMessage> messages, std::string_view tools) const override {
    std::vector<TokenId> ids = render_chat(messages, tools).ids;
    ids.push_back(assistant_start_);
    return ids;
  }

 private:
  static TokenId special(const Tokenizer& tokenizer, std::string_view content) {
    return require_special_token(tokenizer, content, "the nanochat template");
  }

  const Tokenizer& tokenizer_;
  TokenId bos_, user_start_, user_end_, assistant_start_, assistant_end_;
};

}  // namespace

TokenId require_special_token(const Tokenizer& tokenizer, std::string_view content, std::string_view purpose) {
  const std::optional<TokenId> id = tokenizer.token_id(content);
  NF_CHECK(id, purpose, " needs the special token ", content, ", which the ", tokenizer.kind(),
           " tokenizer does not have");
  NF_CHECK(tokenizer.encode(content) == std::vector<TokenId>{*id}, purpose, " needs the special token ", content,
           ", which the ", tokenizer.kind(), " tokenizer has (id ", *id,
           ") but not as an added token, so text would not be split on it");
  return *id;
}

std::unique_ptr<ChatTemplate> make_chat_template(std::string_view name, const Tokenizer& tokenizer) {
  if (name == "chatml") return std::make_unique<ChatMlTemplate>(tokenizer);
  if (name == "nanochat") return std::make_unique<NanochatTemplate>(tokenizer);
  std::error_code ec;
  const std::filesystem::path path(name);
  if (std::filesystem::is_regular_file(path, ec)) {
    if (io::is_gguf_file(path.string())) return HfChatTemplate::from_file(path.string(), tokenizer);
    // a Hugging Face tokenizer_config.json, whatever the file is called, holds a chat_template
    const auto doc = nlohmann::json::parse(read_file(path.string()), nullptr, /*allow_exceptions=*/false);
    if (doc.is_object() && doc.contains("chat_template")) return HfChatTemplate::from_file(path.string(), tokenizer);
    return make_chat_template_from_file(path.string(), tokenizer);
  }
  NF_FAIL("unknown chat template '", name,
          "' (known: chatml, nanochat, a template file's path, a Hugging Face tokenizer_config.json or a GGUF file)");
}

std::string hf_chat_template_file(const std::string& tokenizer_path) {
  const std::filesystem::path path(tokenizer_path);
  if (io::is_gguf_file(tokenizer_path))
    return io::GGUFFile::open(tokenizer_path).has("tokenizer.chat_template") ? tokenizer_path : std::string();
  if (path.filename() != "tokenizer.json") return {};
  const std::filesystem::path config = path.parent_path() / "tokenizer_config.json";
  std::error_code ec;
  if (!std::filesystem::is_regular_file(config, ec)) return {};
  if (std::filesystem::is_regular_file(path.parent_path() / "chat_template.jinja", ec)) return config.string();
  const auto doc = util::parse_json(read_file(config.string()), config.string() + ": ");
  return doc.is_object() && doc.contains("chat_template") && !doc["chat_template"].is_null() ? config.string()
                                                                                               : std::string();
}

std::string default_chat_template(const Tokenizer& tokenizer, const std::string& tokenizer_path) {
  const std::string own = hf_chat_template_file(tokenizer_path);
  return own.empty() ? detect_chat_template(tokenizer) : own;
}

std::string detect_chat_template(const Tokenizer& tokenizer) {
  if (tokenizer.token_id("<|im_start|>") && tokenizer.token_id("<|im_end|>")) return "chatml";
  if (tokenizer.token_id("<|assistant_start|>")) return "nanochat";
  return {};
}

void ChatTemplate::check_renderable(std::span<const ChatMessage> messages, std::string_view tools) const {
  if (renders_tools()) return;
  NF_CHECK(tools.empty(), "the chat template '", name(), "' cannot render tools (a Hugging Face Jinja template can)");
  for (size_t i = 0; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
    const char* key = !m.tool_calls.empty()                                  ? "tool calls"
                      : !m.tool_call_id.empty()                              ? "a tool_call_id"
                      : m.reasoning_content && !m.reasoning_content->empty() ? "reasoning_content"
                                                                             : nullptr;
    NF_CHECK(!key, "message ", i, ": the chat template '", name(), "' cannot render ", key,
             " (a Hugging Face Jinja template can)");
  }
}

RenderedChat ChatTemplate::render(std::span<const ChatMessage> messages, std::string_view tools) const {
  check_renderable(messages, tools);
  return render_chat(messages, tools);
}

std::vector<TokenId> ChatTemplate::render_for_completion(std::span<const ChatMessage> messages,
                                                         std::string_view tools) const {
  check_renderable(messages, tools);
  return render_prompt(messages, tools);
}

}  // namespace nf::tokenizer
