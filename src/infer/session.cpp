// Generation with a session-long KV cache (infer/session.h).
#include "nanoformer/infer/session.h"

#include <algorithm>

#include "nanoformer/autograd/grad_mode.h"
#include "nanoformer/core/error.h"
#include "nanoformer/infer/prompt_ids.h"

namespace nf::infer {
namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

double GenerationResult::prefill_tokens_per_s() const {
  return prefill_seconds > 0 ? static_cast<double>(prompt_tokens) / prefill_seconds : 0;
}

double GenerationResult::decode_tokens_per_s() const {
  const auto decoded = static_cast<double>(std::max<size_t>(tokens.size(), 1) - 1);
  return decode_seconds > 0 ? decoded / decode_seconds : 0;
}

double GenerationResult::acceptance_rate() const {
  return draft_tokens > 0 ? static_cast<double>(accepted_tokens) / static_cast<double>(draft_tokens) : 0;
}

Session::Session(models::DecoderLM& model, int64_t max_len, ContextShift shift, QuantType cache_type)
    : model_(model), sequence_(model, max_len, shift, cache_type) {
  model_.eval();
}

GenerationResult Session::generate(const std::vector<int64_t>& sequence, Sampler& sampler, const StopCriteria& stop,
                                   const OnToken& on_token, grammar::GrammarConstraint* constraint,
                                   const SpeculativeConfig& speculative, ToolUse* tools) {
  stop.validate();
  speculative.validate();
  NoGradGuard no_grad;
  const int64_t vocab = model_.config().vocab_size, context = max_len();
  NF_CHECK(!sequence.empty(), "generate: the prompt is empty (give at least one token, e.g. BOS)");
  check_token_ids(sequence, vocab, "the prompt");
  const auto length = static_cast<int64_t>(sequence.size());
  NF_CHECK(length < context, "generate: the prompt is ", length, " tokens, but the context holds ", context,
           " (the model's max_seq_len or --context), leaving no room for a new token");

  const int64_t keep = sequence_.keep_common_prefix(sequence);
  GenerationResult result;
  result.prompt_tokens = length - keep;
  if (speculative.draft_model != nullptr && (!draft_sequence_ || &draft_sequence_->model() != speculative.draft_model)) {
    check_draft_model(model_, "the model", *speculative.draft_model, "the draft model", max_len());
    speculative.draft_model->eval();
    draft_sequence_ = std::make_unique<CachedSequence>(*speculative.draft_model, max_len(), ContextShift{},
                                                       sequence_.cache().shape().cache_type);
  }
  DecodeStream stream(sequence_, sampler, stop, sequence, constraint, {.on_token = on_token, .tools = tools}, speculative,
                      speculative.draft_model != nullptr ? draft_sequence_.get() : nullptr);
  auto start = std::chrono::steady_clock::now();
  stream.prefill({sequence.begin() + keep, sequence.end()});
  result.prefill_seconds = seconds_since(start);
  start = std::chrono::steady_clock::now();
  DecodeStream* streams[] = {&stream};
  decode(streams);
  result.tokens = stream.generated();
  result.reason = stream.reason();
  result.draft_tokens = stream.drafted();
  result.accepted_tokens = stream.accepted();
  result.decode_seconds = seconds_since(start);
  return result;
}

}  // namespace nf::infer
