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

int64_t keep_common_prefix(nn::KVCache& cache, std::vector<int64_t>& cached, const std::vector<int64_t>& sequence) {
  const auto common = static_cast<int64_t>(
      std::mismatch(cached.begin(), cached.end(), sequence.begin(), sequence.end()).first - cached.begin());
  const int64_t keep = std::min(common, static_cast<int64_t>(sequence.size()) - 1);
  cache.truncate(keep);
  cached.resize(static_cast<size_t>(keep));
  return keep;
}

Session::Session(models::DecoderLM& model, int64_t max_len) : model_(model), cache_(model.make_cache(1, max_len)) {
  model_.eval();
}

void Session::reset() {
  cache_.reset();
  cached_.clear();
}

Tensor Session::feed(const std::vector<int64_t>& ids) {
  const auto T = static_cast<int64_t>(ids.size());
  const Tensor logits = model_.forward_cached(Tensor::from_vector(ids, {1, T}), cache_, /*last_only=*/true);
  cached_.insert(cached_.end(), ids.begin(), ids.end());
  return logits;
}

GenerationResult Session::generate(const std::vector<int64_t>& sequence, Sampler& sampler, const StopCriteria& stop,
                                   const OnToken& on_token) {
  stop.validate();
  NoGradGuard no_grad;
  const int64_t vocab = model_.config().vocab_size, context = max_len();
  NF_CHECK(!sequence.empty(), "generate: the prompt is empty (give at least one token, e.g. BOS)");
  check_token_ids(sequence, vocab, "the prompt");
  const auto length = static_cast<int64_t>(sequence.size());
  NF_CHECK(length < context, "generate: the prompt is ", length, " tokens, but the context holds ", context,
           " (the model's max_seq_len or --context), leaving no room for a new token");

  const int64_t keep = keep_common_prefix(cache_, cached_, sequence);

  GenerationResult result;
  result.prompt_tokens = length - keep;
  auto start = std::chrono::steady_clock::now();
  Tensor logits = feed({sequence.begin() + keep, sequence.end()});
  result.prefill_seconds = seconds_since(start);

  std::vector<int64_t> history = sequence;  // what the repetition penalty sees
  start = std::chrono::steady_clock::now();
  for (int64_t count = 1;; ++count) {
    const int64_t id = sampler.next(std::span<const float>(logits.data<float>(), static_cast<size_t>(vocab)), history);
    result.tokens.push_back(id);
    history.push_back(id);
    result.reason = stop.after_token(id, count);
    if (on_token && !on_token(id) && result.reason == StopReason::none) result.reason = StopReason::stop_string;
    if (result.reason == StopReason::none && static_cast<int64_t>(cached_.size()) >= context)
      result.reason = StopReason::max_new_tokens;  // the cache is full
    if (result.reason != StopReason::none) break;
    logits = feed({id});
  }
  result.decode_seconds = seconds_since(start);
  return result;
}

}  // namespace nf::infer
