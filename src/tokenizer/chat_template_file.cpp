// A chat template read from a JSON file (chat_template.h, "Template files").
#include <filesystem>

#include "nanoformer/core/error.h"
#include "nanoformer/tokenizer/chat_template.h"
#include "util/json_input.h"

namespace nf::tokenizer {
namespace {

// One role's format split at "{content}": prefix + content + suffix.
struct RoleFormat {
  std::string prefix, suffix;
};

class FileTemplate final : public ChatTemplate {
 public:
  FileTemplate(const std::string& path, const Tokenizer& tokenizer) : tokenizer_(tokenizer) {
    const auto doc = util::parse_json(read_file(path), path + ": ");
    NF_CHECK(doc.is_object(), path, ": a chat template file is a JSON object");
    auto string_key = [&](const char* key, bool required) -> std::string {
      const auto it = doc.find(key);
      NF_CHECK(it != doc.end() || !required, path, ": no \"", key, "\" key");
      if (it == doc.end()) return {};
      NF_CHECK(it->is_string(), path, ": \"", key, "\" is not a string but ", util::json_excerpt(*it));
      return it->get<std::string>();
    };
    for (const auto& [key, value] : doc.items())
      NF_CHECK(key == "name" || key == "bos" || key == "system" || key == "user" || key == "assistant" ||
                   key == "default_system" || key == "end",
               path, ": unknown key \"", key, "\" (known: name, bos, system, user, assistant, default_system, end)");
    name_ = string_key("name", false);
    if (name_.empty()) name_ = std::filesystem::path(path).stem().string();
    bos_ = string_key("bos", false);
    default_system_ = string_key("default_system", false);
    for (const char* role : {"system", "user", "assistant"}) {
      const std::string format = string_key(role, true);
      const size_t at = format.find("{content}");
      NF_CHECK(at != std::string::npos, path, ": \"", role, "\" has no {content}: ", util::shorten(format));
      formats_[index(role)] = {format.substr(0, at), format.substr(at + 9)};
    }
    const std::string end = string_key("end", true);
    end_ = require_special_token(tokenizer, end, path + "'s \"end\"");
  }

  std::string_view name() const override { return name_; }
  TokenId end_token() const override { return end_; }

  RenderedChat render_chat(std::span<const ChatMessage> messages, std::string_view) const override {
    RenderedChat out;
    auto add = [&](std::string_view text, uint8_t trained, bool ordinary) {
      if (ordinary)
        tokenizer_.encode_ordinary(text, out.ids);
      else
        tokenizer_.encode(text, out.ids);
      out.trained.resize(out.ids.size(), trained);
    };
    add(bos_, 0, false);
    if (!default_system_.empty() && (messages.empty() || messages.front().role != "system"))
      add(formats_[0].prefix + default_system_ + formats_[0].suffix, 0, false);
    for (size_t i = 0; i < messages.size(); ++i) {
      const ChatMessage& m = messages[i];
      NF_CHECK(m.role == "system" || m.role == "user" || m.role == "assistant", "message ", i, ": unknown role '",
               m.role, "' (the ", name_, " template knows system, user and assistant)");
      const RoleFormat& f = formats_[index(m.role)];
      const uint8_t trained = m.role == "assistant";
      add(f.prefix, 0, false);
      add(m.content, trained, true);  // a message's text never turns into special tokens
      add(f.suffix, trained, false);
    }
    return out;
  }

  std::vector<TokenId> render_prompt(std::span<const ChatMessage> messages, std::string_view tools) const override {
    std::vector<TokenId> ids = render_chat(messages, tools).ids;
    tokenizer_.encode(formats_[2].prefix, ids);
    return ids;
  }

 private:
  static size_t index(std::string_view role) { return role == "system" ? 0 : role == "user" ? 1 : 2; }

  const Tokenizer& tokenizer_;
  std::string name_, bos_, default_system_;
  RoleFormat formats_[3];
  TokenId end_ = 0;
};

}  // namespace

std::unique_ptr<ChatTemplate> make_chat_template_from_file(const std::string& path, const Tokenizer& tokenizer) {
  return std::make_unique<FileTemplate>(path, tokenizer);
}

}  // namespace nf::tokenizer
