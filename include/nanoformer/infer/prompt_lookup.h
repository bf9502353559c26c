#pragma once
// Speculative decoding by prompt lookup (llama.cpp's "lookup" / "ngram-simple" drafting, no draft
// model): the tokens that followed the most recent earlier occurrence of the stream's last n
// tokens are guessed to follow again, and the target model checks the guesses in one forward
// (infer/decode_step.h: DecodeStream::draft and verify).
//
//   draft    for m = N down to 1: the last m tokens of the history (prompt + generated), searched
//            backwards for an earlier occurrence; the first (longest, then most recent) match's
//            next tokens, up to --draft-max, are the draft; none when no m matches
//   verify   [last token, d1 .. dk] fed in one forward (every position's logits); position i's
//            row is accepted as plain decoding accepts a row, while the token taken equals d(i+1);
//            the first token that differs is kept (the correction), the cache rolled back to
//            what was accepted
//   backoff  a draft costs more the longer it is (a forward of k + 1 tokens), so its length is
//            capped by a window: --draft-max at first, then twice the tokens the last verified
//            draft had taken (at least 1, at most --draft-max): doubling while drafts are taken
//            whole, falling to 1 after a miss. A miss (a verified draft of which no token was
//            taken) also pauses drafting: after f misses in a row the next min(2^f, 64) steps
//            draft nothing (a taken token resets f), so a stream whose drafts always fail
//            verifies about one step in 65, a draft of one token
//
// The same search as llama.cpp's common_ngram_simple_draft (common/ngram-map.cpp, llama.cpp
// 0c1e570, tools/peers/build_llamacpp.sh), which matches one n-gram size; this one tries N down to
// 1, so that a short match still drafts where a long one fails. --draft-max defaults to 3, the
// n_max that llama.cpp's lookup example drafts (common/common.h, common_params_speculative_draft;
// examples/lookup/lookup.cpp): a forward of k + 1 tokens costs 1.1-1.6 plain steps at k = 1 but
// 2.8-9 at k = 8-16 (bench/bench_speculative.cpp), so short drafts win unless nearly all are taken.
#include <cstdint>
#include <span>
#include <vector>

namespace nf::models {
class DecoderLM;
}

namespace nf::infer {

struct SpeculativeConfig {
  // Bounds on what a request may ask: a search that finds nothing compares up to lookup_ngram^2 / 2
  // tokens at each position of the history each step (llama.cpp's lookup keeps n-grams of at most
  // 4, LLAMA_NGRAM_MAX in common/ngram-cache.h). A draft is verified in a forward of draft_max + 1
  // tokens, which must run the decoding kernels (at most 16 rows: the matrix-vector products, the
  // cached attention), so that each row gets the logits of decoding its token alone to the bit and
  // greedy drafting gives plain greedy's tokens; longer forwards take prefill's GEMMs, whose sums
  // differ in their last bits (llama.cpp's server drafts up to 16 by default; we stop at 15)
  static constexpr int64_t kMaxLookupNgram = 16;
  static constexpr int64_t kMaxDraft = 15;

  int64_t lookup_ngram = 0;  // --lookup-ngram N: draft by prompt lookup of the last N..1 tokens; 0 = off
  int64_t draft_max = 3;     // --draft-max K: tokens drafted at most per step (llama.cpp's default)
  int64_t draft_min = 0;     // --draft-min M: a shorter draft is not verified (a plain step instead)
  // --draft MODEL: a smaller model with the same vocabulary drafts (infer/draft_model.h), in eval
  // mode and outliving the streams; null = none. Not together with lookup_ngram: one way to draft.
  models::DecoderLM* draft_model = nullptr;
  // --draft-cost C: a forward of the draft model in forwards of the target, for the backoff's gain
  // (DraftBackoff); < 0: the ratio of their weights' bytes (draft_cost()); 0: drafts as prompt
  // lookup does, whenever the window allows
  double draft_cost = -1;
  // --draft-p-min P: a draft model's draft ends before a token the draft model is less sure of than P
  // (draft_confidence(), llama.cpp's --draft-p-min); 0 = off (llama.cpp's default). Not for prompt lookup.
  double draft_p_min = 0;

  bool enabled() const { return lookup_ngram > 0 || draft_model != nullptr; }
  // Throws nf::Error naming the flag out of range (or --draft given with --lookup-ngram).
  void validate() const;
};

// Up to max_tokens tokens that followed the most recent earlier occurrence of the last m tokens
// of `history`, for the largest m <= ngram that occurs earlier; empty when none does.
std::vector<int64_t> lookup_draft(std::span<const int64_t> history, int64_t ngram, int64_t max_tokens);

// When to draft and how much (the backoff above, prompt lookup's). With a draft model each drafted
// token also costs a forward of the draft model, `draft_cost` of a target step, and the backoff is
// the cost rule instead: a draft's length is the k up to --draft-max that is expected to give the
// most tokens per unit of time,
//   gain(k) = E(k) / (1 + k (draft_cost + kVerifyRowCost)),   E(k) = 1 + a + a^2 + ... + a^k,
// a the rate at which drafted tokens were taken so far ((taken + 1) / (tried + 2), counts decayed
// by kDecay at each verified draft); a refused draft is no miss by itself, but where not even k = 1
// is expected to beat a plain step (gain(1) < 1) the step does not draft and counts as a miss (the
// pause above, from 32 steps doubling up to 512 rather than from 2 up to 64); after a pause one
// draft of one token probes again, so a rate that recovers is seen, the draft model catching up on
// the last kProbeWindow tokens only (ModelDraft::begin).
class DraftBackoff {
 public:
  static constexpr int64_t kMaxPause = 64;  // steps without a draft after many misses in a row
  // The same with a draft model, from 32 steps: its probe costs more than a lookup's (the draft
  // model's weights read back into the cache, its forward, the verifying row: 1.3 ms against a 0.8
  // ms step, a 1-layer draft of minimind2-small Q8_0), and pauses from 2 steps on had probed 6
  // times in a 256-token reply (docs/inference.md, "A draft model")
  static constexpr int64_t kMinModelPause = 32;
  static constexpr int64_t kMaxModelPause = 512;
  // A probe feeds the draft model the last kProbeWindow tokens at most, afresh: catching up on the
  // whole pause cost 0.04 plain steps a token there (3.4 ms for 66 tokens)
  static constexpr int64_t kProbeWindow = 32;
  // A target forward's cost per row beyond the first, in plain steps (bench_speculative's table of
  // forwards of k + 1 tokens: about 0.1 a row where decoding is bound by the weights' bandwidth)
  static constexpr double kVerifyRowCost = 0.1;
  static constexpr double kDecay = 0.9;

  // `draft_max`, `draft_min`: --draft-max and --draft-min (the window never falls below the latter).
  // `draft_cost`: a draft model's forward of one token in target steps (draft_cost()); 0: prompt lookup.
  explicit DraftBackoff(int64_t draft_max = 3, int64_t draft_min = 0, double draft_cost = 0);

  // Whether this step may draft; false while pausing (the step counts toward the pause).
  bool may_draft();
  // Whether the next draft probes after a pause (a draft model's: one token, a short catch-up).
  bool probing() const { return probe_; }
  // The most tokens the next draft may have.
  int64_t window() const;
  // A verified draft of `drafted` tokens of which `accepted` were taken.
  void record(int64_t accepted, int64_t drafted);
  int64_t misses() const { return misses_; }
  // The estimated rate at which drafted tokens are taken, and gain(k) above.
  double acceptance() const { return (taken_ + 1) / (tried_ + 2); }
  double gain(int64_t k) const;

 private:
  // The k in [1, window_] of the largest gain; 0 when even k = 1 does not pay.
  int64_t paying_length() const;
  void miss();

  int64_t draft_max_, draft_min_, window_;
  double draft_cost_;
  int64_t misses_ = 0;  // verified drafts in a row of which no token was taken (a draft model's: steps its rate did not pay)
  int64_t pause_ = 0;   // steps left without a draft
  bool probe_ = false;  // a pause just ended: the next draft is one token whatever the gain
  double taken_ = 0, tried_ = 0;  // drafted tokens taken, and positions verified (decayed counts)
};

}  // namespace nf::infer
