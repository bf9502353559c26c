// `nanoformer chat --model MODEL`: an interactive conversation that keeps the KV cache across turns
// (each turn prefills only what is new), rendered by the model's chat template: its folder's Jinja
// chat_template (tokenizer_config.json) or a GGUF's, else ChatML (MiniMind's) or nanochat's, told by the
// tokenizer's special tokens, or --chat-template NAME|FILE.
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "command.h"
#include "generation_options.h"
#include "nanoformer/infer/session.h"
#include "nanoformer/infer/text_streamer.h"
#include "nanoformer/tokenizer/chat_template.h"

namespace nf::cli {
namespace {

struct ChatArgs {
  GenerationFlags flags;
  std::string chat_template, system;
  bool stats = false;
};

constexpr const char* kHelp = "commands: /reset (forget the conversation), /system TEXT (a new system prompt, and reset), /quit";

void run_chat(const ChatArgs& a) {
  check_generation_flags(a.flags);
  LoadedModel loaded = load_model_and_tokenizer(a.flags, /*required=*/true);
  const tokenizer::Tokenizer& tok = *loaded.tokenizer;
  std::string template_name =
      a.chat_template.empty() ? tokenizer::default_chat_template(tok, loaded.tokenizer_path) : a.chat_template;
  NF_CHECK(!template_name.empty(), "tokenizer ", loaded.tokenizer_path,
           " has no chat_template in a tokenizer_config.json beside it and neither ChatML's nor nanochat's special tokens:"
           " give --chat-template FILE (docs/inference.md)");
  const auto chat_template = tokenizer::make_chat_template(template_name, tok);
  infer::Sampler sampler(sampler_config(a.flags, loaded));
  infer::StopCriteria stop = a.flags.stop;
  if (stop.eos_ids.empty()) stop.eos_ids.push_back(chat_template->end_token());
  infer::Session session(*loaded.model, a.flags.context, {.keep = a.flags.keep},
                         nn::kv_cache_type_from_name(a.flags.cache_type));
  const std::shared_ptr<models::DecoderLM> draft = load_draft_model(a.flags, *loaded.model, session.max_len());
  infer::SpeculativeConfig speculative = a.flags.speculative;
  speculative.draft_model = draft.get();

  std::string system = a.system;
  std::vector<tokenizer::ChatMessage> messages;
  auto start_over = [&] {
    messages.clear();
    if (!system.empty()) messages.push_back({"system", system});
  };
  start_over();
  const std::unique_ptr<infer::ToolUse> tools = infer::make_tool_use(a.flags.tools, tok, chat_template.get());
  std::fprintf(stderr, "nanoformer chat: %s, template %s, context %lld tokens (KV cache %s); %s\n", a.flags.model.c_str(),
               std::string(chat_template->name()).c_str(), static_cast<long long>(session.max_len()),
               quant_type_name(session.cache().shape().cache_type), kHelp);
  for (std::string line;;) {
    std::fprintf(stderr, "> ");
    if (!std::getline(std::cin, line) || line == "/quit" || line == "/exit") break;
    if (line.empty()) continue;
    if (line == "/reset" || line.rfind("/system", 0) == 0) {
      if (line.rfind("/system", 0) == 0) system = line.size() > 8 ? line.substr(8) : "";
      start_over();
      std::fprintf(stderr, "(conversation reset%s)\n", system.empty() ? "" : ", with the new system prompt");
      continue;
    }
    if (line[0] == '/') {
      std::fprintf(stderr, "unknown command %s; %s\n", line.c_str(), kHelp);
      continue;
    }
    messages.push_back({"user", line});
    const auto ids = chat_template->render_for_completion(messages, tools ? tools->offered_tools() : std::string());
    const std::vector<int64_t> sequence(ids.begin(), ids.end());
    if (static_cast<int64_t>(sequence.size()) >= session.max_len()) {
      std::fprintf(stderr, "(the conversation is %zu tokens, the context %lld: /reset to start over)\n",
                   sequence.size(), static_cast<long long>(session.max_len()));
      messages.pop_back();
      continue;
    }
    infer::TextStreamer streamer(tok, stop);
    const std::unique_ptr<infer::ToolUse> turn_tools = tools ? tools->clone() : nullptr;  // each answer its own state
    // a Hermes tool turn: the assistant's text so far and the tool messages join the conversation (as
    // MiniMind's agent rollout keeps them), and the turn's tokens are printed as they are
    int64_t forced = 0;
    size_t said = 0;  // of streamer.text(), what is in the conversation already
    if (turn_tools)
      turn_tools->on_turn = [&](const infer::ToolTurn& turn) {
        forced = report_tool_turn(turn);
        if (!turn.ran) return;
        messages.push_back({"assistant", streamer.text().substr(said)});
        said = streamer.text().size();
        for (size_t i = 0; i < turn.calls.size(); ++i)
          messages.push_back({.role = "tool", .content = turn.answers[i], .tool_calls = {}, .tool_call_id = turn.calls[i].id});
      };
    const auto result = session.generate(sequence, sampler, stop, [&](int64_t id) {
      if (forced > 0) {
        --forced;
        std::printf("%s", tok.decode(std::vector<tokenizer::TokenId>{static_cast<tokenizer::TokenId>(id)}).c_str());
      } else {
        std::printf("%s", streamer.push(id).c_str());
      }
      std::fflush(stdout);
      return !streamer.stopped();
    }, nullptr, speculative, turn_tools.get());
    std::printf("%s\n", streamer.finish().c_str());
    messages.push_back({"assistant", streamer.text().substr(said)});
    if (a.stats)
      std::fprintf(stderr, "[%lld new prompt tokens at %.1f tokens/s; %zu generated at %.1f tokens/s; %s; %lld of %lld "
                   "drafted tokens accepted]\n",
                   static_cast<long long>(result.prompt_tokens), result.prefill_tokens_per_s(), result.tokens.size(),
                   result.decode_tokens_per_s(), infer::stop_reason_name(result.reason),
                   static_cast<long long>(result.accepted_tokens), static_cast<long long>(result.draft_tokens));
  }
}

}  // namespace

void add_chat_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "chat",
      "Talk with a chat model, one line per turn; the KV cache is kept across turns.\n"
      "  nanoformer chat -m minimind2-folder --system \"You are a pirate\"\n"
      "  nanoformer chat -m model.safetensors -t tokenizer.json --chat-template my_template.json\n"
      "In the session: /reset, /system TEXT, /quit.");
  auto a = std::make_shared<ChatArgs>();
  add_generation_flags(*cmd, a->flags);
  cmd->add_option("--chat-template", a->chat_template,
                  "chatml, nanochat, a template file or a tokenizer_config.json (default: the chat_template of the tokenizer_config.json beside tokenizer.json, else told by the tokenizer's special tokens)");
  cmd->add_option("--system", a->system, "The system prompt");
  cmd->add_flag("--stats", a->stats, "Print tokens/s after each answer");
  cmd->callback([a] { run_chat(*a); });
}

}  // namespace nf::cli
