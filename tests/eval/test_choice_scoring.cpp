// Multiple choice by log-likelihood (eval/choice_scoring.h): lm-eval's _encode_pair with a byte-level
// BPE equals the ids HF tokenizers gives (tests/fixtures/eval/expected.json, written by
// tools/golden/eval_task_fixtures.py); the shared-prefix, batched scores equal one full forward per
// choice computed by hand; identical continuations tie exactly; a context longer than the model keeps
// its last tokens; a continuation longer than the model is an error.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>

#include "nanoformer/autograd/grad_mode.h"
#include "nanoformer/eval/choice_scoring.h"

namespace nf {
namespace {

// sum over the continuation of log softmax(logits)[token], one forward over (context + continuation)[:-1].
double logprob_by_hand(models::DecoderLM& model, const std::vector<int64_t>& context, const std::vector<int64_t>& cont) {
  NoGradGuard no_grad;
  std::vector<int64_t> ids = context;
  ids.insert(ids.end(), cont.begin(), cont.end() - 1);
  const auto T = static_cast<int64_t>(ids.size()), V = model.config().vocab_size;
  const Tensor logits = model.forward(Tensor::from_vector(ids, {1, T})).logits.contiguous();
  const float* z = logits.data<float>();
  double sum = 0.0;
  for (size_t t = 0; t < cont.size(); ++t) {
    const float* row = z + (static_cast<int64_t>(context.size()) - 1 + static_cast<int64_t>(t)) * V;
    double max = row[0], total = 0.0;
    for (int64_t v = 1; v < V; ++v) max = std::max(max, static_cast<double>(row[v]));
    for (int64_t v = 0; v < V; ++v) total += std::exp(static_cast<double>(row[v]) - max);
    sum += row[cont[t]] - max - std::log(total);
  }
  return sum;
}

std::unique_ptr<models::DecoderLM> tiny_model() {
  models::DecoderLMConfig c;
  c.vocab_size = 32, c.dim = 16, c.n_layers = 2, c.n_heads = 2, c.max_seq_len = 16, c.position = nn::PositionKind::rope;
  c.init_std = 0.3;
  Generator gen(3);
  auto model = std::make_unique<models::DecoderLM>(c, gen);
  model->eval();
  return model;
}

TEST(ChoiceScoring, EncodePairMatchesLmEvalWithAByteLevelBpe) {
  const auto expected = nlohmann::json::parse(tokenizer::read_file(NF_TEST_DATA_DIR "/eval/expected.json")).at("bpe_encode_pair");
  const auto tok = tokenizer::load_tokenizer(NF_TEST_DATA_DIR "/tokenizer/hf_gpt2.json");
  ASSERT_GE(expected.size(), 5u);
  for (const auto& pair : expected) {
    const eval::EncodedChoices e = eval::encode_choices(*tok, pair.at("context"), {pair.at("continuation")});
    EXPECT_EQ(e.context, pair.at("context_ids").get<std::vector<int64_t>>()) << pair.dump();
    EXPECT_EQ(e.continuations.at(0), pair.at("continuation_ids").get<std::vector<int64_t>>()) << pair.dump();
  }
}

TEST(ChoiceScoring, SharedPrefixScoresEqualAFullForwardPerChoice) {
  const auto owned = tiny_model();
  models::DecoderLM& model = *owned;
  const eval::EncodedChoices choices{.context = {3, 9, 1, 30, 7, 7},
                                      .continuations = {{5}, {2, 8, 11}, {4, 4, 4, 4, 20}, {2, 8, 11}, {0, 31}}};
  const std::vector<double> scores = eval::continuation_logprobs(model, choices);
  ASSERT_EQ(scores.size(), 5u);
  for (size_t c = 0; c < scores.size(); ++c) {
    const double by_hand = logprob_by_hand(model, choices.context, choices.continuations[c]);
    EXPECT_NEAR(scores[c], by_hand, 1e-5 * std::abs(by_hand)) << "choice " << c;
  }
  EXPECT_EQ(scores[1], scores[3]) << "identical continuations tie exactly";
  EXPECT_EQ(eval::argmax({1.0, 3.0, 3.0}), 1u);
  // a context of one token: nothing to prefill
  const std::vector<double> one = eval::continuation_logprobs(model, {.context = {12}, .continuations = {{1, 2}, {3}}});
  EXPECT_NEAR(one[0], logprob_by_hand(model, {12}, {1, 2}), 1e-5 * std::abs(one[0]));
}

TEST(ChoiceScoring, AContextLongerThanTheModelKeepsItsLastTokens) {
  const auto owned = tiny_model();
  models::DecoderLM& model = *owned;  // max_seq_len 16
  std::vector<int64_t> context;
  for (int i = 0; i < 20; ++i) context.push_back((i * 5 + 1) % 32);
  const eval::EncodedChoices choices{.context = context, .continuations = {{1, 2, 3, 4}, {6}}};
  const std::vector<double> scores = eval::continuation_logprobs(model, choices);
  const std::vector<int64_t> kept(context.end() - 13, context.end());  // 13 + 4 - 1 = 16 positions
  EXPECT_NEAR(scores[0], logprob_by_hand(model, kept, {1, 2, 3, 4}), 1e-5 * std::abs(scores[0]));
  EXPECT_NEAR(scores[1], logprob_by_hand(model, kept, {6}), 1e-5 * std::abs(scores[1]));
  try {
    eval::continuation_logprobs(model, {.context = {1}, .continuations = {std::vector<int64_t>(17, 2)}});
    FAIL() << "a continuation of 17 tokens fits no window of 16";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("17 tokens exceeds max_seq_len 16"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace nf
