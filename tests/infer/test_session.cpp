// Generation with a session-long KV cache (infer/session.h): greedy equals greedy_generate; a
// second call that continues the first prefills only the new tokens and gives what a fresh
// session gives for the whole sequence; a sequence that diverges rolls the cache back to the
// common prefix; stopping (end of sequence, max new tokens, the caller, a full cache); seeded
// sampling repeats; bad input names the numbers.
#include "nanoformer/infer/session.h"

#include <gtest/gtest.h>

#include "nanoformer/infer/greedy.h"
#include "support/testing.h"
#include "tiny_lm.h"

namespace nf::infer {
namespace {

std::shared_ptr<models::DecoderLM> tiny_model() { return testing::tiny_lm(); }

SamplerConfig greedy() { return {.temperature = 0}; }

TEST(Session, GreedyEqualsGreedyGenerate) {
  const auto model = tiny_model();
  Session session(*model);
  Sampler sampler(greedy());
  const std::vector<int64_t> prompt{5, 9, 13};
  const GenerationResult r = session.generate(prompt, sampler, {.max_new_tokens = 10});
  EXPECT_EQ(r.tokens, greedy_generate(*model, prompt, 10));
  EXPECT_EQ(r.reason, StopReason::max_new_tokens);
  EXPECT_EQ(r.prompt_tokens, 3);
}

// The frequency and presence penalties read the tokens generated so far, not the prompt's: a
// session equals a loop over the full forward that applies them to the generated tokens by hand.
TEST(Session, FrequencyAndPresencePenaltiesReadTheGeneratedTokens) {
  const auto model = tiny_model();
  model->eval();
  const SamplerConfig config{.temperature = 0, .frequency_penalty = 0.7, .presence_penalty = 1.3};
  Session session(*model);
  Sampler sampler(config);
  const std::vector<int64_t> prompt{5, 9, 13, 9};
  const GenerationResult r = session.generate(prompt, sampler, {.max_new_tokens = 12});

  std::vector<int64_t> sequence = prompt, generated;
  for (int i = 0; i < 12; ++i) {
    const Tensor logits = model->forward(Tensor::from_vector(sequence, {1, static_cast<int64_t>(sequence.size())})).logits;
    const int64_t vocab = logits.size(2);
    std::vector<float> row = logits.contiguous().to_vector<float>();
    row.erase(row.begin(), row.end() - vocab);
    apply_frequency_presence_penalties(row, generated, 0.7, 1.3);  // x_t - c_t * 0.7 - (c_t > 0) * 1.3
    generated.push_back(argmax(row));
    sequence.push_back(generated.back());
  }
  EXPECT_EQ(r.tokens, generated);
  Session plain_session(*model);
  Sampler plain(greedy());
  EXPECT_NE(plain_session.generate(prompt, plain, {.max_new_tokens = 12}).tokens, generated);  // the penalties mattered
}

TEST(Session, ContinuingPrefillsOnlyTheNewTokensAndEqualsAFreshSession) {
  const auto model = tiny_model();
  Session session(*model);
  Sampler sampler(greedy());
  std::vector<int64_t> sequence{5, 9, 13};
  const GenerationResult first = session.generate(sequence, sampler, {.max_new_tokens = 4});
  // the chat's next turn: everything so far, then new "user" tokens
  sequence.insert(sequence.end(), first.tokens.begin(), first.tokens.end());
  sequence.insert(sequence.end(), {7, 8});
  const GenerationResult second = session.generate(sequence, sampler, {.max_new_tokens = 6});
  EXPECT_EQ(second.prompt_tokens, 3);  // the last generated token (never fed) and the two new ones
  Session fresh(*model);
  EXPECT_EQ(second.tokens, fresh.generate(sequence, sampler, {.max_new_tokens = 6}).tokens);

  // a sequence that diverges after 2 tokens rolls the cache back to them
  const std::vector<int64_t> other{5, 9, 40, 41};
  const GenerationResult third = session.generate(other, sampler, {.max_new_tokens = 5});
  EXPECT_EQ(third.prompt_tokens, 2);
  EXPECT_EQ(third.tokens, greedy_generate(*model, other, 5));
  // the same sequence again still feeds one token (its logits are needed)
  EXPECT_EQ(session.generate(other, sampler, {.max_new_tokens = 5}).prompt_tokens, 1);
}

TEST(Session, StopsAtEndOfSequenceTheCallerOrAFullCache) {
  const auto model = tiny_model();
  Sampler sampler(greedy());
  const std::vector<int64_t> prompt{1, 2};
  const std::vector<int64_t> free_run = greedy_generate(*model, prompt, 8);
  Session session(*model);
  const GenerationResult eos = session.generate(prompt, sampler, {.eos_ids = {free_run[2]}, .max_new_tokens = 8});
  EXPECT_EQ(eos.reason, StopReason::end_of_sequence);
  EXPECT_EQ(eos.tokens.back(), free_run[2]);
  EXPECT_LE(eos.tokens.size(), 3u);
  int calls = 0;
  const GenerationResult asked = session.generate(prompt, sampler, {.max_new_tokens = 8}, [&](int64_t) { return ++calls < 2; });
  EXPECT_EQ(asked.tokens.size(), 2u);
  // past its 6 positions the context shifts (the oldest half goes) and generation goes on
  Session small(*model, 6);
  const GenerationResult past = small.generate(prompt, sampler, {.max_new_tokens = 100});
  EXPECT_EQ(past.reason, StopReason::max_new_tokens);
  EXPECT_EQ(past.tokens.size(), 100u);
  EXPECT_LE(small.cached_tokens().size(), 6u);
  // a --keep that holds all of it could never shift: refused, naming both flags
  EXPECT_THROW_WITH(Session(*model, 6, {.keep = 6}), "--keep 6 must be less than --context 6");
}

TEST(Session, SeededSamplingRepeats) {
  const auto model = tiny_model();
  const SamplerConfig config{.temperature = 1.0, .top_p = 0.95, .seed = 7};
  auto run = [&](const SamplerConfig& c) {
    Session session(*model);
    Sampler sampler(c);
    return session.generate({3, 4}, sampler, {.max_new_tokens = 20}).tokens;
  };
  EXPECT_EQ(run(config), run(config));
  SamplerConfig other = config;
  other.seed = 8;
  EXPECT_NE(run(config), run(other));
}

TEST(Session, BadInputNamesTheNumbers) {
  const auto model = tiny_model();
  Session session(*model, 8);
  Sampler sampler(greedy());
  EXPECT_THROW_WITH(session.generate(std::vector<int64_t>(8, 1), sampler, {}), "the prompt is 8 tokens",
                    "the context holds 8");
  EXPECT_THROW_WITH(session.generate({1, 64}, sampler, {}), "64", "position 1");
  EXPECT_THROW_WITH(session.generate({}, sampler, {}), "the prompt is empty");
}

}  // namespace
}  // namespace nf::infer
