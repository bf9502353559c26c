// Continuous batching's decode step (docs/serving.md): R sequences at different lengths, each in
// its own cache, decoded in one DecoderLM::forward_cached over their caches, against the same R sequences
// decoded one at a time (R forward_cached calls of one row) in the same run; minimind2-small with
// random weights, fp32, prompts of 20 + 7r tokens. The reporter prints the median time ratio
// batched / one at a time; tokens/s is the `items_per_second` column. And a paged cache (blocks
// of 32, what the server's prefix cache shares) against a contiguous one: a prompt chunk of 256
// tokens and a decoded token after a cached prefix of 1,024 (block_len 0 = contiguous).
//   NANOFORMER_THREADS=1 ./build/bench_batched_decode --benchmark_repetitions=5 --benchmark_enable_random_interleaving=true
#include <memory>
#include <vector>

#include "bench_support.h"
#include "nanoformer/autograd/grad_mode.h"
#include "nanoformer/models/config/model_config.h"
#include "nanoformer/models/decoder_lm.h"

namespace {

using namespace nf;

models::DecoderLM& model() {
  static const std::unique_ptr<models::DecoderLM> m = [] {
    auto built = std::make_unique<models::DecoderLM>(models::preset_config("minimind2-small"));
    built->eval();
    return built;
  }();
  return *m;
}

struct Sequences {
  std::vector<nn::KVCache> caches;
  std::vector<int64_t> lengths;
  explicit Sequences(int64_t rows) {
    NoGradGuard no_grad;
    for (int64_t r = 0; r < rows; ++r) {
      caches.push_back(model().make_cache(1, 512));
      lengths.push_back(20 + 7 * r);
      model().forward_cached(Tensor::from_vector(std::vector<int64_t>(static_cast<size_t>(lengths.back()), 5), {1, lengths.back()}),
                             caches.back(), true);
    }
  }
  void roll_back() {
    for (size_t r = 0; r < caches.size(); ++r) caches[r].truncate(lengths[r]);
  }
};

void BM_nf_batched_decode(benchmark::State& state) {
  const int64_t rows = state.range(0);
  Sequences s(rows);
  std::vector<nn::KVCache*> caches;
  for (nn::KVCache& c : s.caches) caches.push_back(&c);
  const Tensor ids = Tensor::from_vector(std::vector<int64_t>(static_cast<size_t>(rows), 7), {rows, 1});
  for (auto _ : state) {
    benchmark::DoNotOptimize(model().forward_cached(ids, caches, true).raw_data());
    s.roll_back();
  }
  state.SetItemsProcessed(state.iterations() * rows);
}

void BM_one_at_a_time_decode(benchmark::State& state) {
  const int64_t rows = state.range(0);
  Sequences s(rows);
  const Tensor id = Tensor::from_vector(std::vector<int64_t>{7}, {1, 1});
  for (auto _ : state) {
    for (nn::KVCache& c : s.caches) benchmark::DoNotOptimize(model().forward_cached(id, c, true).raw_data());
    s.roll_back();
  }
  state.SetItemsProcessed(state.iterations() * rows);
}

// One sequence with a 1,024-token prefix cached: `fed` more tokens in one forward, rolled back after.
void after_prefix(benchmark::State& state, int64_t fed) {
  NoGradGuard no_grad;
  nn::KVCache cache = model().make_cache(1, 2048, QuantType::f32, state.range(0));
  model().forward_cached(Tensor::from_vector(std::vector<int64_t>(1024, 5), {1, 1024}), cache, true);
  const Tensor ids = Tensor::from_vector(std::vector<int64_t>(static_cast<size_t>(fed), 7), {1, fed});
  for (auto _ : state) {
    benchmark::DoNotOptimize(model().forward_cached(ids, cache, true).raw_data());
    cache.truncate(1024);
  }
  state.SetItemsProcessed(state.iterations() * fed);
}

void BM_prefill_256_after_1024(benchmark::State& state) { after_prefix(state, 256); }
void BM_decode_after_1024(benchmark::State& state) { after_prefix(state, 1); }

}  // namespace

BENCHMARK(BM_prefill_256_after_1024)->Arg(0)->Arg(32)->ArgName("block_len")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_decode_after_1024)->Arg(0)->Arg(32)->ArgName("block_len")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_nf_batched_decode)->Arg(1)->Arg(2)->Arg(4)->Arg(8)->Arg(16)->ArgName("rows")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_one_at_a_time_decode)->Arg(1)->Arg(2)->Arg(4)->Arg(8)->Arg(16)->ArgName("rows")->Unit(benchmark::kMillisecond)->UseRealTime();

int main(int argc, char** argv) {
  return nf::bench::run_benchmarks(argc, argv, {{"BM_nf_batched_decode", "BM_one_at_a_time_decode"}});
}
