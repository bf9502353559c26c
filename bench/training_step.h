#pragma once
// One side of the training benchmark: nanoformer's full training step of a preset (forward with
// targets, backward, AdamW step with nanoGPT's defaults, zero_grad), timed step by step. The
// PyTorch side is tools/bench/torch_training.py; bench_training.cpp runs both, each in its own
// process, and compares them.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "nanoformer/nanoformer.h"
#include "nanoformer/ops/autocast.h"
#include "nanoformer/optim/adam.h"
#include "nanoformer/optim/param_groups.h"

namespace nf::bench {

struct TrainingStepOptions {
  std::string preset = "minimind2-small";
  int64_t batch = 8, length = 256;
  std::string precision = "fp32";  // fp32 | bf16
  int warmup = 2, steps = 5;
  // false: the same random batch every step (speed only); true: a fresh batch of markov_batch each
  // step, text a model can learn (the loss curve of bf16 against fp32)
  bool learnable_data = false;
};

struct TrainingStepResult {
  int64_t tokens_per_step = 0;
  std::vector<double> step_seconds;  // the measured steps, in order
  std::vector<double> step_cpu_seconds;  // CPU time of every thread of the process, per measured step
  double final_loss = 0;
  std::vector<double> losses;  // every step's loss, warm-up included
  // tokens per step / the median step time
  double tokens_per_s() const {
    std::vector<double> s = step_seconds;
    std::nth_element(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(s.size() / 2), s.end());
    return static_cast<double>(tokens_per_step) / s[s.size() / 2];
  }
};

// User + system CPU seconds of the whole process so far.
inline double process_cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

// Batch `step` of a seeded first-order Markov chain over the first 512 ids of the vocabulary in
// which every token has 4 equally likely successors: ln 512 = 6.24 nats for the unigram, ln 4 =
// 1.39 at best, against ln V at the start, so a model's loss falls from its first steps. Inputs
// and targets are one sequence shifted by one.
inline std::pair<Tensor, Tensor> markov_batch(int64_t vocab_size, int64_t batch, int64_t length, int step) {
  constexpr int64_t kSuccessors = 4;
  const int64_t vocab = std::min<int64_t>(vocab_size, 512);
  Generator table_gen(7), step_gen(1000 + static_cast<uint64_t>(step));
  const std::vector<int64_t> next = randint(0, vocab, {vocab * kSuccessors}, table_gen).to_vector<int64_t>();
  const std::vector<int64_t> choice = randint(0, kSuccessors, {batch, length + 1}, step_gen).to_vector<int64_t>();
  const std::vector<int64_t> first = randint(0, vocab, {batch}, step_gen).to_vector<int64_t>();
  Tensor ids = Tensor::empty({batch, length}, DType::i64), targets = Tensor::empty({batch, length}, DType::i64);
  int64_t *x = ids.data<int64_t>(), *y = targets.data<int64_t>();
  for (int64_t b = 0; b < batch; ++b) {
    int64_t token = first[b];
    for (int64_t t = 0; t < length; ++t) {
      x[b * length + t] = token;
      token = next[token * kSuccessors + choice[b * (length + 1) + t]];
      y[b * length + t] = token;
    }
  }
  return {ids, targets};
}

// Builds the preset, runs `warmup` untimed steps and `steps` timed ones (seconds per step).
inline TrainingStepResult run_training_steps(const TrainingStepOptions& o) {
  NF_CHECK(o.precision == "fp32" || o.precision == "bf16", "bench_training: precision ", o.precision,
           " is not fp32 or bf16");
  Generator gen(1);
  models::DecoderLM lm(models::preset_config(o.preset), gen);
  lm.train();
  // nanoGPT's configure_optimizers: AdamW lr 6e-4, betas (0.9, 0.95), eps 1e-8, weight decay 0.1
  // on every parameter of 2 or more dims, none on the others
  optim::AdamW optimizer(optim::default_param_groups(lm, 6e-4, 0.1), {.beta1 = 0.9, .beta2 = 0.95, .eps = 1e-8});
  const int64_t vocab = lm.config().vocab_size;
  Tensor ids = randint(0, vocab, {o.batch, o.length}, gen), targets = randint(0, vocab, {o.batch, o.length}, gen);
  TrainingStepResult result;
  result.tokens_per_step = o.batch * o.length;
  for (int step = 0; step < o.warmup + o.steps; ++step) {
    if (step == o.warmup) profile::reset();  // NF_PROFILE: the measured steps only
    if (o.learnable_data) std::tie(ids, targets) = markov_batch(vocab, o.batch, o.length, step);
    const auto start = std::chrono::steady_clock::now();
    const double cpu_start = process_cpu_seconds();
    {
      // bf16: forward and backward under autocast (as the trainer), the optimizer outside it
      std::optional<AutocastGuard> autocast;
      if (o.precision == "bf16") autocast.emplace(DType::bf16);
      const Tensor loss = lm.forward(ids, targets).loss;
      loss.backward();
      result.final_loss = loss.item();
      result.losses.push_back(result.final_loss);
    }
    {
      profile::Scope scope("optimizer step + zero_grad");
      optimizer.step();
      optimizer.zero_grad();
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (step >= o.warmup) {
      result.step_seconds.push_back(s);
      result.step_cpu_seconds.push_back(process_cpu_seconds() - cpu_start);
    }
  }
  return result;
}

}  // namespace nf::bench
