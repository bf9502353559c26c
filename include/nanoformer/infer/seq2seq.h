#pragma once
// Generation with an encoder-decoder model (the transformer-base family): the source is encoded
// once (the memory, whose cross-attention keys and values every decoder layer computes once), then
// the decoder runs from a decoder start id with its self-attention KV cache, one token per step.
//
// Greedy: the argmax of each step's logits (the lowest id among equal maxima, as torch.argmax)
// until eos or max_new_tokens, as Hugging Face's generate with do_sample=False, num_beams=1.
//
// Beam search as Hugging Face's generate (transformers' _beam_search) does it, for num_beams N:
//   every step, each running beam b extends by each token v with score s_b + log_softmax(logits_b)_v
//   (f32); the best 2N candidates (over all beams and tokens) are kept, best first;
//   a candidate ending in eos (or reaching max_new_tokens) is finished: among the first N
//   candidates it becomes a hypothesis scored  s / L^length_penalty  (L = its generated tokens,
//   eos included, the decoder start not), and the N best hypotheses are kept;
//   the best N unfinished candidates are the next running beams (the cache rows are reordered by
//   their parent beams: KVCache::select_rows);
//   stop when every candidate is finished (max_new_tokens), or:
//     early_stopping true:   as soon as N hypotheses exist;
//     early_stopping false:  when N hypotheses exist and the best running score divided by
//                            (tokens generated so far)^length_penalty cannot beat the worst one;
//     early_stopping never:  the same, but with L = max_new_tokens when length_penalty > 0 (the
//                            best a running beam could still reach).
//   Hypotheses come back best first. length_penalty > 0 favours longer hypotheses, < 0 shorter.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "nanoformer/models/encoder_decoder.h"

namespace nf::infer {

enum class EarlyStopping { heuristic, on_full_beams, never };  // HF's early_stopping False, True, "never"
// "false", "true", "never"; parsing an unknown name throws listing the known ones.
EarlyStopping early_stopping_from_name(const std::string& name);

struct Seq2SeqOptions {
  int64_t decoder_start_id = 0;
  std::optional<int64_t> eos_id{};
  int64_t max_new_tokens = 32;  // at most the model's max_seq_len
  int64_t num_beams = 1;        // 1 = greedy
  double length_penalty = 1.0;
  EarlyStopping early_stopping = EarlyStopping::heuristic;
  int64_t num_return = 1;       // hypotheses returned by beam search, at most num_beams
};

struct Hypothesis {
  std::vector<int64_t> tokens;  // generated, without the decoder start; eos included when reached
  double score = 0.0;           // sum of log-probabilities / tokens^length_penalty (beam search)
};

// The greedy target for one source; runs in eval mode without autograd. Throws nf::Error on a
// source longer than max_seq_len, an id outside a vocabulary, or options out of range.
std::vector<int64_t> seq2seq_greedy(models::EncoderDecoder& model, const std::vector<int64_t>& src,
                                    const Seq2SeqOptions& options);
// The num_return best hypotheses of beam search for one source, best first.
std::vector<Hypothesis> beam_search(models::EncoderDecoder& model, const std::vector<int64_t>& src,
                                    const Seq2SeqOptions& options);

}  // namespace nf::infer
