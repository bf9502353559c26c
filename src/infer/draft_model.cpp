// Drafting with a draft model, and the rejection rule that keeps the target's distribution
// (infer/draft_model.h).
#include "nanoformer/infer/draft_model.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>

#include "nanoformer/core/error.h"

namespace nf::infer {

void check_draft_model(const models::DecoderLM& target, std::string_view target_name, const models::DecoderLM& draft,
                       std::string_view draft_name, int64_t context) {
  const int64_t vt = target.config().vocab_size, vd = draft.config().vocab_size;
  NF_CHECK(vt == vd, "--draft ", draft_name, " has a vocabulary of ", vd, " tokens but the model ", target_name, " has ",
           vt, ": a draft model needs the target's vocabulary (the same tokenizer)");
  NF_CHECK(draft.config().max_seq_len >= context, "--draft ", draft_name, ": its max_seq_len ",
           draft.config().max_seq_len, " is shorter than the context ", context, " of ", target_name,
           " (give --context at most ", draft.config().max_seq_len, ")");
}

namespace {

size_t weight_bytes(const models::DecoderLM& model) {
  size_t bytes = 0;
  for (const Tensor& t : model.parameters()) bytes += static_cast<size_t>(t.numel()) * t.itemsize();
  for (const auto& [name, q] : model.named_quantized()) bytes += q.nbytes();
  return bytes;
}

}  // namespace

double draft_cost(const models::DecoderLM& target, const models::DecoderLM& draft) {
  return static_cast<double>(weight_bytes(draft)) / static_cast<double>(std::max<size_t>(weight_bytes(target), 1));
}

int64_t speculative_choice(std::span<const float> p, std::span<const float> q, int64_t x, Sampler& sampler) {
  NF_CHECK(p.size() == q.size() && x >= 0 && x < static_cast<int64_t>(p.size()), "speculative_choice: ", p.size(),
           " target and ", q.size(), " draft probabilities, token ", x);
  const auto i = static_cast<size_t>(x);
  if (sampler.uniform() * q[i] < p[i]) return x;  // taken with probability min(1, p(x) / q(x))
  std::vector<float> residual(p.size());
  double mass = 0;
  for (size_t j = 0; j < p.size(); ++j) mass += residual[j] = std::max(0.0f, p[j] - q[j]);  // max(0, p - q)
  // mass 0 means p = q up to rounding, where a refusal has probability 0: draw from p then
  return sample_from_probabilities(mass > 0 ? std::span<const float>(residual) : p, sampler.uniform());
}

float draft_confidence(std::span<const float> logits) {
  std::array<float, kDraftTopK> top{};
  const auto end = std::partial_sort_copy(logits.begin(), logits.end(), top.begin(), top.end(), std::greater<>());
  if (top.begin() == end || !std::isfinite(top[0])) return 0;
  double sum = 0;
  for (auto it = top.begin(); it != end; ++it) sum += std::exp(static_cast<double>(*it) - top[0]);
  return static_cast<float>(1.0 / sum);  // exp(l_max) / sum_top exp(l)
}

ModelDraft::ModelDraft(models::DecoderLM& draft_model, CachedSequence* sequence, const CachedSequence& target)
    : sequence_(sequence), vocab_(static_cast<size_t>(draft_model.config().vocab_size)) {
  check_draft_model(target.model(), "the target model", draft_model, "the draft model", target.max_len());
  if (sequence_ == nullptr) {
    draft_model.eval();
    own_ = std::make_unique<CachedSequence>(draft_model, target.max_len(), ContextShift{},
                                            target.cache().shape().cache_type);
    sequence_ = own_.get();
  }
  NF_CHECK(&sequence_->model() == &draft_model && sequence_->max_len() >= target.max_len(),
           "ModelDraft: the draft's sequence is of another model or shorter (", sequence_->max_len(), " tokens) than the target's (",
           target.max_len(), ")");
}

void ModelDraft::prefill(const std::vector<int64_t>& prompt) {
  from_ = 0;
  const int64_t kept = sequence_->keep_common_prefix(prompt);
  sequence_->feed({prompt.begin() + kept, prompt.end()});
}

std::vector<int64_t> ModelDraft::begin(const std::vector<int64_t>& context, int64_t limit, int64_t window) {
  tokens_.clear();
  q_.clear();
  limit_ = limit;
  from_ = std::min(from_, context.size() - 1);  // (the target's context shifted under a window: a later suffix)
  const std::vector<int64_t> seen(context.begin() + static_cast<std::ptrdiff_t>(from_), context.end());
  const int64_t kept = sequence_->keep_common_prefix(seen);  // at least the last token left to feed
  if (window > 0 && static_cast<int64_t>(seen.size()) - kept > window) {
    from_ = context.size() - static_cast<size_t>(window);
    sequence_->reset();
    return {context.end() - window, context.end()};
  }
  return {seen.begin() + kept, seen.end()};
}

bool ModelDraft::add(int64_t x, std::vector<float> q) {
  NF_CHECK(q.size() == vocab_, "ModelDraft: ", q.size(), " probabilities for a vocabulary of ", vocab_);
  tokens_.push_back(x);
  q_.insert(q_.end(), q.begin(), q.end());
  return open();
}

}  // namespace nf::infer
