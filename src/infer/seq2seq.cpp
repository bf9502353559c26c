// Encoder-decoder generation: greedy and Hugging Face's beam search over the cached decoder
// (infer/seq2seq.h).
#include "nanoformer/infer/seq2seq.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <span>

#include "nanoformer/autograd/grad_mode.h"
#include "nanoformer/core/error.h"
#include "nanoformer/infer/sampler.h"
#include "nanoformer/ops/softmax.h"

namespace nf::infer {
namespace {

constexpr float kFinished = -1.0e9f;  // HF's score of a beam that may not continue

void validate(const models::EncoderDecoder& model, const std::vector<int64_t>& src, const Seq2SeqOptions& o) {
  const models::EncoderDecoderConfig& c = model.config();
  NF_CHECK(!src.empty(), "seq2seq: the source is empty");
  NF_CHECK(static_cast<int64_t>(src.size()) <= c.max_seq_len, "seq2seq: a source of ", src.size(),
           " tokens exceeds the model's max_seq_len ", c.max_seq_len);
  for (const int64_t id : src)
    NF_CHECK(id >= 0 && id < c.src_vocab_size, "seq2seq: source id ", id, " is outside the source vocabulary of ",
             c.src_vocab_size);
  NF_CHECK(o.decoder_start_id >= 0 && o.decoder_start_id < c.tgt_vocab_size, "seq2seq: decoder start id ",
           o.decoder_start_id, " is outside the target vocabulary of ", c.tgt_vocab_size);
  NF_CHECK(!o.eos_id || (*o.eos_id >= 0 && *o.eos_id < c.tgt_vocab_size), "seq2seq: eos id ", o.eos_id.value_or(0),
           " is outside the target vocabulary of ", c.tgt_vocab_size);
  NF_CHECK(o.max_new_tokens > 0 && o.max_new_tokens <= c.max_seq_len, "seq2seq: max_new_tokens ", o.max_new_tokens,
           " must be in [1, max_seq_len = ", c.max_seq_len, "]");
  NF_CHECK(o.num_beams > 0, "seq2seq: num_beams must be positive, got ", o.num_beams);
  NF_CHECK(o.num_return > 0 && o.num_return <= o.num_beams, "seq2seq: num_return ", o.num_return,
           " must be in [1, num_beams = ", o.num_beams, "]");
  NF_CHECK(std::isfinite(o.length_penalty), "seq2seq: length_penalty ", o.length_penalty, " is not finite");
}

// ids (rows, 1) holding tokens
Tensor column_of(const std::vector<int64_t>& tokens) {
  return Tensor::from_vector(tokens, {static_cast<int64_t>(tokens.size()), 1});
}

// The encoded source (1, S, dim) and a decoder state for `rows` target rows of up to max_new_tokens.
models::DecoderState start(models::EncoderDecoder& model, const std::vector<int64_t>& src, int64_t rows,
                           int64_t max_new_tokens) {
  const Tensor memory = model.encode(Tensor::from_vector(src, {1, static_cast<int64_t>(src.size())}));
  return model.start_decoding(memory, rows, max_new_tokens);  // the last token is never fed
}

// Divides a summed log-probability by length^length_penalty, in f32 as HF does.
float penalised(float sum_logprobs, int64_t length, double length_penalty) {
  return sum_logprobs / static_cast<float>(std::pow(static_cast<double>(length), length_penalty));
}

Hypothesis greedy_hypothesis(models::EncoderDecoder& model, const std::vector<int64_t>& src, const Seq2SeqOptions& o) {
  models::DecoderState state = start(model, src, 1, o.max_new_tokens);
  Hypothesis best;
  float sum_logprobs = 0.0f;
  int64_t token = o.decoder_start_id;
  for (int64_t i = 0; i < o.max_new_tokens; ++i) {
    const Tensor logits = model.decode_cached(column_of({token}), state, /*last_only=*/true).contiguous();
    const std::span<const float> row(logits.data<float>(), static_cast<size_t>(logits.numel()));
    token = argmax(row);
    sum_logprobs += log_softmax(logits, -1).data<float>()[token];
    best.tokens.push_back(token);
    if (o.eos_id && token == *o.eos_id) break;
  }
  best.score = penalised(sum_logprobs, static_cast<int64_t>(best.tokens.size()), o.length_penalty);
  return best;
}

struct Beam {
  std::vector<int64_t> tokens;
  float score = 0.0f;  // sum of log-probabilities
};

struct Candidate {
  int64_t parent = 0, token = 0;
  float score = 0.0f;
  bool finished = false;  // ends in eos or reaches max_new_tokens
};

// The best `count` continuations of every beam by every token, best first (ties: the lower flat
// index parent * vocab + token, as torch.topk over the flattened scores).
std::vector<Candidate> best_candidates(const Tensor& log_probs, const std::vector<Beam>& beams, size_t count) {
  const int64_t vocab = log_probs.size(-1);
  const float* lp = log_probs.data<float>();
  std::vector<float> scores(static_cast<size_t>(log_probs.numel()));
  for (size_t i = 0; i < scores.size(); ++i) scores[i] = beams[i / static_cast<size_t>(vocab)].score + lp[i];  // s_b + log p_v
  std::vector<int64_t> order(scores.size());
  std::iota(order.begin(), order.end(), 0);
  count = std::min(count, order.size());
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(count), order.end(),
                    [&](int64_t a, int64_t b) { return scores[a] > scores[b] || (scores[a] == scores[b] && a < b); });
  std::vector<Candidate> out;
  for (size_t k = 0; k < count; ++k)
    out.push_back({.parent = order[k] / vocab, .token = order[k] % vocab, .score = scores[order[k]], .finished = false});
  return out;
}

}  // namespace

EarlyStopping early_stopping_from_name(const std::string& name) {
  if (name == "false") return EarlyStopping::heuristic;
  if (name == "true") return EarlyStopping::on_full_beams;
  if (name == "never") return EarlyStopping::never;
  NF_FAIL("seq2seq: unknown early_stopping '", name, "' (known: false, true, never)");
}

std::vector<int64_t> seq2seq_greedy(models::EncoderDecoder& model, const std::vector<int64_t>& src,
                                    const Seq2SeqOptions& options) {
  return beam_search(model, src, {.decoder_start_id = options.decoder_start_id, .eos_id = options.eos_id,
                                  .max_new_tokens = options.max_new_tokens, .num_beams = 1,
                                  .length_penalty = options.length_penalty, .early_stopping = options.early_stopping,
                                  .num_return = 1})[0].tokens;
}

std::vector<Hypothesis> beam_search(models::EncoderDecoder& model, const std::vector<int64_t>& src,
                                    const Seq2SeqOptions& o) {
  validate(model, src, o);
  const bool was_training = model.is_training();
  model.eval();
  NoGradGuard no_grad;
  if (o.num_beams == 1) {  // as HF's generate: one beam is greedy
    std::vector<Hypothesis> greedy{greedy_hypothesis(model, src, o)};
    model.train(was_training);
    return greedy;
  }
  const auto n = static_cast<size_t>(o.num_beams);
  models::DecoderState state = start(model, src, o.num_beams, o.max_new_tokens);
  // beam 0 starts alone: the others score -1e9, so the first step's candidates all come from it
  std::vector<Beam> running(n, Beam{{}, kFinished});
  running[0].score = 0.0f;
  std::vector<Hypothesis> finished;  // at most n, best first
  bool may_improve = true;           // HF's is_early_stop_heuristic_unsatisfied
  std::vector<int64_t> next_tokens(n, o.decoder_start_id);
  for (int64_t length = 1;; ++length) {  // length: tokens generated once this step's is chosen
    const Tensor logits = model.decode_cached(column_of(next_tokens), state, /*last_only=*/true);
    const Tensor log_probs = log_softmax(logits, -1).contiguous();  // (n, 1, V)
    std::vector<Candidate> candidates = best_candidates(log_probs, running, 2 * n);
    for (Candidate& c : candidates) c.finished = (o.eos_id && c.token == *o.eos_id) || length >= o.max_new_tokens;
    // the first n candidates that finished become hypotheses, unless the search is already decided
    const bool full = finished.size() == n;
    if (may_improve && !(full && o.early_stopping == EarlyStopping::on_full_beams)) {
      for (size_t k = 0; k < n && k < candidates.size(); ++k) {
        const Candidate& c = candidates[k];
        if (!c.finished) continue;
        Hypothesis h{running[static_cast<size_t>(c.parent)].tokens, penalised(c.score, length, o.length_penalty)};
        h.tokens.push_back(c.token);
        finished.push_back(std::move(h));
      }
      std::stable_sort(finished.begin(), finished.end(),
                       [](const Hypothesis& a, const Hypothesis& b) { return a.score > b.score; });
      if (finished.size() > n) finished.resize(n);
    }
    // the n best candidates that did not finish continue (finished ones rank last, at -1e9)
    std::stable_sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
      return (a.finished ? a.score + kFinished : a.score) > (b.finished ? b.score + kFinished : b.score);
    });
    std::vector<Beam> continuing;
    std::vector<int64_t> parents;
    for (size_t k = 0; k < n; ++k) {
      const Candidate& c = candidates[k];
      Beam beam{running[static_cast<size_t>(c.parent)].tokens, c.finished ? c.score + kFinished : c.score};
      beam.tokens.push_back(c.token);
      continuing.push_back(std::move(beam));
      parents.push_back(c.parent);
      next_tokens[k] = c.token;
    }
    running = std::move(continuing);
    // can the best running beam still beat the worst hypothesis? (only once n hypotheses exist)
    const int64_t best_length = o.early_stopping == EarlyStopping::never && o.length_penalty > 0 ? o.max_new_tokens : length;
    const float worst = finished.size() == n ? finished.back().score : kFinished;
    may_improve = may_improve && penalised(running[0].score, best_length, o.length_penalty) > worst;
    const bool all_finished = std::all_of(candidates.begin(), candidates.end(), [](const Candidate& c) { return c.finished; });
    if (!may_improve || all_finished || (finished.size() == n && o.early_stopping == EarlyStopping::on_full_beams)) break;
    state.select_rows(parents);  // each beam's cache rows from its parent's
  }
  model.train(was_training);
  finished.resize(std::min(finished.size(), static_cast<size_t>(o.num_return)));
  return finished;
}

}  // namespace nf::infer
