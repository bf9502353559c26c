// The model, tokenizer, sampling and stopping flags of `generate` and `chat` (generation_options.h).
#include "generation_options.h"

#include <cstdio>
#include <sstream>

#include "nanoformer/core/error.h"
#include "nanoformer/formats/model_io.h"
#include "nanoformer/infer/draft_model.h"

namespace nf::cli {

void add_generation_flags(CLI::App& cmd, GenerationFlags& f) {
  cmd.add_option("--model,-m", f.model,
                 "Model: a checkpoint, a Hugging Face model folder, a GGUF file, a llama2c .bin or a preset")
      ->required();
  cmd.add_option("--tokenizer,-t", f.tokenizer,
                 "tokenizer.json, character vocabulary or GGUF file (default: a GGUF model's own, else "
                 "tokenizer.json beside the model)");
  cmd.add_option("--context", f.context, "Tokens the KV cache holds (default: the model's max_seq_len)")
      ->check(CLI::NonNegativeNumber);
  cmd.add_option("--keep", f.keep,
                 "Past the context, the tokens at its start that stay; the oldest half of the rest is dropped")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  add_cache_type_flag(cmd, f.cache_type);
  cmd.add_flag("--greedy", f.greedy, "Always the most likely token (the same as --temperature 0)");
  cmd.add_option("--temperature", f.sampler.temperature, "Sampling temperature; 0 = greedy")->capture_default_str();
  cmd.add_option("--top-k", f.sampler.top_k, "Keep the k most likely tokens (0 = off)")->capture_default_str();
  cmd.add_option("--top-p", f.sampler.top_p, "Nucleus: keep the most likely tokens up to this probability (1 = off)")
      ->capture_default_str();
  cmd.add_option("--min-p", f.sampler.min_p, "Keep tokens at least this fraction as likely as the best (0 = off)")
      ->capture_default_str();
  cmd.add_option("--repetition-penalty", f.sampler.repetition_penalty, "CTRL's penalty on tokens seen (1 = off)")
      ->capture_default_str();
  cmd.add_option("--frequency-penalty", f.sampler.frequency_penalty,
                 "Subtracted from a token's logit per time it was generated, in [-2, 2] (0 = off)")
      ->capture_default_str();
  cmd.add_option("--presence-penalty", f.sampler.presence_penalty,
                 "Subtracted from the logit of every token generated so far, in [-2, 2] (0 = off)")
      ->capture_default_str();
  cmd.add_option("--seed", f.sampler.seed, "Seed of the sampler: the same seed gives the same text")->capture_default_str();
  cmd.add_option("--max-new-tokens,-n", f.stop.max_new_tokens, "Stop after this many new tokens")->capture_default_str();
  cmd.add_option("--stop", f.stop.stop_strings, "Stop when the text contains this string (repeatable; not printed)");
  cmd.add_option("--eos", f.stop.eos_ids,
                 "Stop at this token id (repeatable; default: the tokenizer's end-of-text token and a GGUF's "
                 "eos / eot ids, or the chat template's end of turn)");
  cmd.add_option("--lookup-ngram", f.speculative.lookup_ngram,
                 "Speculative decoding by prompt lookup: draft the tokens that followed the last N (down to 1) tokens "
                 "where they occurred before, checked in one forward; the same tokens, sooner (0 = off)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  add_draft_flags(cmd, f.draft, f.speculative);
  add_tool_flags(cmd, f.tools);
}

void add_tool_flags(CLI::App& cmd, infer::ToolOptions& f) {
  cmd.add_option("--tools", f.tools,
                 "Tools the model calls while it decodes: calculator. A nanochat model's is nanochat's "
                 "(<|python_start|>expr<|python_end|> answered with <|output_start|>result<|output_end|>, as its engine "
                 "does); a chat-template model's is called in the Hermes syntax (<tool_call>{\"name\": \"calculator\", "
                 "\"arguments\": {\"expression\": \"12*34\"}}</tool_call>), answered as a tool message of its template")
      ->check(CLI::IsMember(infer::builtin_tool_names()));
  cmd.add_option("--tool-command", f.commands,
                 "A tool NAME run as PROGRAM (NAME=PROGRAM [ARGS...], split at spaces, no shell) with the call's JSON "
                 "on its standard input, its standard output the answer (repeatable; chat-template models). Runs what "
                 "you give it for any call the model makes: off unless given");
  cmd.add_option("--tool-timeout", f.timeout_ms, "The command tool's time limit in milliseconds; past it, killed")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd.add_option("--tool-output-limit", f.output_limit, "The command tool's output limit in bytes; past it, killed")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd.add_option("--max-tool-turns", f.max_turns, "Tool turns per answer at most; later calls are not run")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
}

int64_t report_tool_turn(const infer::ToolTurn& turn) {
  if (!turn.ran)
    std::fprintf(stderr, "\n[--max-tool-turns reached: %zu tool call(s) not run]\n", turn.calls.size());
  return turn.forced;
}

void add_draft_flags(CLI::App& cmd, std::string& draft, infer::SpeculativeConfig& speculative) {
  cmd.add_option("--draft,--model-draft", draft,
                 "Speculative decoding with a draft model: a smaller model with the same vocabulary (any model file, "
                 "GGUF included) proposes up to --draft-max tokens, checked by the model in one forward; the target's "
                 "tokens (greedy) or distribution (sampling), sooner. Not with --lookup-ngram");
  cmd.add_option("--draft-max", speculative.draft_max, "With --lookup-ngram or --draft: tokens drafted at most per step")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd.add_option("--draft-min", speculative.draft_min,
                 "With --lookup-ngram or --draft: a shorter draft is not checked (a plain step instead)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd.add_option("--draft-p-min", speculative.draft_p_min,
                 "With --draft: a draft ends before a token the draft model gives less than this probability (its "
                 "top-10 softmax, as llama.cpp's --draft-p-min; 0 = off)")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  cmd.add_option("--draft-cost", speculative.draft_cost,
                 "With --draft: a forward of the draft model in forwards of the model, by which the backoff judges "
                 "whether a draft of k tokens pays (default: the ratio of their weights' bytes; 0: draft whenever the "
                 "window allows, as prompt lookup)");
}

std::shared_ptr<models::DecoderLM> load_draft_model(const GenerationFlags& f, const models::DecoderLM& model,
                                                    int64_t context) {
  if (f.draft.empty()) return nullptr;
  auto draft = models::model_as<models::DecoderLM>(formats::load_model(f.draft), f.draft);
  infer::check_draft_model(model, f.model, *draft, f.draft, context);
  draft->eval();
  return draft;
}

void add_cache_type_flag(CLI::App& cmd, std::string& cache_type) {
  cmd.add_option("--cache-type", cache_type,
                 "How the KV cache stores keys and values: f32, f16, bf16, q8_0 or q4_0 (3.8x and 7.1x smaller than "
                 "f32; head_dim a multiple of 32)")
      ->capture_default_str();
}

infer::SamplerConfig sampler_config(const GenerationFlags& f, const LoadedModel& loaded) {
  infer::SamplerConfig c = f.sampler;
  if (f.greedy) c.temperature = 0;
  if (loaded.tokenizer) c.vocab_limit = static_cast<int64_t>(loaded.tokenizer->vocab_size());
  c.validate();
  return c;
}

void check_generation_flags(const GenerationFlags& f) {
  f.stop.validate();
  f.speculative.validate();
  NF_CHECK(f.draft.empty() || f.speculative.lookup_ngram == 0, "--draft and --lookup-ngram ",
           f.speculative.lookup_ngram, " are two ways to draft: give one");
  (void)sampler_config(f, LoadedModel{});  // validates the sampling flags
  (void)nn::kv_cache_type_from_name(f.cache_type);
}

LoadedModel load_model_and_tokenizer(const GenerationFlags& f, bool required) {
  return load_model_and_tokenizer(f, required, formats::load_model(f.model));
}

LoadedModel load_model_and_tokenizer(const GenerationFlags& f, bool required, const std::shared_ptr<models::Model>& model) {
  return infer::with_tokenizer(model, f.model, f.tokenizer, required);
}

}  // namespace nf::cli
