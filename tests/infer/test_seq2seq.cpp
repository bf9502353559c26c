// Encoder-decoder generation (infer/seq2seq.h) against tools/golden/fixtures_seq2seq_generate.py:
// the cached decoder gives decode()'s logits at every step (one token at a time, chunks, a memory
// shared by several rows, a padded source, rows reordered as beams are), greedy and beam search
// (early_stopping false / true / never, length penalties 1, 0, 1.5, several hypotheses with their
// scores, every beam running to max_new_tokens) equal transformers' beam search token for token;
// one beam is greedy; the length penalty changes the best hypothesis; bad input names the numbers.
#include "nanoformer/infer/seq2seq.h"

#include <gtest/gtest.h>

#include <cstdio>

#include "nanoformer/ops/elementwise.h"
#include "nanoformer/ops/factory.h"
#include "nanoformer/ops/indexing.h"
#include "nanoformer/ops/join.h"
#include "nanoformer/ops/reduce.h"
#include "nanoformer/ops/view.h"
#include "support/module_golden.h"
#include "support/testing.h"

namespace nf::infer {
namespace {

using testing::Golden;

constexpr double kLogitTolerance = 1e-5;  // max abs logit error, fp32

// The fixture's model (2 + 2 layers, dim 16, target vocab 48, max_seq_len 16) with its weights, in eval mode.
struct FixtureModel {
  FixtureModel()
      : golden("seq2seq_generate"),
        model(models::parse_encoder_decoder_config(golden.cases()["model"]["config"].get<std::string>(), "seq2seq")) {
    testing::load_case_parameters(model, golden, "model");
    model.eval();
  }
  Golden golden;
  models::EncoderDecoder model;
};

double max_abs_error(const Tensor& a, const Tensor& b) { return max(abs(a - b)).item(); }

Tensor random_ids(int64_t rows, int64_t length, int64_t vocab, uint64_t seed) {
  Generator gen(seed);
  return randint(0, vocab, {rows, length}, gen);
}

// Feeds tgt (rows, T) in chunks of the given sizes; the largest difference of the cached logits
// from decode() over the whole target.
double cached_error(models::EncoderDecoder& model, const Tensor& memory, const Tensor& tgt,
                    const std::vector<int64_t>& chunks, const Tensor& src_padding = {}) {
  const int64_t rows = tgt.size(0);
  const Tensor full_memory = memory.size(0) == rows ? memory : expand(memory, {rows, memory.size(1), memory.size(2)});
  const Tensor full_padding = !src_padding.defined() || src_padding.size(0) == rows
                                  ? src_padding
                                  : expand(src_padding, {rows, src_padding.size(1)});
  const Tensor expected = model.decode(tgt, full_memory, {.src = full_padding, .tgt = {}});
  models::DecoderState state = model.start_decoding(memory, rows, tgt.size(1), src_padding);
  double error = 0;
  int64_t done = 0;
  for (const int64_t n : chunks) {
    const Tensor logits = model.decode_cached(narrow(tgt, 1, done, n), state);
    error = std::max(error, max_abs_error(logits, narrow(expected, 1, done, n)));
    done += n;
  }
  return error;
}

TEST(Seq2SeqCache, DecodeCachedEqualsDecodeAtEveryStep) {
  FixtureModel f;
  const Tensor src = random_ids(2, 7, 40, 1), tgt = random_ids(2, 12, 48, 2);
  Tensor src_padding = ones({2, 7}, DType::boolean);
  copy_into(narrow(narrow(src_padding, 0, 1, 1), 1, 4, 3), zeros({1, 3}, DType::boolean));  // row 1: 4 real tokens
  const Tensor memory = f.model.encode(src, src_padding);
  const std::vector<int64_t> one_by_one(12, 1);
  const double steps = cached_error(f.model, memory, tgt, one_by_one, src_padding);
  const double chunked = cached_error(f.model, memory, tgt, {5, 1, 3, 1, 2}, src_padding);
  // one memory row serving three target rows (the beams of one source)
  const double shared = cached_error(f.model, narrow(memory, 0, 0, 1), random_ids(3, 12, 48, 3), one_by_one);
  std::printf("cached decode vs decode: max abs error %.3g (one token per step), %.3g (chunks), %.3g (shared memory)\n",
              steps, chunked, shared);
  EXPECT_LE(steps, kLogitTolerance);
  EXPECT_LE(chunked, kLogitTolerance);
  EXPECT_LE(shared, kLogitTolerance);
}

TEST(Seq2SeqCache, SelectRowsContinuesEachRowFromItsParent) {
  FixtureModel f;
  const Tensor memory = f.model.encode(random_ids(1, 6, 40, 4));
  const Tensor prefix = random_ids(3, 5, 48, 5), suffix = random_ids(3, 4, 48, 6);
  models::DecoderState state = f.model.start_decoding(memory, 3, 9);
  f.model.decode_cached(prefix, state);
  const std::vector<int64_t> parents{2, 0, 2};
  state.select_rows(parents);
  const Tensor logits = f.model.decode_cached(suffix, state);
  // the same as decoding each parent's prefix followed by the row's suffix from scratch
  const Tensor reordered = index_select(prefix, 0, Tensor::from_vector(parents, {3}));
  const Tensor expected = f.model.decode(cat({reordered, suffix}, 1), expand(memory, {3, 6, 16}));
  const double error = max_abs_error(logits, narrow(expected, 1, 5, 4));
  std::printf("after select_rows: max abs error %.3g\n", error);
  EXPECT_LE(error, kLogitTolerance);
  // a memory of one row per cache row is reordered with it
  const Tensor memories = f.model.encode(random_ids(3, 6, 40, 7));
  models::DecoderState rows = f.model.start_decoding(memories, 3, 9);
  f.model.decode_cached(prefix, rows);
  rows.select_rows(parents);
  const Tensor per_row = f.model.decode(cat({reordered, suffix}, 1), index_select(memories, 0, Tensor::from_vector(parents, {3})));
  EXPECT_LE(max_abs_error(f.model.decode_cached(suffix, rows), narrow(per_row, 1, 5, 4)), kLogitTolerance);
}

// A golden case's options, source and expected hypotheses.
struct GenerationCase {
  GenerationCase(const Golden& golden, const std::string& name) {
    const nlohmann::json& c = golden.cases()[name];
    const nlohmann::json& model = golden.cases()["model"];
    options = {.decoder_start_id = model["decoder_start"].get<int64_t>(),
               .eos_id = model["eos"].get<int64_t>(),
               .max_new_tokens = c["max_new_tokens"].get<int64_t>(),
               .num_beams = c.value("num_beams", int64_t{1}),
               .length_penalty = c.value("length_penalty", 1.0),
               .early_stopping = early_stopping_from_name(c.value("early_stopping", std::string("false"))),
               .num_return = 1};
    src = golden.get(name, "src").to_vector<int64_t>();
    const Tensor tokens = golden.get(name, "tokens");
    const std::vector<int64_t> lengths = golden.get(name, "lengths").to_vector<int64_t>();
    const std::vector<int64_t> flat = tokens.to_vector<int64_t>();
    for (size_t r = 0; r < lengths.size(); ++r) {
      const auto begin = flat.begin() + static_cast<std::ptrdiff_t>(r * static_cast<size_t>(tokens.size(1)));
      expected.push_back(std::vector<int64_t>(begin, begin + lengths[r]));
    }
    if (golden.has(name, "scores")) scores = golden.get(name, "scores").to_vector<float>();
    options.num_return = static_cast<int64_t>(expected.size());
  }
  Seq2SeqOptions options;
  std::vector<int64_t> src;
  std::vector<std::vector<int64_t>> expected;
  std::vector<float> scores;
};

void check_beam_case(const std::string& name) {
  FixtureModel f;
  const GenerationCase c(f.golden, name);
  const std::vector<Hypothesis> hypotheses = beam_search(f.model, c.src, c.options);
  ASSERT_EQ(hypotheses.size(), c.expected.size());
  double score_error = 0;
  for (size_t r = 0; r < hypotheses.size(); ++r) {
    EXPECT_EQ(hypotheses[r].tokens, c.expected[r]) << name << ": hypothesis " << r;
    score_error = std::max(score_error, std::abs(hypotheses[r].score - c.scores[r]));
  }
  std::printf("%s: %zu hypotheses equal transformers' beam search, max |score - torch| = %.3g\n", name.c_str(),
              hypotheses.size(), score_error);
  EXPECT_LE(score_error, 1e-5);
}

TEST(Seq2SeqGolden, GreedyEqualsTorch) {
  FixtureModel f;
  const GenerationCase c(f.golden, "greedy");
  EXPECT_EQ(seq2seq_greedy(f.model, c.src, c.options), c.expected[0]);
}
TEST(Seq2SeqGolden, BeamSearchThreeBeams) { check_beam_case("beams3"); }
TEST(Seq2SeqGolden, BeamSearchWithoutLengthPenalty) { check_beam_case("beams3_lp0"); }
TEST(Seq2SeqGolden, BeamSearchEarlyStoppingTrue) { check_beam_case("beams4_early"); }
TEST(Seq2SeqGolden, BeamSearchEarlyStoppingNever) { check_beam_case("beams2_never"); }
TEST(Seq2SeqGolden, BeamSearchToMaxNewTokens) { check_beam_case("beams3_maxlen"); }

TEST(Seq2Seq, LengthPenaltyChangesTheBestHypothesis) {
  FixtureModel f;
  const GenerationCase with_penalty(f.golden, "beams3"), without(f.golden, "beams3_lp0");
  ASSERT_EQ(with_penalty.src, without.src);
  const std::vector<int64_t> favouring_length = beam_search(f.model, with_penalty.src, with_penalty.options)[0].tokens;
  const std::vector<int64_t> summed = beam_search(f.model, without.src, without.options)[0].tokens;
  EXPECT_NE(favouring_length, summed);
  EXPECT_GT(favouring_length.size(), summed.size());
}

TEST(Seq2Seq, OneBeamIsGreedy) {
  FixtureModel f;
  Seq2SeqOptions options = GenerationCase(f.golden, "greedy").options;
  for (uint64_t seed = 10; seed < 14; ++seed) {
    const std::vector<int64_t> src = random_ids(1, 6, 40, seed).to_vector<int64_t>();
    options.num_beams = 1;
    const std::vector<Hypothesis> one = beam_search(f.model, src, options);
    ASSERT_EQ(one.size(), 1u);
    EXPECT_EQ(one[0].tokens, seq2seq_greedy(f.model, src, options));
  }
}

TEST(Seq2Seq, BadInputNamesTheNumbers) {
  FixtureModel f;
  const Seq2SeqOptions ok{.decoder_start_id = 1, .eos_id = 2, .max_new_tokens = 4, .num_beams = 2};
  const std::vector<int64_t> src{3, 4, 5};
  EXPECT_THROW_WITH(beam_search(f.model, std::vector<int64_t>(17, 3), ok), "source of 17 tokens", "max_seq_len 16");
  EXPECT_THROW_WITH(beam_search(f.model, {3, 40}, ok), "source id 40", "source vocabulary of 40");
  EXPECT_THROW_WITH(beam_search(f.model, {}, ok), "source is empty");
  Seq2SeqOptions bad = ok;
  bad.decoder_start_id = 48;
  EXPECT_THROW_WITH(beam_search(f.model, src, bad), "decoder start id 48", "target vocabulary of 48");
  bad = ok, bad.eos_id = -1;
  EXPECT_THROW_WITH(beam_search(f.model, src, bad), "eos id -1");
  bad = ok, bad.max_new_tokens = 17;
  EXPECT_THROW_WITH(beam_search(f.model, src, bad), "max_new_tokens 17", "max_seq_len = 16");
  bad = ok, bad.num_return = 3;
  EXPECT_THROW_WITH(beam_search(f.model, src, bad), "num_return 3", "num_beams = 2");
  bad = ok, bad.num_beams = 0;
  EXPECT_THROW_WITH(beam_search(f.model, src, bad), "num_beams must be positive");
  bad = ok, bad.max_new_tokens = 0;
  EXPECT_THROW_WITH(seq2seq_greedy(f.model, src, bad), "max_new_tokens 0");
  EXPECT_THROW_WITH(early_stopping_from_name("sometimes"), "unknown early_stopping 'sometimes'", "false, true, never");
  f.model.train();
  EXPECT_THROW_WITH(f.model.start_decoding(f.model.encode(random_ids(1, 3, 40, 8)), 1), "call eval() first");
}

}  // namespace
}  // namespace nf::infer
