// Tokenizer benchmarks: pre-tokenization, BPE encode (with and without the word cache), decode
// and training, on the committed test fixture (a 600-token BPE trained by HF on a small corpus,
// repeated to 1 MB). Set NF_BENCH_TOKENIZER=path/to/tokenizer.json and NF_BENCH_TEXT=path/to/text
// to measure a real tokenizer, e.g. GPT-2 on tinyshakespeare. Side-by-side numbers with Hugging
// Face tokenizers come from tools/tokenizer/compare_hf.py.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <string>

#include "nanoformer/tokenizer/bpe_trainer.h"
#include "nanoformer/tokenizer/tokenizer_json.h"

namespace {

namespace tk = nf::tokenizer;

std::string data_path(const std::string& name) {
  const std::string here = __FILE__;  // .../bench/bench_tokenizer.cpp
  return here.substr(0, here.rfind("/bench/")) + "/tests/fixtures/tokenizer/" + name;
}

const tk::BpeTokenizer& tokenizer() {
  static const tk::BpeTokenizer tok = [] {
    const char* path = std::getenv("NF_BENCH_TOKENIZER");
    return tk::load_tokenizer_json(path ? path : data_path("hf_gpt2.json"));
  }();
  return tok;
}

const std::string& text() {
  static const std::string t = [] {
    if (const char* path = std::getenv("NF_BENCH_TEXT")) return tk::read_file(path);
    const std::string corpus = tk::read_file(data_path("corpus.txt"));
    std::string out;
    while (out.size() < (1 << 20)) out += corpus;
    return out;
  }();
  return t;
}

void BM_Pretokenize(benchmark::State& state) {
  const auto pattern = static_cast<tk::SplitPattern>(state.range(0));
  for (auto _ : state) {
    size_t pieces = 0;
    tk::for_each_piece(text(), pattern, [&](std::string_view) { ++pieces; });
    benchmark::DoNotOptimize(pieces);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text().size()));
}
BENCHMARK(BM_Pretokenize)
    ->Arg(static_cast<int>(tk::SplitPattern::kGpt2))
    ->Arg(static_cast<int>(tk::SplitPattern::kGpt4));

void BM_Encode(benchmark::State& state) {
  std::vector<tk::TokenId> ids;
  for (auto _ : state) {
    ids.clear();
    tokenizer().encode(text(), ids);
    benchmark::DoNotOptimize(ids.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text().size()));
  state.counters["tokens"] = static_cast<double>(ids.size());
}
BENCHMARK(BM_Encode)->Unit(benchmark::kMillisecond);

// Every word through the BPE merge loop, as on a cold cache.
void BM_EncodeWithoutCache(benchmark::State& state) {
  std::vector<tk::TokenId> ids;
  const tk::BpeModel& model = tokenizer().model();
  for (auto _ : state) {
    ids.clear();
    tk::for_each_piece(text(), tokenizer().pre_tokenizer().pattern,
                       [&](std::string_view w) { model.encode_word(w, ids); });
    benchmark::DoNotOptimize(ids.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text().size()));
}
BENCHMARK(BM_EncodeWithoutCache)->Unit(benchmark::kMillisecond);

void BM_Decode(benchmark::State& state) {
  const std::vector<tk::TokenId> ids = tokenizer().encode(text());
  std::string out;
  for (auto _ : state) {
    out.clear();
    tokenizer().decode(ids, out);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text().size()));
}
BENCHMARK(BM_Decode)->Unit(benchmark::kMillisecond);

void BM_Train(benchmark::State& state) {
  tk::BpeTrainerOptions options;
  options.vocab_size = static_cast<size_t>(state.range(0));
  options.special_tokens = {"<|endoftext|>"};
  tk::WordCounts words(options.pattern, options.special_tokens);
  words.add_text(text());
  for (auto _ : state) benchmark::DoNotOptimize(tk::train_bpe(words, options).vocab_size());
}
BENCHMARK(BM_Train)->Arg(1000)->Arg(4000)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
