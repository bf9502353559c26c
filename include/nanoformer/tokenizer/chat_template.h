#pragma once
// Chat templates: a conversation (system / user / assistant messages) rendered to token ids, with
// a per-token mask of the tokens a supervised fine-tuning run trains on (the assistant's part).
// The same rendering serves training (render) and a chat at inference time (render_for_completion).
//
// "chatml" is MiniMind2's template (its tokenizer_config.json chat_template):
//   <|im_start|>system\n{system}<|im_end|>\n            (default system "You are a helpful assistant"
//   <|im_start|>user\n{user}<|im_end|>\n                 when the first message is not a system one;
//   <|im_start|>assistant\n{assistant}<|im_end|>\n       a later system message is a turn of its own)
// The text is encoded in one call, as `apply_chat_template(..., tokenize=True)` does, so the ids
// equal Hugging Face's. The mask is MiniMind's SFTDataset._generate_loss_mask: after each run of
// the tokens of "<|im_start|>assistant", one token (the "\n") is skipped, and from there every token
// up to and including the next <|im_end|> AND the one token after it (the "\n" that closes the
// turn) is trained on; an unclosed turn is trained on to the end.
//
// "nanochat" is nanochat's render_conversation: <|bos|>, then <|user_start|>{user}<|user_end|> and
// <|assistant_start|>{assistant}<|assistant_end|> alternating, user first; a leading system
// message is merged into the first user message as system + "\n\n" + user. Contents are encoded
// without looking for special tokens (tiktoken's encode_ordinary); the mask covers the assistant's
// content tokens and its <|assistant_end|>.
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "nanoformer/tokenizer/tokenizer.h"

namespace nf::tokenizer {

struct ChatMessage {
  std::string role;  // "system", "user" or "assistant" ("tool" too for Jinja templates)
  std::string content;
  // assistant: the calls it made, a JSON array as OpenAI's or MiniMind's (each {"id", "type", "function":
  // {"name", "arguments"}} or {"name", "arguments"}; arguments an object, or a string the template renders
  // as it renders a string); empty: none
  std::string tool_calls = {};
  std::string tool_call_id = {};  // tool: the id of the call whose result this is
  // assistant: its thinking, as MiniMind's and Qwen3's templates read message.reasoning_content (rendered
  // inside <think>...</think>); nullopt: the message has none (the template may split it out of the content)
  std::optional<std::string> reasoning_content = {};
};

struct RenderedChat {
  std::vector<TokenId> ids;
  std::vector<uint8_t> trained;  // trained[i] = 1: ids[i] is a target the loss is taken on
};

class ChatTemplate {
 public:
  virtual ~ChatTemplate() = default;
  virtual std::string_view name() const = 0;
  // The whole conversation with its mask. `tools`: a JSON array of OpenAI tools, as transformers'
  // apply_chat_template(tools=...) takes them (empty: none). Throws nf::Error naming the message
  // (0-based index) with an unknown role or a role out of the order the template requires, and
  // naming the template when it cannot render what it is given: only Jinja templates render tools,
  // tool calls, tool messages and reasoning_content.
  RenderedChat render(std::span<const ChatMessage> messages, std::string_view tools = {}) const;
  // The conversation so far followed by the opening of the assistant's reply, for generation.
  std::vector<TokenId> render_for_completion(std::span<const ChatMessage> messages, std::string_view tools = {}) const;
  // The token that ends an assistant turn: generation stops at it; SFT batches pad with it.
  virtual TokenId end_token() const = 0;

 protected:
  // Whether the template renders tools, tool calls, tool_call_id and reasoning_content (a Jinja
  // template does): render and render_for_completion refuse them to the others.
  virtual bool renders_tools() const { return false; }
  // render and render_for_completion once the checks above have passed.
  virtual RenderedChat render_chat(std::span<const ChatMessage> messages, std::string_view tools) const = 0;
  virtual std::vector<TokenId> render_prompt(std::span<const ChatMessage> messages, std::string_view tools) const = 0;

 private:
  void check_renderable(std::span<const ChatMessage> messages, std::string_view tools) const;
};

// The template `name` ("chatml" or "nanochat", a template file's path, or the path of a Hugging Face
// tokenizer_config.json or a GGUF file: its Jinja chat_template, hf_chat_template.h) over a tokenizer that
// must have its special tokens as single tokens, and must outlive the template; throws nf::Error
// naming an unknown template or the missing special token.
std::unique_ptr<ChatTemplate> make_chat_template(std::string_view name, const Tokenizer& tokenizer);

// Template files, for other models: a JSON object of strings
//   {"name": "llama3", "bos": "<|begin_of_text|>",
//    "system": "<|start_header_id|>system<|end_header_id|>\n\n{content}<|eot_id|>",
//    "user": "<|start_header_id|>user<|end_header_id|>\n\n{content}<|eot_id|>",
//    "assistant": "<|start_header_id|>assistant<|end_header_id|>\n\n{content}<|eot_id|>",
//    "default_system": "", "end": "<|eot_id|>"}
// renders bos, then the default system turn when there is one and the first message is not a
// system message, then each message in its role's format; for completion, the assistant format up
// to {content}. Each piece is encoded on its own, the contents without special tokens
// (encode_ordinary); the mask trains the assistant's content and the rest of its format (its end
// token). "end" must be a single special token: generation stops at it. Unknown keys, a format
// without {content} or a missing key are errors naming the file.
std::unique_ptr<ChatTemplate> make_chat_template_from_file(const std::string& path, const Tokenizer& tokenizer);

// The built-in template a tokenizer's special tokens call for: "chatml" with <|im_start|>,
// "nanochat" with <|assistant_start|>; empty when neither.
std::string detect_chat_template(const Tokenizer& tokenizer);

// The file holding the Jinja template of the tokenizer read from `tokenizer_path`: the
// tokenizer_config.json beside a tokenizer.json when it has a chat_template (or a
// chat_template.jinja is beside it), a GGUF file itself when it has tokenizer.chat_template; empty
// when there is none.
std::string hf_chat_template_file(const std::string& tokenizer_path);

// The template to use when none is named: hf_chat_template_file's, else detect_chat_template's;
// empty when there is none.
std::string default_chat_template(const Tokenizer& tokenizer, const std::string& tokenizer_path);

// The id of a special token that must encode as exactly that one id; throws nf::Error naming the
// token (and `purpose`) when the tokenizer lacks it.
TokenId require_special_token(const Tokenizer& tokenizer, std::string_view content, std::string_view purpose);

}  // namespace nf::tokenizer
