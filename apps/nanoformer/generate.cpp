// `nanoformer generate --model MODEL --prompt TEXT`: continues a prompt with a language model,
// printing text as the tokens are decided (never half a UTF-8 character); with --ids the prompt is
// token ids (`--prompt-ids "1 2 3"`, BOS alone when absent) and the new ids are printed, for a
// model without a tokenizer. Prompt and generation tokens/s go to stderr at the end. An
// encoder-decoder model takes its own path (seq2seq_generate.h).
#include <cstdio>
#include <memory>
#include <string>

#include "command.h"
#include "generation_options.h"
#include "nanoformer/formats/model_io.h"
#include "nanoformer/infer/prompt_ids.h"
#include "nanoformer/infer/session.h"
#include "nanoformer/infer/text_streamer.h"
#include "nanoformer/tokenizer/jsonl.h"
#include "seq2seq_generate.h"

namespace nf::cli {
namespace {

struct GenerateArgs {
  GenerationFlags flags;
  std::string prompt, prompt_ids;
  bool ids = false;
  int64_t bos = 1;
  Seq2SeqFlags seq2seq;
};

void report(const infer::GenerationResult& r, const nn::KVCache& cache, const infer::SpeculativeConfig& speculative) {
  std::fprintf(stderr, "\n[prompt: %lld tokens, %.1f tokens/s; generated: %zu tokens, %.1f tokens/s; stopped: %s; "
               "KV cache: %s, %.1f KiB]\n",
               static_cast<long long>(r.prompt_tokens), r.prefill_tokens_per_s(), r.tokens.size(),
               r.decode_tokens_per_s(), infer::stop_reason_name(r.reason), quant_type_name(cache.shape().cache_type),
               static_cast<double>(cache.bytes()) / 1024);
  if (r.draft_tokens > 0 || speculative.enabled())
    std::fprintf(stderr, "[%s: %lld of %lld drafted tokens accepted (%.1f %%)]\n",
                 speculative.draft_model != nullptr ? "draft" : "lookup",
                 static_cast<long long>(r.accepted_tokens), static_cast<long long>(r.draft_tokens),
                 100 * r.acceptance_rate());
}

void run_generate(const GenerateArgs& a, const CLI::App& cmd) {
  check_generation_flags(a.flags);
  const std::shared_ptr<models::Model> model = formats::load_model(a.flags.model);
  if (auto seq2seq = std::dynamic_pointer_cast<models::EncoderDecoder>(model))
    return run_seq2seq_generate(*seq2seq, a.flags, a.seq2seq, {a.ids, a.prompt, a.prompt_ids}, cmd);
  refuse_seq2seq_flags(cmd);
  NF_CHECK(cmd.count("--bos") == 0 || (a.ids && a.prompt_ids.empty()),
           "--bos is the id to start from with --ids and no --prompt-ids");
  LoadedModel loaded = load_model_and_tokenizer(a.flags, !a.ids, model);
  const int64_t vocab = loaded.model->config().vocab_size;
  infer::Sampler sampler(sampler_config(a.flags, loaded));
  infer::StopCriteria stop = a.flags.stop;
  infer::Session session(*loaded.model, a.flags.context, {.keep = a.flags.keep},
                         nn::kv_cache_type_from_name(a.flags.cache_type));
  const std::shared_ptr<models::DecoderLM> draft = load_draft_model(a.flags, *loaded.model, session.max_len());
  infer::SpeculativeConfig speculative = a.flags.speculative;
  speculative.draft_model = draft.get();

  if (a.ids) {
    NF_CHECK(!a.flags.tools.any(), "--tools and --tool-command need the model's tokenizer: not with --ids");
    NF_CHECK(a.prompt.empty(), "--prompt is text: with --ids give the prompt as --prompt-ids \"1 2 3\"");
    const std::vector<int64_t> prompt =
        a.prompt_ids.empty() ? std::vector<int64_t>{a.bos} : infer::parse_prompt_ids(a.prompt_ids, vocab);
    infer::check_token_ids(prompt, vocab, "--bos");
    const auto result = session.generate(prompt, sampler, stop, [](int64_t id) {
      std::printf("%lld ", static_cast<long long>(id));
      std::fflush(stdout);
      return true;
    }, nullptr, speculative);
    std::printf("\n");
    report(result, session.cache(), speculative);
    return;
  }
  NF_CHECK(a.prompt_ids.empty(), "--prompt-ids needs --ids (the new tokens are then printed as ids too)");
  const tokenizer::Tokenizer& tok = *loaded.tokenizer;
  if (stop.eos_ids.empty()) stop.eos_ids = default_end_ids(loaded);
  const auto encoded = tok.encode(a.prompt);
  NF_CHECK(!encoded.empty(), "--prompt: the prompt is empty; give some text, or --ids for BOS alone");
  std::vector<int64_t> prompt(encoded.begin(), encoded.end());
  if (loaded.prompt_bos) prompt.insert(prompt.begin(), *loaded.prompt_bos);  // as llama.cpp tokenises it
  infer::TextStreamer streamer(tok, stop);
  // a chat-template model's tools answer through its template (the prompt is the user's to format)
  std::unique_ptr<tokenizer::ChatTemplate> chat_template;
  if (a.flags.tools.any() && !tok.token_id("<|python_start|>")) {
    const std::string name = tokenizer::default_chat_template(tok, loaded.tokenizer_path);
    if (!name.empty()) chat_template = tokenizer::make_chat_template(name, tok);
  }
  const std::unique_ptr<infer::ToolUse> tools = infer::make_tool_use(a.flags.tools, tok, chat_template.get());
  int64_t forced = 0;  // a tool turn's tokens still to come: printed as they are (their end of turn ends nothing)
  if (tools) tools->on_turn = [&](const infer::ToolTurn& turn) { forced = report_tool_turn(turn); };
  std::printf("%s", a.prompt.c_str());
  const auto result = session.generate(prompt, sampler, stop, [&](int64_t id) {
    if (forced > 0) {
      --forced;
      std::printf("%s", tok.decode(std::vector<tokenizer::TokenId>{static_cast<tokenizer::TokenId>(id)}).c_str());
      std::fflush(stdout);
      return true;
    }
    std::printf("%s", streamer.push(id).c_str());
    std::fflush(stdout);
    return !streamer.stopped();
  }, nullptr, speculative, tools.get());
  std::printf("%s\n", streamer.finish().c_str());
  report(result, session.cache(), speculative);
}

}  // namespace

void add_generate_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "generate",
      "Continue a prompt with a language model (KV cache; text streams as it is decided).\n"
      "  nanoformer generate -m runs/chars/ckpt_00002000.safetensors -t chars.json --prompt \"ROMEO:\" -n 200\n"
      "  nanoformer generate -m gpt2-folder --prompt \"Hello\" --greedy\n"
      "  nanoformer generate -m stories260K.bin --ids --prompt-ids \"1 403\" --temperature 0\n"
      "  nanoformer generate -m translator.safetensors --ids --prompt-ids \"5 8 33\" --num-beams 4 --eos 2\n"
      "Prompt and generation tokens/s are printed to stderr at the end.");
  auto a = std::make_shared<GenerateArgs>();
  add_generation_flags(*cmd, a->flags);
  cmd->add_option("--prompt,-p", a->prompt, "The text to continue");
  cmd->add_flag("--ids", a->ids, "Prompt and output as token ids (a model without a tokenizer)");
  cmd->add_option("--prompt-ids", a->prompt_ids, "With --ids: the prompt's ids, \"1 2 3\" (default: BOS alone)");
  cmd->add_option("--bos", a->bos, "With --ids and no --prompt-ids: the BOS id to start from")->capture_default_str();
  add_seq2seq_flags(*cmd, a->seq2seq);
  cmd->callback([a, cmd] { run_generate(*a, *cmd); });
}

}  // namespace nf::cli
