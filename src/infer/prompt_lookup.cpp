// Drafting by prompt lookup and its backoff (infer/prompt_lookup.h).
#include "nanoformer/infer/prompt_lookup.h"

#include <algorithm>

#include "nanoformer/core/error.h"

namespace nf::infer {

void SpeculativeConfig::validate() const {
  NF_CHECK(lookup_ngram >= 0 && lookup_ngram <= kMaxLookupNgram, "--lookup-ngram ", lookup_ngram,
           ": must be in [0, ", kMaxLookupNgram, "] (0 = off)");
  NF_CHECK(draft_max >= 1 && draft_max <= kMaxDraft, "--draft-max ", draft_max, ": must be in [1, ", kMaxDraft, "]");
  NF_CHECK(draft_min >= 0 && draft_min <= draft_max, "--draft-min ", draft_min, ": must be in [0, --draft-max ",
           draft_max, "]");
  NF_CHECK(lookup_ngram == 0 || draft_model == nullptr, "--draft and --lookup-ngram ", lookup_ngram,
           " are two ways to draft: give one");
}

std::vector<int64_t> lookup_draft(std::span<const int64_t> history, int64_t ngram, int64_t max_tokens) {
  const auto n = static_cast<int64_t>(history.size());
  for (int64_t m = std::min(ngram, n - 1); m >= 1; --m) {
    const std::span<const int64_t> tail = history.subspan(static_cast<size_t>(n - m));
    // an earlier occurrence starts at j <= n - m - 1, so at least one token follows it
    for (int64_t j = n - m - 1; j >= 0; --j) {
      if (!std::equal(tail.begin(), tail.end(), history.begin() + j)) continue;
      const int64_t from = j + m, count = std::min(max_tokens, n - from);
      return {history.begin() + from, history.begin() + from + count};
    }
  }
  return {};
}

DraftBackoff::DraftBackoff(int64_t draft_max, int64_t draft_min)
    : draft_max_(draft_max), draft_min_(draft_min), window_(draft_max) {}

bool DraftBackoff::may_draft() {
  if (pause_ == 0) return true;
  --pause_;
  return false;
}

void DraftBackoff::record(int64_t accepted) {
  window_ = std::clamp(2 * accepted, std::max<int64_t>(draft_min_, 1), draft_max_);
  if (accepted > 0) {
    misses_ = 0;
    return;
  }
  ++misses_;
  pause_ = misses_ >= 7 ? kMaxPause : int64_t{1} << misses_;  // 2^f, at most 64
}

}  // namespace nf::infer
