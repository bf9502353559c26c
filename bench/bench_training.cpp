// The training benchmark of `make bench`: tokens/s and peak memory of a full training step
// (forward with targets, backward, AdamW step, zero_grad) of a preset, nanoformer beside PyTorch
// on the same config and threads, fp32 and bf16 (torch.autocast), with the machine's GEMM limits.
//
// Each side runs in its own process (peak memory = the process's RSS high-water mark, from
// wait4), and the processes alternate over several rounds, so that load from other work on a
// shared machine hits both sides alike; the table gives medians over rounds and the median of the
// per-round ratios. The PyTorch side (tools/bench/torch_training.py) runs only when the Python
// has torch (scripts/install-python.sh); otherwise it is reported as skipped.
//
//   bench_training [--preset minimind2-small] [--batch 8] [--length 256] [--threads 2]
//                  [--rounds 3] [--warmup 2] [--steps 5] [--precisions fp32,bf16]
//                  [--python .venv/bin/python] [--no-limits] [--curve-steps 50]
//   bench_training --worker fp32|bf16|gemm-limit-fp32|gemm-limit-bf16|curve-fp32|curve-bf16 ...
//                  one process's part
//                  (what the driver spawns; with NF_PROFILE=1 a training worker prints its per-op table)
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "bench_process.h"
#include "nanoformer/ops/autocast.h"
#include "training_gemm_limit.h"
#include "training_step.h"

namespace {

using namespace nf::bench;

struct Options {
  nf::bench::TrainingStepOptions step;
  int threads = 2, rounds = 3;
  std::vector<std::string> precisions{"fp32", "bf16"};
  std::string python = std::string(NF_SOURCE_DIR) + "/.venv/bin/python";
  std::string torch_script = std::string(NF_SOURCE_DIR) + "/tools/bench/torch_training.py";
  std::string worker;  // non-empty: run one side and print its JSON
  std::string baseline;  // another build's bench_training, measured beside ours (before/after a change)
  bool limits = true;
  int curve_steps = 50;  // the bf16 loss curve against fp32 over this many steps (0: skipped)
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--no-limits") {
      o.limits = false;
      continue;
    }
    NF_CHECK(i + 1 < argc, "bench_training: flag ", flag, " needs a value");
    const std::string value = argv[++i];
    if (flag == "--preset") o.step.preset = value;
    else if (flag == "--batch") o.step.batch = std::stoll(value);
    else if (flag == "--length") o.step.length = std::stoll(value);
    else if (flag == "--warmup") o.step.warmup = std::stoi(value);
    else if (flag == "--steps") o.step.steps = std::stoi(value);
    else if (flag == "--threads") o.threads = std::stoi(value);
    else if (flag == "--rounds") o.rounds = std::stoi(value);
    else if (flag == "--precisions") o.precisions = split(value, ',');
    else if (flag == "--python") o.python = value;
    else if (flag == "--worker") o.worker = value;
    else if (flag == "--baseline") o.baseline = value;
    else if (flag == "--curve-steps") o.curve_steps = std::stoi(value);
    else NF_FAIL("bench_training: unknown flag ", flag);
  }
  NF_CHECK(o.step.steps > 0 && o.rounds > 0, "bench_training: --steps and --rounds must be positive");
  return o;
}


std::vector<std::string> common_args(const Options& o) {
  return {"--preset", o.step.preset, "--batch", std::to_string(o.step.batch), "--length", std::to_string(o.step.length),
          "--threads", std::to_string(o.threads), "--warmup", std::to_string(o.step.warmup), "--steps",
          std::to_string(o.step.steps)};
}

std::vector<std::string> ours_command(const Options& o, const std::string& self, const std::string& precision) {
  std::vector<std::string> args{self, "--worker", precision, "--curve-steps", std::to_string(o.curve_steps)};
  for (const std::string& a : common_args(o)) args.push_back(a);
  return args;
}

std::vector<std::string> torch_command(const Options& o, const std::string& mode, const std::vector<std::string>& extra) {
  std::vector<std::string> args{o.python, o.torch_script, mode};
  for (const std::string& a : common_args(o)) args.push_back(a);
  for (const std::string& a : extra) args.push_back(a);
  return args;
}

// The worker modes: one training run ("fp32", "bf16") or a GEMM limit ("gemm-limit-fp32", "gemm-limit-bf16").
int worker(const Options& o) {
  nf::set_num_threads(o.threads);
  if (o.worker.rfind("gemm-limit-", 0) == 0) {
    nf::Generator gen(1);
    const nf::models::DecoderLM lm(nf::models::preset_config(o.step.preset), gen);
    const nf::DType dtype = o.worker == "gemm-limit-bf16" ? nf::DType::bf16 : nf::DType::f32;
    const nf::bench::GemmLimit limit =
        nf::bench::measure_gemm_limit(nf::bench::step_gemms(lm, o.step.batch, o.step.length), dtype);
    std::printf("%s\n", json{{"gflops", limit.gflops}, {"seconds_per_step", limit.seconds_per_step}}.dump().c_str());
    return 0;
  }
  nf::bench::TrainingStepOptions step = o.step;
  if (o.worker.rfind("curve-", 0) == 0) {  // every step's loss on learnable data from the same start
    step.precision = o.worker.substr(6);
    step.learnable_data = true;
    step.warmup = 0;
    step.steps = o.curve_steps;
    std::printf("%s\n", json{{"losses", nf::bench::run_training_steps(step).losses}}.dump().c_str());
    return 0;
  }
  step.precision = o.worker;
  const nf::bench::TrainingStepResult r = nf::bench::run_training_steps(step);
  std::vector<double> ms;
  for (double s : r.step_seconds) ms.push_back(1e3 * s);
  if (nf::profile::enabled()) {  // the per-op table of one step, to stderr
    double total = 0;
    for (double s : r.step_seconds) total += s;
    std::fprintf(stderr, "NF_PROFILE: time per step by op (%zu steps, median step %.0f ms)\n%s", r.step_seconds.size(),
                 1e3 * static_cast<double>(r.tokens_per_step) / r.tokens_per_s(),
                 nf::profile::report(static_cast<double>(r.step_seconds.size()), total).c_str());
  }
  std::vector<double> cpu_ms;
  for (double s : r.step_cpu_seconds) cpu_ms.push_back(1e3 * s);
  std::printf("%s\n", json{{"tokens_per_s", r.tokens_per_s()}, {"step_ms", ms}, {"step_cpu_ms", cpu_ms},
                           {"final_loss", r.final_loss}}.dump().c_str());
  return 0;
}

// Numbers of one kind over the rounds, or why there are none.
struct Series {
  std::vector<double> values;
  std::string note;
  std::optional<double> last_of_round;  // this round's value, when it was measured
};

// Runs a worker process; `key` of its JSON goes into `series` (tokens_per_s; gflops), its peak
// RSS into `peak` when given.
void measure(const std::vector<std::string>& command, const char* key, Series& series, Series* peak = nullptr) {
  series.last_of_round.reset();
  const ProcessResult r = run_process(command);
  const std::optional<json> j = last_json(r);
  if (!j) {
    series.note = "failed (exit status " + std::to_string(r.status) + ")";
  } else {
    series.values.push_back((*j)[key].get<double>());
    series.last_of_round = series.values.back();
    if (peak) peak->values.push_back(r.peak_mib);
  }
}

std::string cell(const Series& s, const char* format, double scale = 1) {
  if (s.values.empty()) return "n/a";
  char buf[64];
  std::snprintf(buf, sizeof buf, format, scale * median(s.values));
  return buf;
}

// bf16 against fp32 over the first curve_steps steps from the same initial weights on the same
// learnable batches (markov_batch): the largest relative difference of the losses.
void print_loss_curves(const Options& o, const std::string& self) {
  std::map<std::string, std::vector<double>> losses;
  for (const char* precision : {"fp32", "bf16"}) {
    const std::optional<json> j = last_json(run_process(ours_command(o, self, std::string("curve-") + precision)));
    if (!j) {
      std::printf("\nloss curves: the %s run failed\n", precision);
      return;
    }
    losses[precision] = (*j)["losses"].get<std::vector<double>>();
  }
  const std::vector<double>&f = losses["fp32"], &b = losses["bf16"];
  size_t worst = 0;
  for (size_t i = 0; i < f.size(); ++i)
    if (std::abs(b[i] - f[i]) / f[i] > std::abs(b[worst] - f[worst]) / f[worst]) worst = i;
  std::printf("\nloss curves, ours, %d steps from the same weights on the same batches (a Markov chain over 512 ids with "
              "4 successors each: ln 512 = 6.24 nats for the unigram, ln 4 = 1.39 at best):\n  step:",
              o.curve_steps);
  std::vector<size_t> shown;
  for (size_t i = 0; i < f.size(); i += std::max<size_t>(1, f.size() / 5)) shown.push_back(i);
  if (shown.back() != f.size() - 1) shown.push_back(f.size() - 1);
  for (size_t i : shown) std::printf(" %8zu", i + 1);
  std::printf("\n  fp32:");
  for (size_t i : shown) std::printf(" %8.4f", f[i]);
  std::printf("\n  bf16:");
  for (size_t i : shown) std::printf(" %8.4f", b[i]);
  std::printf("\n  largest |bf16 - fp32| / fp32: %.2f%% at step %zu (target: within 2%%)\n",
              100 * std::abs(b[worst] - f[worst]) / f[worst], worst + 1);
}

int driver(const Options& o, const std::string& self) {
  nf::set_num_threads(o.threads);
  nf::Generator gen(1);
  const nf::models::DecoderLM lm(nf::models::preset_config(o.step.preset), gen);
  const double flops_per_token = nf::bench::flops_per_token(lm, o.step.length);
  const std::vector<nf::bench::StepGemm> gemms = nf::bench::step_gemms(lm, o.step.batch, o.step.length);
  const std::optional<json> info =
      last_json(run_process({o.python, o.torch_script, "info", "--threads", std::to_string(o.threads)}));
  std::printf("training benchmark: %s, batch %lld x %lld, a full step (forward with targets, backward, AdamW "
              "(nanoGPT's defaults), zero_grad)\n",
              o.step.preset.c_str(), static_cast<long long>(o.step.batch), static_cast<long long>(o.step.length));
  std::printf("cpu: %s; threads: %d on both sides\nours: BLAS %s; bf16 GEMM %s\n", cpu_model().c_str(), o.threads,
              nf::blas_info(), nf::bf16_gemm_info().c_str());
  if (info) std::printf("torch: %s, cpu capability %s\n", (*info)["torch"].get<std::string>().c_str(),
                        (*info)["cpu_capability"].get<std::string>().c_str());
  else std::printf("torch: skipped (%s cannot import torch: run scripts/install-python.sh)\n", o.python.c_str());
  std::printf("limit = measured GEMM GFLOP/s at the step's %zu GEMM shapes / FLOPs per token, FLOPs per token = "
              "6 x %lld parameters + 12 x %lld layers x T %lld x dim %lld = %.1f MFLOP\n",
              gemms.size(), static_cast<long long>(lm.num_parameters()), static_cast<long long>(lm.config().n_layers),
              static_cast<long long>(o.step.length), static_cast<long long>(lm.config().dim), flops_per_token / 1e6);
  std::printf("%d rounds; each runs every measurement in its own process (ours and torch alternate, the first "
              "side swaps each round); a training process runs %d warm-up steps and reports the median of %d\n\n",
              o.rounds, o.step.warmup, o.step.steps);
  std::fflush(stdout);

  json shapes = json::array();
  for (const auto& g : gemms) shapes.push_back({g.M, g.N, g.K, g.trans_a, g.trans_b, g.count, g.per_head});
  std::map<std::string, Series> gflops, ours, torch, ours_peak, torch_peak, vs_torch, vs_limit, before, vs_before;
  Series torch_bf16_gflops;
  for (int round = 0; round < o.rounds; ++round) {
    if (o.limits) {
      measure(ours_command(o, self, "gemm-limit-fp32"), "gflops", gflops["fp32"]);
      measure(ours_command(o, self, "gemm-limit-bf16"), "gflops", gflops["bf16"]);
      if (info) measure(torch_command(o, "gemm-limit", {"--dtype", "bf16", "--gemms", shapes.dump()}), "gflops", torch_bf16_gflops);
    }
    for (const std::string& precision : o.precisions) {
      Series &a = ours[precision], &b = torch[precision];
      b.last_of_round.reset();
      const auto run_ours = [&] { measure(ours_command(o, self, precision), "tokens_per_s", a, &ours_peak[precision]); };
      const auto run_torch = [&] {
        if (info) measure(torch_command(o, "train", {"--precision", precision}), "tokens_per_s", b, &torch_peak[precision]);
        else b.note = "skipped (no torch)";
      };
      const auto run_before = [&] {
        if (!o.baseline.empty()) measure(ours_command(o, o.baseline, precision), "tokens_per_s", before[precision]);
      };
      if (round % 2 == 0) run_ours(), run_before(), run_torch();
      else run_torch(), run_before(), run_ours();
      if (a.last_of_round && before[precision].last_of_round)
        vs_before[precision].values.push_back(*a.last_of_round / *before[precision].last_of_round);
      // ratios within the round: ours / torch, ours / this round's limit
      if (a.last_of_round && b.last_of_round) vs_torch[precision].values.push_back(*a.last_of_round / *b.last_of_round);
      const Series& g = gflops[precision];
      if (a.last_of_round && g.last_of_round)
        vs_limit[precision].values.push_back(*a.last_of_round / (*g.last_of_round * 1e9 / flops_per_token));
      std::printf("round %d %s: ours %s tok/s, torch %s tok/s, limit %s tok/s\n", round + 1, precision.c_str(),
                  a.last_of_round ? std::to_string(static_cast<int>(*a.last_of_round)).c_str() : "-",
                  b.last_of_round ? std::to_string(static_cast<int>(*b.last_of_round)).c_str() : "-",
                  g.last_of_round ? std::to_string(static_cast<int>(*g.last_of_round * 1e9 / flops_per_token)).c_str() : "-");
      std::fflush(stdout);
    }
  }

  std::printf("\nGEMM limits (median GFLOP/s -> tokens/s):\n");
  std::printf("  fp32: SGEMM of our BLAS: %s GFLOP/s -> %s tokens/s\n", cell(gflops["fp32"], "%.1f").c_str(), cell(gflops["fp32"], "%.0f", 1e9 / flops_per_token).c_str());
  std::printf("  bf16: our bf16 GEMM (%s): %s GFLOP/s -> %s tokens/s\n", nf::bf16_gemm_info().c_str(),
              cell(gflops["bf16"], "%.1f").c_str(), cell(gflops["bf16"], "%.0f", 1e9 / flops_per_token).c_str());
  std::printf("        torch.matmul on bf16 tensors (for reference): %s GFLOP/s -> %s tokens/s\n\n",
              cell(torch_bf16_gflops, "%.1f").c_str(), cell(torch_bf16_gflops, "%.0f", 1e9 / flops_per_token).c_str());
  std::printf("%-6s %11s %11s %11s %11s %11s %15s %15s\n", "", "ours tok/s", "torch tok/s", "ours/torch", "limit tok/s",
              "ours/limit", "ours peak MiB", "torch peak MiB");
  for (const std::string& precision : o.precisions) {
    std::printf("%-6s %11s %11s %11s %11s %11s %15s %15s\n", precision.c_str(), cell(ours[precision], "%.0f").c_str(),
                cell(torch[precision], "%.0f").c_str(), cell(vs_torch[precision], "%.2fx").c_str(),
                cell(gflops[precision], "%.0f", 1e9 / flops_per_token).c_str(), cell(vs_limit[precision], "%.0f%%", 100).c_str(),
                cell(ours_peak[precision], "%.0f").c_str(), cell(torch_peak[precision], "%.0f").c_str());
    if (!ours[precision].note.empty()) std::printf("       ours %s: %s\n", precision.c_str(), ours[precision].note.c_str());
    if (!torch[precision].note.empty()) std::printf("       torch %s: %s\n", precision.c_str(), torch[precision].note.c_str());
  }
  std::printf("(medians over rounds; ours/torch and ours/limit are medians of the ratios within each round; peak = "
              "the RSS high-water mark of each process)\n");
  if (!o.baseline.empty()) {
    std::printf("\nbefore (--baseline %s) and after (this build), alternating in each round:\n", o.baseline.c_str());
    for (const std::string& precision : o.precisions)
      std::printf("%-6s before %s tok/s, after %s tok/s, after/before %s (rounds of ours: %s)\n", precision.c_str(),
                  cell(before[precision], "%.0f").c_str(), cell(ours[precision], "%.0f").c_str(),
                  cell(vs_before[precision], "%.3fx").c_str(), [&] {
                    std::string all;
                    for (const double v : ours[precision].values) all += std::to_string(static_cast<int>(v)) + " ";
                    return all;
                  }().c_str());
  }
  if (o.curve_steps > 0) print_loss_curves(o, self);
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return nf::bench::benchmark_main("bench_training", argc, argv, parse, worker, driver); }
