// Streams decoded together, one token each per step, or a verified draft (infer/decode_step.h).
#include "nanoformer/infer/decode_step.h"

#include <algorithm>
#include <optional>

#include "nanoformer/core/error.h"

namespace nf::infer {

DecodeStream::DecodeStream(CachedSequence& sequence, Sampler& sampler, StopCriteria stop, std::vector<int64_t> history,
                           grammar::GrammarConstraint* constraint, StreamCallbacks callbacks,
                           SpeculativeConfig speculative, CachedSequence* draft_sequence)
    : sequence_(&sequence),
      sampler_(&sampler),
      stop_(std::move(stop)),
      history_(std::move(history)),
      constraint_(constraint),
      callbacks_(std::move(callbacks)),
      speculative_(speculative),
      backoff_(speculative.draft_max, speculative.draft_min,
               speculative.draft_model == nullptr ? 0.0
               : speculative.draft_cost >= 0     ? speculative.draft_cost
                                                 : draft_cost(sequence.model(), *speculative.draft_model)) {
  speculative_.validate();
  if (speculative_.draft_model != nullptr)
    model_draft_ = std::make_unique<ModelDraft>(*speculative_.draft_model, draft_sequence, sequence);
}

void DecodeStream::prefill(const std::vector<int64_t>& ids) {
  const Tensor logits = sequence_->feed(ids).to(DType::f32).contiguous();
  if (model_draft_) model_draft_->prefill(history_);  // the prompt, so that drafting starts with one token to feed
  accept({logits.data<float>(), static_cast<size_t>(logits.numel())});
}

void DecodeStream::accept(std::span<const float> logits) {
  if (take(logits)) make_room();
}

std::span<const float> DecodeStream::masked(std::span<const float> logits) {
  if (constraint_ == nullptr) return logits;  // the grammar's mask first: before the sampler and the logprobs
  masked_.assign(logits.begin(), logits.end());
  constraint_->apply(masked_);
  return masked_;
}

bool DecodeStream::take(std::span<const float> logits) {
  try {
    if (!forced_.empty()) {  // a tool's answer: taken, not sampled (nor masked: the grammar is the model's)
      const int64_t id = forced_.front();
      forced_.pop_front();
      commit(id, logits, /*forced=*/true);
      return true;
    }
    const std::span<const float> row = masked(logits);
    commit(sampler_->next(row, history_, generated_.size()), row);
    return true;
  } catch (...) {  // this stream's own failure (its sampler, its callbacks): it ends alone
    error_ = std::current_exception();
    return false;
  }
}

bool DecodeStream::take_drafted(std::span<const float> logits, int64_t x, std::span<const float> q) {
  if (!forced_.empty()) return take(logits);  // a tool answered a verified token: its answer comes first
  try {
    const std::span<const float> row = masked(logits);
    const std::vector<float> p = sampler_->distribution(row, history_, generated_.size());
    commit(speculative_choice(p, q, x, *sampler_), row);
    return true;
  } catch (...) {
    error_ = std::current_exception();
    return false;
  }
}

void DecodeStream::commit(int64_t id, std::span<const float> row, bool forced) {
  const auto count = static_cast<int64_t>(generated_.size()) + 1;  // this token's number
  history_.push_back(id);
  generated_.push_back(id);
  forced_flags_.push_back(forced);
  StopReason reason = stop_.after_token(id, count);
  // a tool's answer may hold the end of a turn (a chat template's tool message): not the model's end
  if (forced && reason == StopReason::end_of_sequence)
    reason = count >= stop_.max_new_tokens ? StopReason::max_new_tokens : StopReason::none;
  if (callbacks_.on_logprobs)
    callbacks_.on_logprobs(token_logprobs(row, sampler_->config().vocab_limit, id, callbacks_.top_logprobs));
  if (callbacks_.on_token && !callbacks_.on_token(id) && reason == StopReason::none) reason = StopReason::stop_string;
  if (constraint_ != nullptr && !forced) {  // a grammar constrains the model's own text, not a tool's answer
    constraint_->accept(id);
    if (reason == StopReason::none && constraint_->finished()) reason = StopReason::end_of_sequence;
  }
  reason_ = reason;
  if (callbacks_.tools != nullptr && reason_ == StopReason::none) {
    const std::vector<int64_t> answer = callbacks_.tools->after(id);
    forced_.insert(forced_.end(), answer.begin(), answer.end());
  }
}

bool DecodeStream::resume() {
  try {
    std::optional<std::vector<int64_t>> answer = callbacks_.tools->take_answer();
    if (!answer) return false;
    forced_.insert(forced_.end(), answer->begin(), answer->end());
    return true;
  } catch (...) {  // its on_turn, or the tool's thread, threw: it ends alone
    error_ = std::current_exception();
    return false;
  }
}

void DecodeStream::make_room() {
  try {
    if (reason_ == StopReason::none && !sequence_->make_room(1)) reason_ = StopReason::context_full;
  } catch (...) {
    error_ = std::current_exception();
  }
}

int64_t DecodeStream::draft_room() {
  if (!speculative_.enabled() || !running() || !forced_.empty() || !backoff_.may_draft()) return 0;
  const nn::KVCache& cache = sequence_->cache();
  if (cache.carried().defined()) return 0;  // a state of the last token: the cache cannot roll back
  // room for [last, d1 .. dk] in the cache and one forward; k + 1 tokens at most still to generate
  const auto length = static_cast<int64_t>(sequence_->tokens().size());
  const int64_t room = std::min({backoff_.window(), sequence_->max_len() - length - 1, cache.max_step() - 1,
                                 stop_.max_new_tokens - static_cast<int64_t>(generated_.size()) - 1});
  return room < std::max<int64_t>(speculative_.draft_min, 1) ? 0 : room;
}

std::vector<int64_t> DecodeStream::draft() {
  DecodeStream* self[] = {this};
  return std::move(draft(self)[0]);
}

std::vector<std::vector<int64_t>> DecodeStream::draft(std::span<DecodeStream* const> streams) {
  std::vector<std::vector<int64_t>> drafts(streams.size());
  std::vector<size_t> modelled, drafting;  // streams drafting with a model; those whose draft is open
  std::vector<std::vector<int64_t>> feed;  // what each open draft feeds its draft sequence next
  for (size_t i = 0; i < streams.size(); ++i) {
    DecodeStream& s = *streams[i];
    const int64_t room = s.draft_room();
    if (room == 0) continue;
    if (!s.model_draft_) {
      drafts[i] = lookup_draft(s.history_, s.speculative_.lookup_ngram, room);
      continue;
    }
    std::vector<int64_t> context = s.sequence_->tokens();  // what the target holds after its last token
    context.push_back(s.generated_.back());
    feed.push_back(s.model_draft_->begin(context, room, s.backoff_.probing() ? DraftBackoff::kProbeWindow : 0));
    if (s.constraint_ != nullptr) s.model_draft_->grammar_state = s.constraint_->state();
    modelled.push_back(i);
    drafting.push_back(i);
  }
  // rounds of draft-model forwards: the open drafts of one model with as many ids to feed in one
  // forward (the first round feeds each stream's catch-up, the next ones its last draft token)
  while (!drafting.empty()) {
    std::vector<bool> fed(drafting.size(), false);
    std::vector<size_t> open;
    std::vector<std::vector<int64_t>> next;
    for (size_t a = 0; a < drafting.size(); ++a) {
      if (fed[a]) continue;
      models::DecoderLM& model = streams[drafting[a]]->model_draft_->sequence().model();
      std::vector<size_t> group;
      std::vector<CachedSequence*> sequences;
      std::vector<std::vector<int64_t>> ids;
      for (size_t b = a; b < drafting.size(); ++b) {
        CachedSequence& sequence = streams[drafting[b]]->model_draft_->sequence();
        if (fed[b] || &sequence.model() != &model || feed[b].size() != feed[a].size()) continue;
        fed[b] = true;
        group.push_back(drafting[b]);
        sequences.push_back(&sequence);
        ids.push_back(std::move(feed[b]));
      }
      const Tensor logits = CachedSequence::feed(sequences, ids).to(DType::f32).contiguous();  // (n, 1, vocab)
      const auto vocab = static_cast<size_t>(logits.size(-1));
      for (size_t g = 0; g < group.size(); ++g) {
        DecodeStream& s = *streams[group[g]];
        if (!s.propose({logits.data<float>() + g * vocab, vocab})) continue;
        open.push_back(group[g]);
        next.push_back({s.model_draft_->tokens().back()});
      }
    }
    drafting = std::move(open);
    feed = std::move(next);
  }
  for (const size_t i : modelled) {
    DecodeStream& s = *streams[i];
    if (s.constraint_ != nullptr) s.constraint_->restore(s.model_draft_->grammar_state);
    drafts[i] = s.model_draft_->tokens();
  }
  for (size_t i = 0; i < streams.size(); ++i)
    if (static_cast<int64_t>(drafts[i].size()) < streams[i]->speculative_.draft_min) drafts[i].clear();
  return drafts;
}

bool DecodeStream::propose(std::span<const float> logits) {
  ModelDraft& d = *model_draft_;
  const size_t length = history_.size();
  try {
    // q: the row as the stream's sampler would take it after the draft so far (the grammar's mask,
    // the penalties over the history and the drafted tokens, the sampler's transforms)
    const std::span<const float> row = masked(logits);
    if (speculative_.draft_p_min > 0 && draft_confidence(row) < speculative_.draft_p_min) {
      d.end();  // not sure enough: the draft so far is verified
      return false;
    }
    history_.insert(history_.end(), d.tokens().begin(), d.tokens().end());
    std::vector<float> q = sampler_->distribution(row, history_, generated_.size() + d.tokens().size());
    history_.resize(length);
    const int64_t x = sampler_->config().greedy() ? argmax(q) : sample_from_probabilities(q, sampler_->uniform());
    if (!d.add(x, std::move(q))) return false;
    if (std::find(stop_.eos_ids.begin(), stop_.eos_ids.end(), x) != stop_.eos_ids.end()) return false;
    if (constraint_ != nullptr) {
      constraint_->accept(x);  // the next draft token's mask follows it
      if (constraint_->finished()) return false;
    }
    return true;
  } catch (...) {  // no draft token can follow (the grammar): the draft so far is verified, the target's row decides
    history_.resize(length);
    d.end();
    return false;
  }
}

// Why accepting a draft token iff the token sampled from the target's row equals it keeps the
// target's distribution: a lookup draft is one token d with probability 1 (q = one-hot at d).
// Leviathan et al.'s rule accepts d with probability min(1, p(d) / q(d)) = p(d) and, when it
// rejects, samples from max(0, p - q) renormalised: p without d, i.e. p conditioned on "not d".
// Drawing x ~ p and keeping d iff x == d gives d with probability p(d) and every other x with p(x):
// exactly p, and the same draw plain decoding makes. So each row is sampled as plain decoding
// samples it, from the same history, with the sampler's next counter: greedy and seeded sampling
// give plain decoding's tokens (within the rounding of a several-token forward), and a stream
// sharing a sampler the same distribution. A draft model's q is not one-hot: its rows take the
// full rule (take_drafted, speculative_choice).
void DecodeStream::verify(std::span<const int64_t> draft, std::span<const float> logits) {
  const size_t rows = draft.size() + 1, vocab = logits.size() / rows;
  NF_CHECK(vocab * rows == logits.size() && !generated_.empty(), "DecodeStream::verify: ", logits.size(),
           " logits for a draft of ", draft.size());
  const auto fed = static_cast<int64_t>(sequence_->tokens().size());  // after [last, draft]
  // a draft model's draft (q_i known): the rejection rule (infer/draft_model.h); a lookup draft: below
  const bool by_model = model_draft_ && std::ranges::equal(model_draft_->tokens(), draft);
  size_t i = 0;
  int64_t taken = 0;
  for (;; ++i) {
    const std::span<const float> row = logits.subspan(i * vocab, vocab);
    if (!(by_model && i < draft.size() ? take_drafted(row, draft[i], model_draft_->q(i)) : take(row))) break;
    if (i == draft.size() || generated_.back() != draft[i]) break;
    ++taken;
    if (!running() || waiting()) break;  // (a token that completed a tool call: its answer comes before any other)
  }
  drafted_ += static_cast<int64_t>(draft.size());
  accepted_ += taken;
  backoff_.record(taken, static_cast<int64_t>(draft.size()));
  // the cache keeps [last, d1 .. di]: row i's token is the next to feed, as after a plain step
  const int64_t keep = fed - static_cast<int64_t>(rows) + 1 + static_cast<int64_t>(i);
  NF_CHECK(sequence_->truncate(keep), "DecodeStream::verify: the cache cannot roll back to ", keep, " tokens");
  if (running()) make_room();
}

size_t decode_step(std::span<DecodeStream* const> streams) {
  std::vector<DecodeStream*> running;
  for (DecodeStream* s : streams) {
    if (!s->running()) continue;
    NF_CHECK(!s->generated().empty(), "decode_step: a stream has not been prefilled");
    if (s->waiting() && !s->resume()) continue;  // its tool still answering: this step goes on without it
    running.push_back(s);
  }
  if (running.empty()) return 0;
  const std::vector<std::vector<int64_t>> drafts = DecodeStream::draft(running);
  // one forward per draft length: the streams without a draft together (their last rows), those
  // with a draft of k together (their k + 1 rows each); then each stream accepts, in stream order
  std::vector<Tensor> logits(running.size());
  std::vector<int64_t> rows_at(running.size());  // the stream's first row in its forward's logits
  std::vector<bool> done(running.size(), false);
  for (size_t i = 0; i < running.size(); ++i) {
    if (done[i]) continue;
    const size_t k = drafts[i].size();
    std::vector<size_t> group;
    std::vector<CachedSequence*> sequences;
    std::vector<std::vector<int64_t>> ids;
    for (size_t j = i; j < running.size(); ++j) {
      if (done[j] || drafts[j].size() != k) continue;
      done[j] = true;
      group.push_back(j);
      sequences.push_back(&running[j]->sequence());
      ids.push_back({running[j]->generated().back()});
      ids.back().insert(ids.back().end(), drafts[j].begin(), drafts[j].end());
    }
    const Tensor out = CachedSequence::feed(sequences, ids, /*all_positions=*/k > 0).to(DType::f32).contiguous();
    for (size_t g = 0; g < group.size(); ++g) {
      logits[group[g]] = out;
      rows_at[group[g]] = static_cast<int64_t>(g * (k + 1));
    }
  }
  for (size_t i = 0; i < running.size(); ++i) {
    const int64_t vocab = logits[i].size(-1);
    const float* first = logits[i].data<float>() + rows_at[i] * vocab;
    if (drafts[i].empty()) {
      running[i]->accept({first, static_cast<size_t>(vocab)});
    } else {
      running[i]->verify(drafts[i], {first, static_cast<size_t>(vocab) * (drafts[i].size() + 1)});
    }
  }
  return running.size();
}

void decode(std::span<DecodeStream* const> streams) {
  const auto any_running = [&] {
    for (const DecodeStream* s : streams)
      if (s->running()) return true;
    return false;
  };
  while (any_running()) {
    if (decode_step(streams) > 0) continue;
    // every running stream waits on its tool: sleep until the first one's answer is there
    for (DecodeStream* s : streams)
      if (s->running() && s->waiting()) {
        s->wait_for_tool();
        break;
      }
  }
  for (const DecodeStream* s : streams)
    if (s->error()) std::rethrow_exception(s->error());
}

}  // namespace nf::infer
