// Streams decoded together, one token each per step (infer/decode_step.h).
#include "nanoformer/infer/decode_step.h"

#include "nanoformer/core/error.h"

namespace nf::infer {

DecodeStream::DecodeStream(CachedSequence& sequence, Sampler& sampler, StopCriteria stop, std::vector<int64_t> history,
                           grammar::GrammarConstraint* constraint, StreamCallbacks callbacks)
    : sequence_(&sequence),
      sampler_(&sampler),
      stop_(std::move(stop)),
      history_(std::move(history)),
      constraint_(constraint),
      callbacks_(std::move(callbacks)) {}

void DecodeStream::prefill(const std::vector<int64_t>& ids) {
  const Tensor logits = sequence_->feed(ids).to(DType::f32).contiguous();
  accept({logits.data<float>(), static_cast<size_t>(logits.numel())});
}

void DecodeStream::accept(std::span<const float> logits) {
  try {
    std::span<const float> row = logits;  // the grammar's mask first: before the sampler and the logprobs
    if (constraint_ != nullptr) {
      masked_.assign(logits.begin(), logits.end());
      constraint_->apply(masked_);
      row = masked_;
    }
    const auto count = static_cast<int64_t>(generated_.size()) + 1;  // this token's number
    const int64_t id = sampler_->next(row, history_, generated_.size());
    history_.push_back(id);
    generated_.push_back(id);
    StopReason reason = stop_.after_token(id, count);
    if (callbacks_.on_logprobs)
      callbacks_.on_logprobs(token_logprobs(row, sampler_->config().vocab_limit, id, callbacks_.top_logprobs));
    if (callbacks_.on_token && !callbacks_.on_token(id) && reason == StopReason::none) reason = StopReason::stop_string;
    if (constraint_ != nullptr) {
      constraint_->accept(id);
      if (reason == StopReason::none && constraint_->finished()) reason = StopReason::end_of_sequence;
    }
    if (reason == StopReason::none && !sequence_->make_room(1)) reason = StopReason::context_full;
    reason_ = reason;
  } catch (...) {  // this stream's own failure (its sampler, its callbacks): it ends alone
    error_ = std::current_exception();
  }
}

void decode_step(std::span<DecodeStream* const> streams) {
  std::vector<DecodeStream*> running;
  std::vector<CachedSequence*> sequences;
  std::vector<std::vector<int64_t>> last;
  for (DecodeStream* s : streams) {
    if (!s->running()) continue;
    NF_CHECK(!s->generated().empty(), "decode_step: a stream has not been prefilled");
    running.push_back(s);
    sequences.push_back(&s->sequence());
    last.push_back({s->generated().back()});
  }
  if (running.empty()) return;
  const Tensor logits = CachedSequence::feed(sequences, last).to(DType::f32).contiguous();
  const int64_t vocab = logits.size(-1);
  for (size_t i = 0; i < running.size(); ++i)
    running[i]->accept({logits.data<float>() + static_cast<int64_t>(i) * vocab, static_cast<size_t>(vocab)});
}

void decode(std::span<DecodeStream* const> streams) {
  const auto any_running = [&] {
    for (const DecodeStream* s : streams)
      if (s->running()) return true;
    return false;
  };
  while (any_running()) decode_step(streams);
  for (const DecodeStream* s : streams)
    if (s->error()) std::rethrow_exception(s->error());
}

}  // namespace nf::infer
