#pragma once
// One side of the training benchmark: nanoformer's full training step of a preset (forward with
// targets, backward, AdamW step with nanoGPT's defaults, zero_grad), timed step by step. The
// PyTorch side is tools/bench/torch_training.py; bench_training.cpp runs both, each in its own
// process, and compares them.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "nanoformer/nanoformer.h"
#include "nanoformer/train/adam.h"

namespace nf::bench {

struct TrainingStepOptions {
  std::string preset = "minimind2-small";
  int64_t batch = 8, length = 256;
  std::string precision = "fp32";  // fp32 | bf16
  int warmup = 2, steps = 5;
};

struct TrainingStepResult {
  int64_t tokens_per_step = 0;
  std::vector<double> step_seconds;  // the measured steps, in order
  std::vector<double> step_cpu_seconds;  // CPU time of every thread of the process, per measured step
  double final_loss = 0;
  // tokens per step / the median step time
  double tokens_per_s() const {
    std::vector<double> s = step_seconds;
    std::nth_element(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(s.size() / 2), s.end());
    return static_cast<double>(tokens_per_step) / s[s.size() / 2];
  }
};

// nanoGPT's configure_optimizers: weight decay 0.1 on every parameter of 2 or more dims, none on
// the others; AdamW lr 6e-4, betas (0.9, 0.95), eps 1e-8.
inline std::vector<train::ParamGroup> nanogpt_param_groups(const nn::Module& model) {
  train::ParamGroup decay{.params = {}, .lr = 6e-4, .weight_decay = 0.1};
  train::ParamGroup no_decay{.params = {}, .lr = 6e-4, .weight_decay = 0.0};
  for (const Tensor& p : model.parameters()) (p.dim() >= 2 ? decay : no_decay).params.push_back(p);
  return {decay, no_decay};
}

// The bf16 row's hook. Once nf::AutocastGuard exists (branch bf16), bf16 runs the forward (loss
// included) under `nf::AutocastGuard autocast(nf::DType::bf16);` as torch.autocast does, backward
// and the optimizer step outside it. Until then a bf16 run reports itself as not available.
inline constexpr bool kAutocastAvailable = false;

inline Tensor forward_loss(models::DecoderLM& lm, const Tensor& ids, const Tensor& targets, const std::string& precision) {
  NF_CHECK(precision == "fp32", "bench_training: precision ", precision, " needs nf::AutocastGuard (not built yet)");
  return lm.forward(ids, targets).loss;
}

// User + system CPU seconds of the whole process so far.
inline double process_cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

// Builds the preset, runs `warmup` untimed steps and `steps` timed ones (seconds per step).
inline TrainingStepResult run_training_steps(const TrainingStepOptions& o) {
  Generator gen(1);
  models::DecoderLM lm(models::preset_config(o.preset), gen);
  lm.train();
  train::AdamW optimizer(nanogpt_param_groups(lm), {.beta1 = 0.9, .beta2 = 0.95, .eps = 1e-8});
  const int64_t vocab = lm.config().vocab_size;
  const Tensor ids = randint(0, vocab, {o.batch, o.length}, gen), targets = randint(0, vocab, {o.batch, o.length}, gen);
  TrainingStepResult result;
  result.tokens_per_step = o.batch * o.length;
  for (int step = 0; step < o.warmup + o.steps; ++step) {
    if (step == o.warmup) profile::reset();  // NF_PROFILE: the measured steps only
    const auto start = std::chrono::steady_clock::now();
    const double cpu_start = process_cpu_seconds();
    const Tensor loss = forward_loss(lm, ids, targets, o.precision);
    loss.backward();
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
    result.final_loss = loss.item();
  }
  return result;
}

}  // namespace nf::bench
