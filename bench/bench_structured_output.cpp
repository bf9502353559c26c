// Constrained decoding's cost (docs/serving.md, "Structured output"): decode tokens/s of a
// random-weight model with a JSON schema's mask applied at every step (GrammarConstraint: the
// vocabulary trie walked with the grammar's state, masks cached per state, a fresh constraint per
// output, so its cold start is counted) against the same decode without it, in the same run. Each
// iteration decodes 32 tokens after a 32-token prompt (forward of one token, mask, seeded sampling
// at temperature 1); an output the grammar ends starts a new one. The counter mask_us_per_token is
// the time in the constraint (mask and accept) per token. The reporter prints the median
// time ratio schema / free; tokens/s is the `items_per_second` column. The model is minimind2-small
// with MiniMind's tokenizer (6400 ids) from /work/shared/data or NF_BENCH_TOKENIZER (skipped when
// the file is missing).
//   NANOFORMER_THREADS=2 ./build/bench_structured_output --benchmark_repetitions=5 --benchmark_enable_random_interleaving=true
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <vector>

#include "bench_support.h"
#include "nanoformer/autograd/grad_mode.h"
#include "nanoformer/grammar/constraint.h"
#include "nanoformer/grammar/json_schema.h"
#include "nanoformer/infer/sampler.h"
#include "nanoformer/models/config/model_config.h"
#include "nanoformer/models/decoder_lm.h"
#include "nanoformer/tokenizer/byte_level.h"
#include "nanoformer/tokenizer/jsonl.h"

namespace {

using namespace nf;

constexpr int64_t kPrompt = 32, kNew = 32;

// The schema of tools/serve/structured_output.py.
constexpr const char* kSchema = R"({"type": "object", "properties": {
  "name": {"type": "string", "maxLength": 12}, "age": {"type": "integer"},
  "email": {"anyOf": [{"type": "string", "maxLength": 20}, {"type": "null"}]},
  "tags": {"type": "array", "items": {"enum": ["red", "green", "blue"]}, "maxItems": 3},
  "address": {"$ref": "#/$defs/address"}, "score": {"type": "number"}, "active": {"type": "boolean"}},
  "required": ["name", "age", "tags", "address"], "additionalProperties": false,
  "$defs": {"address": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 10},
    "zip": {"type": "string", "minLength": 2, "maxLength": 5}}, "required": ["city"], "additionalProperties": false}}})";

struct Case {
  std::unique_ptr<models::DecoderLM> model;
  std::unique_ptr<tokenizer::Tokenizer> tokenizer;
  std::shared_ptr<const grammar::TokenTrie> trie;
  std::shared_ptr<const grammar::Grammar> grammar;
  int64_t eos = -1;
};

// minimind2-small and its tokenizer (null when the tokenizer file is missing).
Case* get_case() {
  static std::optional<Case> the_case;
  static bool tried = false;
  if (!tried) {
    tried = true;
    const char* env = std::getenv("NF_BENCH_TOKENIZER");
    const std::string path = env ? env : "/work/shared/data/minimind2_tokenizer.json";
    if (!std::filesystem::exists(path)) return nullptr;
    Case c;
    c.tokenizer = tokenizer::load_tokenizer(path);
    c.model = std::make_unique<models::DecoderLM>(models::preset_config("minimind2-small"));
    c.model->eval();
    c.trie = grammar::TokenTrie::of(*c.tokenizer);
    c.grammar = std::make_shared<const grammar::Grammar>(
        grammar::compile_gbnf(grammar::json_schema_grammar(nlohmann::ordered_json::parse(kSchema)).gbnf));
    c.eos = tokenizer::end_of_text_id(*c.tokenizer).value_or(-1);
    the_case = std::move(c);
  }
  return the_case ? &*the_case : nullptr;
}

void decode(benchmark::State& state, bool constrained) {
  Case* c = get_case();
  if (!c) {
    state.SkipWithError("the tokenizer file is missing");
    return;
  }
  NoGradGuard no_grad;
  nn::KVCache cache = c->model->make_cache(1, kPrompt + kNew + 1);
  c->model->forward_cached(Tensor::from_vector(std::vector<int64_t>(kPrompt, 5), {1, kPrompt}), cache, true);
  const auto vocab = static_cast<size_t>(c->model->config().vocab_size);
  std::vector<float> row(vocab);
  uint64_t seed = 0;
  double mask_seconds = 0;  // in the constraint: masks and accepting the tokens
  for (auto _ : state) {
    cache.truncate(kPrompt);
    infer::Sampler sampler({.temperature = 1.0, .seed = ++seed, .vocab_limit = static_cast<int64_t>(c->tokenizer->vocab_size())});
    std::optional<grammar::GrammarConstraint> constraint;
    if (constrained) constraint.emplace(c->grammar, c->trie, std::vector<int64_t>{c->eos});
    int64_t id = 7;
    for (int64_t t = 0; t < kNew; ++t) {
      const Tensor logits = c->model->forward_cached(Tensor::from_vector(std::vector<int64_t>{id}, {1, 1}), cache, true);
      row.assign(logits.data<float>(), logits.data<float>() + vocab);
      const auto start = std::chrono::steady_clock::now();
      if (constraint) constraint->apply(row);
      const auto masked = std::chrono::steady_clock::now();
      id = sampler.next(row, {});
      if (!constraint) continue;
      const auto sampled = std::chrono::steady_clock::now();
      constraint->accept(id);
      if (id == c->eos || constraint->finished()) constraint.emplace(c->grammar, c->trie, std::vector<int64_t>{c->eos});
      mask_seconds += std::chrono::duration<double>(masked - start + (std::chrono::steady_clock::now() - sampled)).count();
    }
  }
  state.SetItemsProcessed(state.iterations() * kNew);
  if (constrained) state.counters["mask_us_per_token"] = 1e6 * mask_seconds / static_cast<double>(state.iterations() * kNew);
}

// The constraint alone over GPT-2's 50257 byte strings (model.vocab of /work/shared/data/
// gpt2_tokenizer.json or NF_BENCH_GPT2_VOCAB, read directly): one output of the schema, 64 steps,
// each a mask from a fresh constraint's cache (so every state's first mask, the trie walked) and
// a seeded pick among the allowed tokens taken; ms per output, and tokens/s.
void BM_constraint_gpt2_vocab(benchmark::State& state) {
  const char* env = std::getenv("NF_BENCH_GPT2_VOCAB");
  const std::string path = env ? env : "/work/shared/data/gpt2_tokenizer.json";
  if (!std::filesystem::exists(path)) {
    state.SkipWithError("the GPT-2 tokenizer.json is missing");
    return;
  }
  static const std::shared_ptr<const grammar::TokenTrie> trie = [&] {
    const auto j = nlohmann::json::parse(tokenizer::read_file(path));
    std::vector<std::string> bytes(j["model"]["vocab"].size() + 1);
    for (const auto& [token, id] : j["model"]["vocab"].items())
      if (id.get<size_t>() < bytes.size()) bytes[id.get<size_t>()] = tokenizer::byte_level::decode(token).value_or("");
    return std::make_shared<const grammar::TokenTrie>(std::move(bytes));
  }();
  static const auto grammar = std::make_shared<const grammar::Grammar>(
      grammar::compile_gbnf(grammar::json_schema_grammar(nlohmann::ordered_json::parse(kSchema)).gbnf));
  const int64_t end = static_cast<int64_t>(trie->vocab_size()) - 1;
  uint64_t seed = 0;
  int64_t tokens = 0;
  for (auto _ : state) {
    grammar::GrammarConstraint constraint(grammar, trie, {end});
    std::mt19937_64 pick(++seed);
    for (int64_t t = 0; t < 64 && !constraint.finished(); ++t) {
      const std::vector<uint64_t>& mask = constraint.allowed();
      std::vector<int64_t> allowed;
      for (int64_t id = 0; id < end; ++id)
        if ((mask[static_cast<size_t>(id) / 64] >> (id % 64)) & 1) allowed.push_back(id);
      if (allowed.empty()) break;
      constraint.accept(allowed[pick() % allowed.size()]);
      ++tokens;
    }
  }
  state.SetItemsProcessed(tokens);
}

void BM_decode_json_schema(benchmark::State& state) { decode(state, true); }
void BM_decode_free(benchmark::State& state) { decode(state, false); }

}  // namespace

BENCHMARK(BM_decode_json_schema)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_decode_free)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_constraint_gpt2_vocab)->Unit(benchmark::kMillisecond)->UseRealTime();

int main(int argc, char** argv) {
  return nf::bench::run_benchmarks(argc, argv, {{"BM_decode_json_schema", "BM_decode_free"}});
}
