#pragma once
// `nanoformer generate` with an encoder-decoder model (the transformer-base family): --prompt-ids is
// the source, the output the target ids, by greedy decoding or beam search (infer/seq2seq.h).
#include <CLI/CLI.hpp>
#include <string>

#include "generation_options.h"
#include "nanoformer/models/encoder_decoder.h"

namespace nf::cli {

struct Seq2SeqFlags {
  int64_t num_beams = 1;
  double length_penalty = 1.0;
  int64_t decoder_start = 0;
};

// --num-beams, --length-penalty, --decoder-start.
void add_seq2seq_flags(CLI::App& cmd, Seq2SeqFlags& flags);
// With a decoder-only model: an nf::Error naming the first of those flags given.
void refuse_seq2seq_flags(const CLI::App& cmd);

struct Seq2SeqPrompt {
  bool ids = false;
  std::string text, ids_text;  // --prompt, --prompt-ids
};

// Encodes the source once, decodes greedily (--num-beams 1) or by beam search, prints the target
// ids on stdout and the source and target tokens/s on stderr. Sampling flags are refused.
void run_seq2seq_generate(models::EncoderDecoder& model, const GenerationFlags& flags, const Seq2SeqFlags& seq2seq,
                          const Seq2SeqPrompt& prompt, const CLI::App& cmd);

}  // namespace nf::cli
