#pragma once
// A Hugging Face chat template (the Jinja `chat_template` of tokenizer_config.json, the
// chat_template.jinja file transformers writes beside it, or a GGUF file's tokenizer.chat_template,
// which llama.cpp renders with the file's bos / eos tokens) as a ChatTemplate: the text is what
// `tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=...)` gives, the
// ids are that text encoded in one call (as apply_chat_template(tokenize=True)).
//
// The template sees messages (role/content dicts, with tool_calls, tool_call_id and
// reasoning_content when a message has them), add_generation_prompt, tools and documents (None
// unless given), and the tokenizer_config.json's special tokens (bos_token, eos_token,
// unk_token, pad_token, ...), as transformers passes them.
//
// The SFT mask, for MiniMind's template (recognised as one whose bos_token and eos_token are added
// tokens, whose generation prompt is bos_token + "assistant\n" followed by the opening of the reply,
// MiniMind's closed empty <think> block, and whose reply closes with eos_token + "\n"): MiniMind's
// SFTDataset.generate_labels over the ids (jingyaogong/minimind@d65ef2c dataset/lm_dataset.py): every
// token from after each run of the ids of bos_token + "assistant\n" through the next run of the ids of
// eos_token + "\n" (or the end) is trained on: the reply with its <think> block, its tool calls, its
// end token and the newline after it.
// For any other template: for each assistant message i, the conversation before it is rendered with
// the generation prompt (and the same tools); the assistant's part of the whole conversation's text
// starts where the two part (the prompt's end, or inside the prompt when a reply opens otherwise) and
// ends with the first end token (below) after that (or the text's end). The tokens that start inside
// a part are trained on. A template whose whole text does not begin with the conversation before
// message i (rendered without the prompt) cannot be masked: an error naming the message.
// Either way system, user and tool messages (and the tools the template writes) are not trained on.
//
// The end token: the first added token that follows the assistant's content in a rendered
// [user, assistant] exchange (tokenizer_config.json's eos_token when it is there), e.g.
// <|im_end|> for ChatML templates, <|eot_id|> for Llama 3.
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "nanoformer/tokenizer/chat_template.h"
#include "nanoformer/jinja/template.h"

namespace nf::tokenizer {

class HfChatTemplate final : public ChatTemplate {
 public:
  // `special_tokens`: ("bos_token", "<s>"), ... as the template sees them. Throws nf::Error naming
  // `name` when the template does not parse (a construct outside the subset: jinja.h), or a
  // [user, assistant] exchange does not render or has no end token.
  HfChatTemplate(std::string name, std::string_view source, std::vector<std::pair<std::string, std::string>> special_tokens,
                 const Tokenizer& tokenizer);

  // What a file holds: its name for messages, the Jinja source, the special tokens.
  struct Source {
    std::string name, text;
    std::vector<std::pair<std::string, std::string>> special_tokens;
  };
  // The template of a tokenizer_config.json (from chat_template.jinja beside it when there is one)
  // or of a GGUF file (tokenizer.chat_template; bos_token, eos_token, unk_token, sep_token and
  // pad_token are the texts of its tokenizer.ggml.*_token_id tokens); throws nf::Error naming the
  // file and key.
  static Source read_source(const std::string& path);
  // read_source's template over `tokenizer`.
  static std::unique_ptr<HfChatTemplate> from_file(const std::string& path, const Tokenizer& tokenizer);

  std::string_view name() const override { return name_; }
  TokenId end_token() const override { return end_; }

  // The template's text; `tools` as render's (empty: none, the template's tools is None). Throws
  // nf::Error when tools is not a JSON array or a message's tool_calls not JSON.
  std::string render_text(std::span<const ChatMessage> messages, bool add_generation_prompt,
                          std::string_view tools = {}) const;

 protected:
  bool renders_tools() const override { return true; }
  RenderedChat render_chat(std::span<const ChatMessage> messages, std::string_view tools) const override;
  std::vector<TokenId> render_prompt(std::span<const ChatMessage> messages, std::string_view tools) const override;

 private:
  std::string render_text(std::span<const ChatMessage> messages, bool add_generation_prompt,
                          const jinja::Value& tools) const;

  std::string name_;
  jinja::Template template_;
  std::vector<std::pair<std::string, std::string>> special_tokens_;
  const Tokenizer& tokenizer_;
  TokenId end_ = 0;
  std::string end_text_;
  std::vector<TokenId> minimind_open_, minimind_close_;  // MiniMind's rule's bos_id and eos_id; empty: not its template
};

}  // namespace nf::tokenizer
