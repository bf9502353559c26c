// `nanoformer generate` for an encoder-decoder model: greedy or beam search over source ids
// (seq2seq_generate.h).
#include "seq2seq_generate.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "nanoformer/core/error.h"
#include "nanoformer/infer/prompt_ids.h"
#include "nanoformer/infer/seq2seq.h"

namespace nf::cli {
namespace {

constexpr const char* kSeq2SeqFlags[] = {"--num-beams", "--length-penalty", "--decoder-start"};
constexpr const char* kSamplingFlags[] = {"--temperature", "--top-k", "--top-p", "--min-p", "--repetition-penalty",
                                          "--frequency-penalty", "--presence-penalty", "--seed", "--stop"};
constexpr const char* kDecoderOnlyFlags[] = {"--context", "--tokenizer", "--bos", "--cache-type", "--lookup-ngram",
                                              "--draft-max", "--draft-min", "--draft", "--draft-cost", "--draft-p-min"};

}  // namespace

void add_seq2seq_flags(CLI::App& cmd, Seq2SeqFlags& f) {
  cmd.add_option("--num-beams", f.num_beams, "Encoder-decoder models: beam search with this many beams (1 = greedy)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd.add_option("--length-penalty", f.length_penalty,
                 "Encoder-decoder beam search: a hypothesis scores sum log p / length^X (> 0 favours longer ones)")
      ->capture_default_str();
  cmd.add_option("--decoder-start", f.decoder_start, "Encoder-decoder models: the id the target starts from")
      ->capture_default_str();
}

void refuse_seq2seq_flags(const CLI::App& cmd) {
  for (const char* flag : kSeq2SeqFlags)
    NF_CHECK(cmd.count(flag) == 0, flag, " is for encoder-decoder models (beam search over a source); this model is a "
             "decoder-only language model");
}

void run_seq2seq_generate(models::EncoderDecoder& model, const GenerationFlags& flags, const Seq2SeqFlags& seq2seq,
                          const Seq2SeqPrompt& prompt, const CLI::App& cmd) {
  NF_CHECK(prompt.ids && prompt.text.empty(), "an encoder-decoder model generates from source ids: give --ids and "
           "--prompt-ids \"1 2 3\" (the source); the target ids are printed");
  NF_CHECK(!prompt.ids_text.empty(), "--prompt-ids: an encoder-decoder model needs the source ids");
  for (const char* flag : kSamplingFlags)
    NF_CHECK(cmd.count(flag) == 0, flag, " is for sampling; an encoder-decoder model decodes greedily or by beam "
             "search (--num-beams)");
  for (const char* flag : kDecoderOnlyFlags)
    NF_CHECK(cmd.count(flag) == 0, flag, " is for decoder-only language models; an encoder-decoder model takes source "
             "ids (--prompt-ids) and prints target ids");
  NF_CHECK(flags.stop.eos_ids.size() <= 1, "--eos: an encoder-decoder model takes one end-of-sequence id, got ",
           flags.stop.eos_ids.size());
  const std::vector<int64_t> src = infer::parse_prompt_ids(prompt.ids_text, model.config().src_vocab_size);
  infer::Seq2SeqOptions options{.decoder_start_id = seq2seq.decoder_start,
                                .eos_id = {},
                                .max_new_tokens = cmd.count("--max-new-tokens") > 0
                                                      ? flags.stop.max_new_tokens
                                                      : std::min(flags.stop.max_new_tokens, model.config().max_seq_len),
                                .num_beams = seq2seq.num_beams,
                                .length_penalty = seq2seq.length_penalty};
  if (!flags.stop.eos_ids.empty()) options.eos_id = flags.stop.eos_ids[0];
  const auto begin = std::chrono::steady_clock::now();
  const infer::Hypothesis best = infer::beam_search(model, src, options)[0];
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  for (const int64_t id : best.tokens) std::printf("%lld ", static_cast<long long>(id));
  std::printf("\n");
  std::fprintf(stderr, "[source: %zu tokens; generated: %zu tokens, %.1f tokens/s; beams: %lld, score %.4f]\n",
               src.size(), best.tokens.size(), static_cast<double>(best.tokens.size()) / seconds,
               static_cast<long long>(seq2seq.num_beams), best.score);
}

}  // namespace nf::cli
