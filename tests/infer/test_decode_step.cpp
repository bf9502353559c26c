// The one decoding loop (infer/decode_step.h): streams decoded together get the tokens each gets
// alone in a Session (sampled, each with its own seed; of different prompt lengths, some ending
// early at an end-of-sequence id); streams sharing a sampler take its draws in row order; a stream
// whose callback throws ends alone, the others going on, and decode rethrows its error at the end.
#include "nanoformer/infer/decode_step.h"

#include <gtest/gtest.h>

#include <deque>

#include "nanoformer/autograd/grad_mode.h"
#include "nanoformer/infer/session.h"
#include "support/testing.h"
#include "tiny_lm.h"

namespace nf::infer {
namespace {

const std::vector<std::vector<int64_t>> kPrompts = {{5, 9, 13}, {7}, {1, 2, 3, 4, 5, 6, 7, 8, 9}, {40, 41}};

std::vector<int64_t> alone(models::DecoderLM& model, const std::vector<int64_t>& prompt, const SamplerConfig& config,
                           const StopCriteria& stop) {
  Session session(model);
  Sampler sampler(config);
  return session.generate(prompt, sampler, stop).tokens;
}

// Streams over one model, each with its own sequence and sampler (those must not move: deques).
class DecodeStepTest : public ::testing::Test {
 protected:
  void SetUp() override { model->eval(); }
  DecodeStream& add(const std::vector<int64_t>& prompt, const SamplerConfig& config, const StopCriteria& stop,
                    StreamCallbacks callbacks = {}) {
    sequences.emplace_back(*model);
    samplers.emplace_back(config);
    streams.emplace_back(sequences.back(), samplers.back(), stop, prompt, nullptr, std::move(callbacks));
    streams.back().prefill(prompt);
    return streams.back();
  }
  std::vector<DecodeStream*> all() {
    std::vector<DecodeStream*> out;
    for (DecodeStream& s : streams) out.push_back(&s);
    return out;
  }
  std::shared_ptr<models::DecoderLM> model = testing::tiny_lm();
  NoGradGuard no_grad;
  std::deque<CachedSequence> sequences;
  std::deque<Sampler> samplers;
  std::deque<DecodeStream> streams;
};

TEST_F(DecodeStepTest, StreamsTogetherGetTheTokensEachGetsAlone) {
  std::vector<std::vector<int64_t>> want;
  for (size_t i = 0; i < kPrompts.size(); ++i) {
    const SamplerConfig config{.temperature = 0.9, .top_k = 20, .seed = 100 + i};
    // the first stream stops at the id it draws third alone: an end before the others
    StopCriteria stop{.max_new_tokens = 12};
    if (i == 0) stop.eos_ids = {alone(*model, kPrompts[i], config, stop).at(2)};
    want.push_back(alone(*model, kPrompts[i], config, stop));
    add(kPrompts[i], config, stop);
  }
  ASSERT_EQ(want[0].size(), 3u);
  decode(all());
  for (size_t i = 0; i < streams.size(); ++i) {
    EXPECT_EQ(streams[i].generated(), want[i]) << "stream " << i;
    EXPECT_EQ(streams[i].reason(), i == 0 ? StopReason::end_of_sequence : StopReason::max_new_tokens) << "stream " << i;
    // the cache holds the prompt and every generated token but the last (fed only if it went on)
    std::vector<int64_t> held = kPrompts[i];
    held.insert(held.end(), want[i].begin(), want[i].end() - 1);
    EXPECT_EQ(sequences[i].tokens(), held) << "stream " << i;
  }
}

// One sampler for every stream (GRPO's rollouts): row r of step s takes the draw after row r - 1's,
// as Sampler::next over the batch of those rows does.
TEST_F(DecodeStepTest, StreamsSharingASamplerDrawInRowOrder) {
  const SamplerConfig config{.temperature = 1.0, .seed = 7};
  Sampler shared(config);
  for (int i = 0; i < 2; ++i) {
    sequences.emplace_back(*model);
    streams.emplace_back(sequences.back(), shared, StopCriteria{.max_new_tokens = 6}, kPrompts[0]);
  }
  // both streams prefilled the same prompt: the same logits every step until they differ
  for (DecodeStream& s : streams) s.prefill(kPrompts[0]);
  decode(all());
  // the same draws by hand: at each step both rows' logits, sampled as one batch
  Sampler batch(config);
  CachedSequence a(*model), b(*model);
  std::vector<std::vector<int64_t>> history{kPrompts[0], kPrompts[0]};
  Tensor logits = CachedSequence::feed(std::vector<CachedSequence*>{&a, &b}, history);
  for (size_t step = 0; step < 6; ++step) {
    const std::vector<int64_t> next = batch.next(logits.reshape({2, -1}), history, step);
    for (size_t r = 0; r < 2; ++r) {
      ASSERT_EQ(streams[r].generated().at(step), next[r]) << "row " << r << ", token " << step;
      history[r].push_back(next[r]);
    }
    logits = CachedSequence::feed(std::vector<CachedSequence*>{&a, &b}, {{next[0]}, {next[1]}});
  }
  EXPECT_NE(streams[0].generated(), streams[1].generated()) << "one prompt, two rows: the draws should differ";
}

TEST_F(DecodeStepTest, AStreamWhoseCallbackThrowsEndsAloneAndDecodeRethrows) {
  int calls = 0;
  const OnToken fails_third = [&calls](int64_t) {
    if (++calls == 3) throw Error("the client's callback failed");
    return true;
  };
  for (size_t i = 0; i < 3; ++i)
    add(kPrompts[i], {.temperature = 0}, {.max_new_tokens = 8}, {.on_token = i == 1 ? fails_third : OnToken{}});
  EXPECT_THROW_WITH(decode(all()), "the client's callback failed");
  EXPECT_EQ(streams[1].generated().size(), 3u);
  EXPECT_TRUE(streams[1].error());
  for (size_t i : {0u, 2u}) {
    EXPECT_EQ(streams[i].generated(), alone(*model, kPrompts[i], {.temperature = 0}, {.max_new_tokens = 8})) << i;
    EXPECT_FALSE(streams[i].error());
  }
}

}  // namespace
}  // namespace nf::infer
