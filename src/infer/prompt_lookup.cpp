// Drafting by prompt lookup and its backoff (infer/prompt_lookup.h).
#include "nanoformer/infer/prompt_lookup.h"

#include <algorithm>
#include <cmath>

#include "nanoformer/core/error.h"

namespace nf::infer {

void SpeculativeConfig::validate() const {
  NF_CHECK(lookup_ngram >= 0 && lookup_ngram <= kMaxLookupNgram, "--lookup-ngram ", lookup_ngram,
           ": must be in [0, ", kMaxLookupNgram, "] (0 = off)");
  NF_CHECK(draft_max >= 1 && draft_max <= kMaxDraft, "--draft-max ", draft_max, ": must be in [1, ", kMaxDraft,
           "] (a draft and the token before it are verified by the decoding kernels, which take ", kMaxDraft + 1, " rows)");
  NF_CHECK(draft_min >= 0 && draft_min <= draft_max, "--draft-min ", draft_min, ": must be in [0, --draft-max ",
           draft_max, "]");
  NF_CHECK(std::isfinite(draft_cost), "--draft-cost ", draft_cost, ": must be a number (< 0: from the weights)");
  NF_CHECK(draft_p_min >= 0 && draft_p_min <= 1, "--draft-p-min ", draft_p_min, ": must be in [0, 1] (0 = off)");
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

DraftBackoff::DraftBackoff(int64_t draft_max, int64_t draft_min, double draft_cost)
    : draft_max_(draft_max), draft_min_(draft_min), window_(draft_max), draft_cost_(draft_cost) {}

double DraftBackoff::gain(int64_t k) const {
  const double a = acceptance();
  double expected = 1, power = 1;  // E(k) = 1 + a + ... + a^k
  for (int64_t i = 0; i < k; ++i) expected += power *= a;
  return expected / (1 + static_cast<double>(k) * (draft_cost_ + kVerifyRowCost));
}

int64_t DraftBackoff::paying_length() const {
  int64_t best = 0;
  double best_gain = 1;
  for (int64_t k = 1; k <= window_; ++k)
    if (const double g = gain(k); g > best_gain) best = k, best_gain = g;
  return best;
}

bool DraftBackoff::may_draft() {
  if (pause_ > 0) {
    probe_ = --pause_ == 0 && draft_cost_ > 0;
    return false;
  }
  if (draft_cost_ > 0 && !probe_ && paying_length() == 0) {  // not worth a draft: as a miss
    miss();
    return false;
  }
  return true;
}

int64_t DraftBackoff::window() const {
  if (draft_cost_ == 0) return window_;
  return probe_ ? std::max<int64_t>(draft_min_, 1) : std::max(paying_length(), draft_min_);
}

void DraftBackoff::record(int64_t accepted, int64_t drafted) {
  probe_ = false;
  taken_ = kDecay * taken_ + static_cast<double>(accepted);
  tried_ = kDecay * tried_ + static_cast<double>(accepted + (accepted < drafted ? 1 : 0));
  if (accepted > 0) misses_ = 0;
  // A draft model: each draft's length is the cost rule's within --draft-max, and a refused draft
  // pauses only when the rate it leaves no longer pays (may_draft). (The window and the pause after
  // every miss, below, drafted 38 % fewer greedy tokens on the trained pair in docs/inference.md:
  // 1,244 against 2,022.)
  if (draft_cost_ > 0) return;
  window_ = std::clamp(2 * accepted, std::max<int64_t>(draft_min_, 1), draft_max_);
  if (accepted == 0) miss();
}

void DraftBackoff::miss() {
  ++misses_;
  const int64_t doublings = std::min<int64_t>(misses_ - 1, 20);
  pause_ = draft_cost_ > 0 ? std::min(kMinModelPause << doublings, kMaxModelPause)  // 32 2^(f - 1), at most 512
                           : std::min(int64_t{2} << doublings, kMaxPause);           // 2^f, at most 64
}

}  // namespace nf::infer
