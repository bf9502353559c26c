// Whole models: DecoderLM forward (eval, no autograd) and a training step's forward + backward
// (loss from targets, every parameter gradient) for presets of configs/, at the batch and length
// of a small CPU run. PyTorch's timings of the same models and shapes: tools/bench/torch_models.py.
#include <benchmark/benchmark.h>

#include <string>

#include "bench_support.h"
#include "nanoformer/nanoformer.h"

namespace {

using nf::Tensor;

// (preset, batch, length) per benchmark argument index
struct Case {
  const char* preset;
  int64_t batch, length;
};
constexpr Case kCases[] = {{"llama2c-stories260k", 8, 256}, {"gpt-mini", 4, 256}, {"minimind2-small", 1, 256}};

struct Model {
  std::shared_ptr<nf::models::DecoderLM> lm;
  Tensor ids, targets;
  explicit Model(const benchmark::State& state) {
    const Case& c = kCases[state.range(0)];
    nf::Generator gen(1);
    lm = std::make_shared<nf::models::DecoderLM>(nf::models::preset_config(c.preset), gen);
    ids = nf::randint(0, lm->config().vocab_size, {c.batch, c.length}, gen);
    targets = nf::randint(0, lm->config().vocab_size, {c.batch, c.length}, gen);
  }
};

void label(benchmark::State& state) {
  const Case& c = kCases[state.range(0)];
  state.SetLabel(std::string(c.preset) + " B=" + std::to_string(c.batch) + " T=" + std::to_string(c.length));
  state.SetItemsProcessed(state.iterations() * c.batch * c.length);  // tokens
}

void BM_model_forward(benchmark::State& state) {
  Model m(state);
  m.lm->eval();
  nf::NoGradGuard no_grad;
  for (auto _ : state) benchmark::DoNotOptimize(m.lm->forward(m.ids).logits.raw_data());
  label(state);
}

void BM_model_train_step(benchmark::State& state) {
  Model m(state);
  m.lm->train();
  for (auto _ : state) {
    m.lm->forward(m.ids, m.targets).loss.backward();
    m.lm->zero_grad();
  }
  label(state);
}

BENCHMARK(BM_model_forward)->DenseRange(0, 2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_model_train_step)->DenseRange(0, 2)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

int main(int argc, char** argv) { return nf::bench::run_benchmarks(argc, argv); }
