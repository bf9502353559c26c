// The inference benchmark of `make bench`: batch 1, fp32, random weights, for decoder presets:
// prefill tokens/s of a prompt, greedy decode tokens/s over new tokens with the KV cache, and peak
// memory (weights + cache + the rest of the process), nanoformer beside PyTorch with its own KV
// cache (tools/bench/torch_decode.py) on the same threads, and beside the memory-bandwidth limit
// of decoding: at batch 1 every weight a token uses is read once per token, so
//   limit tokens/s = measured read GB/s / (weight bytes + KV cache bytes) read per token
// (the cache's keys and values at the decode's mean depth, prompt + new / 2: at a 512-token prompt
// they are 5% of minimind2-small's fp32 weights and 37% of its Q4_0 ones)
// (all weights but the embedding lookup and learned positions; of a MoE layer's routed experts only
// top_k of n_experts). The linear kernel alone is measured too: the GB/s at which one token's
// weight matrices stream through linear (the matrix-vector kernel, ops/cpu/matmul/gemv.h) and through
// sgemm with one row (what linear used before), beside the read bandwidth. Prefill, compute-bound,
// is set beside the GEMM limit: the prompt tokens/s the measured fp32 SGEMM speed at the prefill's
// GEMM shapes allows (bench/prefill_gemm_limit.h), for ours and PyTorch's. Decode at a long context
// (--long-context, default 4096 or the preset's max_seq_len) is measured with an f32, f16, q8_0 and
// q4_0 KV cache (--cache-type): the cache's bytes are then a large part of what a token reads, and
// the limit counts them (weights + the cache's keys and values at that context).
//
// The files people download (--types f32,q8_0,q6_k,q5_k_m,q4_k_m,q4_0), beside the peers
// (--peers llamacpp,ik_llama: mainline llama.cpp's and ik_llama.cpp's own llama-bench, built by
// tools/peers/; default every one installed under --peers-dir): one GGUF file of each dense preset
// and type that every engine reads, made from our F32 GGUF by mainline's llama-quantize, and
// ik_llama.cpp's own type of the same bits as a row of its own; prefill of the prompt and decode of
// new - 1 tokens after it, an f16 KV cache everywhere, rows at each --threads count
// (bench/peer_table.h, bench/peers.h).
//
// Each measurement runs in its own process (peak memory = the RSS high-water mark, from wait4);
// ours and PyTorch's alternate over rounds (the first side swaps each round) so that load from
// other work hits both alike; the table gives medians over rounds and medians of per-round ratios.
//
//   bench_inference [--presets minimind2-small,minimind2,minimind2-moe,gpt2-124m,qwen2.5-0.5b]
//                   [--prompt 512] [--new 129] [--threads 1,2] [--rounds 3] [--python .venv/bin/python]
//                   [--types f32,q8_0,q6_k,q5_k_m,q4_k_m,q4_0]   (empty: no peers' table)
//                   [--peers llamacpp,ik_llama | none] [--peers-dir .cache/peers]
//                   [--plot FILE.png]   the peers' table as bars, at the last --threads count (peer_chart.h)
//                   [--baseline OLD/bench_inference]   also an older build's decode worker, alternating
//                                                      (before/after a change, in the same invocation)
//                   [--long-context 4096] [--long-new 64]   the KV cache types' decode (0: skipped)
//   bench_inference --worker decode|bandwidth|kernel|gemm|gguf --preset P [--model F.gguf] [--cache-type q8_0] ...
//                   one process's part
//                   (with NF_PROFILE=1 the decode worker prints its per-op tables of prefill and decode)
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "bench_process.h"
#include "bench_series.h"
#include "peer_chart.h"
#include "peer_table.h"
#include "memory_bandwidth.h"
#include "prefill_gemm_limit.h"
#include <filesystem>

#include "nanoformer/autograd/grad_mode.h"
#include "nanoformer/formats/model_io.h"
#include "nanoformer/models/quantize.h"
#include "nanoformer/nanoformer.h"
#include "ops/cpu/quant/int8_isa.h"

namespace {

using namespace nf::bench;
using Clock = std::chrono::steady_clock;

struct Options {
  std::vector<std::string> presets{"minimind2-small", "minimind2", "minimind2-moe", "gpt2-124m", "qwen2.5-0.5b"};
  std::string preset = "minimind2-small";  // a worker's
  int64_t prompt = 512, new_tokens = 129;  // new: the prefill's token, then new - 1 decode steps
  std::vector<int> thread_counts{2};  // the peers' table: its rows at each count
  int threads = 2, rounds = 3;        // threads: a worker's, and the driver's other tables' (the largest count)
  std::string python = std::string(NF_SOURCE_DIR) + "/.venv/bin/python";
  std::string torch_script = std::string(NF_SOURCE_DIR) + "/tools/bench/torch_decode.py";
  std::string worker;  // non-empty: run one part and print its JSON
  std::string baseline;  // another build's bench_inference, measured beside ours
  // the types of the peers' table (bench/peer_table.h), each one GGUF file for every engine
  std::vector<std::string> types{"f32", "q8_0", "q6_k", "q5_k_m", "q4_k_m", "q4_0"};
  std::vector<std::string> peers;  // llamacpp, ik_llama; empty: every installed one; "none"
  std::string peers_dir = std::string(NF_SOURCE_DIR) + "/.cache/peers";
  std::string plot;  // --plot: the peers' table as a chart
  std::string type = "f32", model;  // a worker's: the weight type, and the GGUF it writes or reads
  std::string cache_type = "f32";  // the decode worker's KV cache type
  int64_t long_context = 4096, long_new = 64;  // the cache types' decode at a long context (0: skipped)
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    NF_CHECK(i + 1 < argc, "bench_inference: flag ", flag, " needs a value");
    const std::string value = argv[++i];
    if (flag == "--presets") o.presets = split(value, ',');
    else if (flag == "--preset") o.preset = value;
    else if (flag == "--prompt") o.prompt = std::stoll(value);
    else if (flag == "--new") o.new_tokens = std::stoll(value);
    else if (flag == "--threads") {
      o.thread_counts.clear();
      for (const std::string& t : split(value, ',')) o.thread_counts.push_back(std::stoi(t));
      NF_CHECK(!o.thread_counts.empty() && *std::min_element(o.thread_counts.begin(), o.thread_counts.end()) > 0,
               "bench_inference: --threads ", value, ": thread counts must be positive");
      o.threads = *std::max_element(o.thread_counts.begin(), o.thread_counts.end());
    }
    else if (flag == "--rounds") o.rounds = std::stoi(value);
    else if (flag == "--python") o.python = value;
    else if (flag == "--worker") o.worker = value;
    else if (flag == "--baseline") o.baseline = value;
    else if (flag == "--types") o.types = split(value, ',');
    else if (flag == "--type") o.type = value;
    else if (flag == "--model") o.model = value;
    else if (flag == "--peers") o.peers = split(value, ',');
    else if (flag == "--peers-dir") o.peers_dir = value;
    else if (flag == "--plot") o.plot = value;
    else if (flag == "--cache-type") o.cache_type = value;
    else if (flag == "--long-context") o.long_context = std::stoll(value);
    else if (flag == "--long-new") o.long_new = std::stoll(value);
    else NF_FAIL("bench_inference: unknown flag ", flag);
  }
  NF_CHECK(o.prompt > 0 && o.new_tokens > 1 && o.rounds > 0, "bench_inference: --prompt, --rounds must be positive and --new above 1");
  return o;
}

// Weight bytes a decode step reads (fp32): every parameter but the embedding table (one row is
// looked up; read in full only as the tied head) and learned positions, and of the routed experts
// only the top_k of n_experts a token uses.
double weight_bytes_per_token(const nf::models::DecoderLMConfig& c) {
  const nf::models::ParameterCounts p = nf::models::model_stats(c).parameters;
  const double routed = c.moe ? static_cast<double>(p.routed_experts) * static_cast<double>(c.moe->top_k) /
                                    static_cast<double>(c.moe->n_experts)
                              : 0.0;
  const double read = static_cast<double>(p.attention + p.mlp + p.shared_experts + p.router + p.norms + p.head) + routed +
                      (c.tie_embeddings ? static_cast<double>(p.embedding) : 0.0);
  return 4.0 * read;
}

// The same for a built model, whatever its weights' types: dense parameters at their item size,
// quantised ones at their bytes (a GGUF's); the table counts when it is the (tied) head.
// With per_token false: every weight's bytes (the model's size).
double model_bytes_per_token(const nf::models::DecoderLM& lm, bool per_token = true) {
  const nf::models::DecoderLMConfig& c = lm.config();
  const auto counts = [&](const std::string& name) {
    if (!per_token) return 1.0;
    if (name.rfind("pos_embeddings", 0) == 0) return 0.0;
    if (name.rfind("tok_embeddings", 0) == 0) return c.tie_embeddings ? 1.0 : 0.0;
    if (c.moe && name.find(".experts.") != std::string::npos)
      return static_cast<double>(c.moe->top_k) / static_cast<double>(c.moe->n_experts);
    return 1.0;
  };
  double bytes = 0;
  for (const auto& [name, p] : lm.named_parameters()) bytes += counts(name) * static_cast<double>(p.numel() * p.itemsize());
  for (const auto& [name, q] : lm.named_quantized()) bytes += counts(name) * static_cast<double>(q.nbytes());
  return bytes;
}

// The preset's model with fresh weights (seed 1): a plain type's Linear weights and table in `type`
// (f32: as built), as llama-quantize --pure makes a file; a mix ("q4_k_m") as llama-quantize's mix.
std::shared_ptr<nf::models::DecoderLM> preset_model(const std::string& preset, const std::string& type) {
  nf::Generator gen(1);
  auto lm = std::make_shared<nf::models::DecoderLM>(nf::models::preset_config(preset), gen);
  if (type != "f32") {
    const nf::models::QuantizeSpec spec = nf::models::quantize_spec(type);
    const nf::QuantType t = spec.type;
    nf::models::quantize_weights(*lm, spec.mix != nf::models::QuantMix::none
                                          ? spec
                                          : nf::models::QuantizeSpec{.type = t, .output_type = t, .embedding_type = t});
  }
  return lm;
}

int64_t argmax_token(const nf::Tensor& logits) {
  const nf::Tensor row = logits.contiguous();
  const float* p = row.data<float>();
  return std::max_element(p, p + row.numel()) - p;
}

// The process's RSS high-water mark so far.
double max_rss_mib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // KiB on Linux
}

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

void print_profile(const char* phase, double calls, double seconds) {
  if (!nf::profile::enabled()) return;
  std::fprintf(stderr, "NF_PROFILE: %s\n%s", phase, nf::profile::report(calls, seconds).c_str());
  nf::profile::reset();
}

// Ours, as torch_decode.py does it: warm-up on 16 tokens, prefill of the prompt (last logits only),
// then new - 1 greedy steps of one token each.
int decode_worker(const Options& o) {
  nf::Generator gen(1);
  const std::shared_ptr<nf::models::DecoderLM> model =
      o.model.empty() ? std::make_shared<nf::models::DecoderLM>(nf::models::preset_config(o.preset), gen)
                      : nf::formats::load_decoder_lm(o.model);
  nf::models::DecoderLM& lm = *model;
  lm.eval();
  const double loaded_mib = max_rss_mib();
  nf::NoGradGuard no_grad;
  nf::nn::KVCache cache = lm.make_cache(1, o.prompt + o.new_tokens, nf::nn::kv_cache_type_from_name(o.cache_type));
  const nf::Tensor ids = nf::randint(0, lm.config().vocab_size, {1, o.prompt}, gen);
  lm.forward_cached(nf::narrow(ids, 1, 0, std::min<int64_t>(16, o.prompt)), cache, true);  // warm-up
  cache.reset();
  nf::profile::reset();
  auto start = Clock::now();
  int64_t token = argmax_token(lm.forward_cached(ids, cache, true));
  const double prefill = seconds_since(start);
  print_profile("prefill by op", 1, prefill);
  start = Clock::now();
  for (int64_t i = 0; i + 1 < o.new_tokens; ++i) {
    const nf::Tensor next = nf::Tensor::from_vector<int64_t>({token}, {1, 1});
    token = argmax_token(lm.forward_cached(next, cache, true));
  }
  const double decode = seconds_since(start);
  print_profile("decode by op, per token", static_cast<double>(o.new_tokens - 1), decode);
  std::printf("%s\n", json{{"prefill_tokens_per_s", static_cast<double>(o.prompt) / prefill},
                           {"decode_tokens_per_s", static_cast<double>(o.new_tokens - 1) / decode},
                           {"weights_mib", model_bytes_per_token(lm, false) / (1 << 20)},
                           {"bytes_per_token", model_bytes_per_token(lm)},
                           {"cache_mib", static_cast<double>(cache.bytes()) / (1 << 20)},
                           // the cache's bytes a decode step reads at the mean depth, prompt + new / 2
                           {"kv_read_bytes_per_token", static_cast<double>(cache.bytes()) *
                                                           (static_cast<double>(o.prompt) + 0.5 * static_cast<double>(o.new_tokens)) /
                                                           static_cast<double>(o.prompt + o.new_tokens)},
                           {"loaded_mib", loaded_mib}}
                          .dump()
                          .c_str());
  return 0;
}

// GB/s of one token's weight matrices streamed through `product` (x (1, in), W (out, in)): the
// median over passes after a warm-up pass.
template <class Product>
double stream_gb_per_s(const std::vector<nf::Tensor>& weights, Product product) {
  double bytes = 0;
  std::vector<nf::Tensor> inputs;
  nf::Generator gen(2);
  for (const nf::Tensor& w : weights) {
    bytes += 4.0 * static_cast<double>(w.numel());
    inputs.push_back(nf::randn({1, w.size(1)}, gen));
  }
  std::vector<double> seconds;
  for (int pass = 0; pass <= 9; ++pass) {
    const auto start = Clock::now();
    for (size_t i = 0; i < weights.size(); ++i) product(inputs[i], weights[i]);
    if (pass > 0) seconds.push_back(seconds_since(start));
  }
  return bytes / median(seconds) / 1e9;
}

// The linear kernel alone on the preset's matrices (every routed expert included).
int kernel_worker(const Options& o) {
  nf::Generator gen(1);
  const nf::models::DecoderLM lm(nf::models::preset_config(o.preset), gen);
  nf::NoGradGuard no_grad;
  std::vector<nf::Tensor> weights;
  for (const auto& [name, w] : lm.named_parameters())
    if (w.dim() == 2 && name.rfind("pos_embeddings", 0) != 0 && (name.rfind("tok_embeddings", 0) != 0 || !lm.output))
      weights.push_back(w);
  const double gemv = stream_gb_per_s(weights, [](const nf::Tensor& x, const nf::Tensor& w) { return nf::linear(x, w); });
  const double sgemm = stream_gb_per_s(weights, [](const nf::Tensor& x, const nf::Tensor& w) { return nf::matmul(x, w.t()); });
  std::printf("%s\n", json{{"gemv_gb_per_s", gemv}, {"sgemm_gb_per_s", sgemm}}.dump().c_str());
  return 0;
}

int worker(const Options& o) {
  nf::set_num_threads(o.threads);
  if (o.worker == "decode") return decode_worker(o);
  if (o.worker == "gguf") {  // the preset in o.type, written to o.model
    const auto lm = preset_model(o.preset, o.type);
    nf::formats::save_model(*lm, o.model, "gguf");
    std::printf("%s\n", json{{"bytes_per_token", model_bytes_per_token(*lm)}}.dump().c_str());
    return 0;
  }
  if (o.worker == "kernel") return kernel_worker(o);
  if (o.worker == "gemm") {
    nf::Generator gen(1);
    const nf::models::DecoderLM lm(nf::models::preset_config(o.preset), gen);
    std::printf("%s\n", json{{"prefill_limit_tokens_per_s", nf::bench::prefill_limit_tokens_per_s(lm, o.prompt)}}.dump().c_str());
    return 0;
  }
  NF_CHECK(o.worker == "bandwidth", "bench_inference: unknown worker ", o.worker);
  std::printf("%s\n", json{{"read_gb_per_s", measure_read_bandwidth(o.threads).read_gb_per_s}}.dump().c_str());
  return 0;
}

void measure_preset(const Options& o, const std::string& self, const std::string& preset, bool torch, Results& ours,
                    Results& theirs, Results& before, int round) {
  const std::vector<std::string> common{"--preset", preset, "--prompt", std::to_string(o.prompt), "--new",
                                        std::to_string(o.new_tokens), "--threads", std::to_string(o.threads)};
  const auto with = [&common](std::vector<std::string> head) {
    head.insert(head.end(), common.begin(), common.end());
    return head;
  };
  run_into(with({self, "--worker", "bandwidth"}), {{"read_gb_per_s", &ours["bandwidth"]}});
  run_into(with({self, "--worker", "kernel"}), {{"gemv_gb_per_s", &ours["gemv"]}, {"sgemm_gb_per_s", &ours["sgemm"]}});
  run_into(with({self, "--worker", "gemm"}), {{"prefill_limit_tokens_per_s", &ours["prefill limit"]}});
  const auto run_ours = [&] {
    run_into(with({self, "--worker", "decode"}),
             {{"prefill_tokens_per_s", &ours["prefill"]}, {"decode_tokens_per_s", &ours["decode"]},
              {"weights_mib", &ours["weights"]}, {"cache_mib", &ours["cache"]}, {"loaded_mib", &ours["loaded"]},
              {"kv_read_bytes_per_token", &ours["kv read"]}},
             &ours["peak"]);
  };
  const auto run_torch = [&] {
    if (torch)
      run_into(with({o.python, o.torch_script}),
               {{"prefill_tokens_per_s", &theirs["prefill"]}, {"decode_tokens_per_s", &theirs["decode"]}}, &theirs["peak"]);
  };
  const auto run_before = [&] {
    if (!o.baseline.empty())
      run_into(with({o.baseline, "--worker", "decode"}),
               {{"prefill_tokens_per_s", &before["prefill"]}, {"decode_tokens_per_s", &before["decode"]}}, &before["peak"]);
  };
  if (round % 2 == 0) run_ours(), run_before(), run_torch();
  else run_torch(), run_before(), run_ours();
  // ratios within the round
  const double limit = ours["bandwidth"].last_of_round.value_or(0) * 1e9 /
                       (weight_bytes_per_token(nf::models::preset_config(preset)) + ours["kv read"].last_of_round.value_or(0));
  for (const char* phase : {"prefill", "decode"}) {
    const Series &a = ours[phase], &b = theirs[phase];
    if (a.last_of_round && b.last_of_round) ours[std::string(phase) + "/torch"].add(*a.last_of_round / *b.last_of_round);
    const Series& old = before[phase];
    if (a.last_of_round && old.last_of_round) ours[std::string(phase) + "/before"].add(*a.last_of_round / *old.last_of_round);
  }
  for (auto [side, key] : {std::pair{&ours, "prefill/gemm limit"}, std::pair{&theirs, "prefill/gemm limit"}}) {
    const Series &p = (*side)["prefill"], &l = ours["prefill limit"];
    if (p.last_of_round && l.last_of_round) (*side)[key].add(*p.last_of_round / *l.last_of_round);
  }
  if (ours["decode"].last_of_round && limit > 0) {
    ours["limit"].add(limit);
    ours["decode/limit"].add(*ours["decode"].last_of_round / limit);
  }
  std::printf("round %d %-16s prefill ours %s torch %s tok/s; decode ours %s torch %s limit %.0f tok/s\n", round + 1,
              preset.c_str(), this_round(ours["prefill"], "%.0f").c_str(), this_round(theirs["prefill"], "%.0f").c_str(),
              this_round(ours["decode"], "%.1f").c_str(), this_round(theirs["decode"], "%.1f").c_str(), limit);
  std::fflush(stdout);
}

// The context of the long-context decode: --long-context, at most the preset's max_seq_len.
int64_t long_context(const Options& o, const std::string& preset) {
  return std::min(o.long_context, nf::models::preset_config(preset).max_seq_len);
}

// The KV cache types of the long-context decode; the first is the one the others are compared with.
const std::vector<std::string> kLongCacheTypes{"f32", "f16", "q8_0", "q4_0"};

// Decode at a long context with each of kLongCacheTypes (their order rotating each round): keys
// "decode T", "cache T" and the ratio "T/f32" within the round.
void measure_long_context(const Options& o, const std::string& self, const std::string& preset, Results& r, int round) {
  const int64_t context = long_context(o, preset);
  std::vector<std::string> types = kLongCacheTypes;
  std::rotate(types.begin(), types.begin() + round % static_cast<int>(types.size()), types.end());
  for (const std::string& type : types)
    run_into({self, "--worker", "decode", "--preset", preset, "--prompt", std::to_string(context - o.long_new), "--new",
              std::to_string(o.long_new), "--threads", std::to_string(o.threads), "--cache-type", type},
             {{"decode_tokens_per_s", &r["decode " + type]}, {"cache_mib", &r["cache " + type]}});
  const Series& base = r["decode " + kLongCacheTypes[0]];
  std::string line;
  for (const std::string& type : kLongCacheTypes) {
    const Series& decode = r["decode " + type];
    if (type != kLongCacheTypes[0] && base.last_of_round && decode.last_of_round)
      r[type + "/" + kLongCacheTypes[0]].add(*decode.last_of_round / *base.last_of_round);
    line.append(line.empty() ? "" : ", ").append(type).append(" cache ").append(this_round(decode, "%.1f"));
  }
  std::printf("round %d %-16s decode at a %lld-token context: %s tok/s\n", round + 1, preset.c_str(),
              static_cast<long long>(context), line.c_str());
  std::fflush(stdout);
}

int driver(const Options& o, const std::string& self) {
  nf::set_num_threads(o.threads);
  const std::optional<json> info =
      last_json(run_process({o.python, "-c", "import torch; print('{\"torch\": \"' + torch.__version__ + '\"}')"}));
  std::printf("inference benchmark: batch 1, fp32, random weights; prefill of a %lld-token prompt, then %lld new tokens "
              "(greedy, one per step, KV cache)\n",
              static_cast<long long>(o.prompt), static_cast<long long>(o.new_tokens));
  std::string counts;
  for (const int t : o.thread_counts) counts += (counts.empty() ? "" : ",") + std::to_string(t);
  std::printf("cpu: %s; threads: %d on both sides (the peers' table: %s); ours: BLAS %s, quantised prefill on %s\n",
              cpu_model().c_str(), o.threads, counts.c_str(), nf::blas_info(),
              std::string(nf::cpu::int8_isa_name(nf::cpu::int8_isa())).c_str());
  if (info) std::printf("torch: %s (tools/bench/torch_decode.py: plain PyTorch with a preallocated KV cache)\n",
                        (*info)["torch"].get<std::string>().c_str());
  else std::printf("torch: skipped (%s cannot import torch: run scripts/install-python.sh)\n", o.python.c_str());
  std::printf("limit = measured read GB/s (%d threads, 1 GiB buffer) / (weight bytes + KV cache bytes at the mean "
              "depth) read per token\n", o.threads);
  std::printf("%d rounds; every measurement in its own process, ours and torch alternating\n\n", o.rounds);
  std::fflush(stdout);

  // the files of the peers' table first: our F32 GGUF of each dense preset, the other types from it
  PeerTableSettings table{self, o.prompt, o.new_tokens - 1, o.thread_counts, {}, {}, {}};
  std::vector<PeerFile> files;
  std::vector<PeerRow> rows;
  std::map<std::string, std::string> flash_attn;
  const std::filesystem::path gguf_dir =
      std::filesystem::temp_directory_path() / ("nf_bench_inference_" + std::to_string(::getpid()));
  if (!o.types.empty()) {
    table.peers = find_peers(o.peers_dir, o.peers);
    table.quantizer = installed_peer(o.peers_dir, "llamacpp");
    for (const Peer& p : table.peers)
      if (p.name == "ik_llama") table.ik = p;
    std::vector<std::string> dense;
    for (const std::string& preset : o.presets)
      if (!nf::models::preset_config(preset).moe) dense.push_back(preset);
    std::filesystem::create_directories(gguf_dir);
    files = make_peer_files(table, dense, o.types, gguf_dir);
    for (const PeerFile& f : files)
      for (const int threads : o.thread_counts) rows.push_back({&f, threads, {}, {}});
  }

  std::map<std::string, Results> ours, theirs, before, long_decode;
  std::map<int, Series> bandwidth;  // read GB/s by thread count, for the peers' table
  for (int round = 0; round < o.rounds; ++round) {
    for (const std::string& preset : o.presets)
      measure_preset(o, self, preset, info.has_value(), ours[preset], theirs[preset], before[preset], round);
    if (!rows.empty())
      for (const int threads : o.thread_counts)
        run_into({self, "--worker", "bandwidth", "--threads", std::to_string(threads)}, {{"read_gb_per_s", &bandwidth[threads]}});
    for (PeerRow& row : rows)
      if (row.file->note.empty()) measure_peer_row(table, row, bandwidth[row.threads], round, flash_attn);
  }
  if (!o.types.empty()) std::filesystem::remove_all(gguf_dir);
  if (o.long_context > o.long_new)
    for (int round = 0; round < o.rounds; ++round)
      for (const std::string& preset : o.presets) measure_long_context(o, self, preset, long_decode[preset], round);

  std::printf("\n%-16s %9s %9s %8s | %8s %8s %8s %8s %8s %7s | %8s %8s %8s %8s\n", "", "prefill", "torch", "ours/", "decode",
              "torch", "ours/", "limit", "ours/", "read", "weights", "cache", "peak", "torch");
  std::printf("%-16s %9s %9s %8s | %8s %8s %8s %8s %8s %7s | %8s %8s %8s %8s\n", "preset", "tok/s", "tok/s", "torch", "tok/s",
              "tok/s", "torch", "tok/s", "limit", "GB/s", "MiB", "MiB", "MiB", "peak MiB");
  for (const std::string& preset : o.presets) {
    Results &a = ours[preset], &b = theirs[preset];
    std::printf("%-16s %9s %9s %8s | %8s %8s %8s %8s %8s %7s | %8s %8s %8s %8s\n", preset.c_str(),
                cell(a["prefill"], "%.0f").c_str(), cell(b["prefill"], "%.0f").c_str(), cell(a["prefill/torch"], "%.2fx").c_str(),
                cell(a["decode"], "%.1f").c_str(), cell(b["decode"], "%.1f").c_str(), cell(a["decode/torch"], "%.2fx").c_str(),
                cell(a["limit"], "%.0f").c_str(), cell(a["decode/limit"], "%.0f%%", 100).c_str(),
                cell(a["bandwidth"], "%.1f").c_str(), cell(a["weights"], "%.0f").c_str(), cell(a["cache"], "%.0f").c_str(),
                cell(a["peak"], "%.0f").c_str(), cell(b["peak"], "%.0f").c_str());
    for (const auto& [name, s] : a)
      if (!s.note.empty()) std::printf("  ours %s: %s\n", name.c_str(), s.note.c_str());
    for (const auto& [name, s] : b)
      if (!s.note.empty()) std::printf("  torch %s: %s\n", name.c_str(), s.note.c_str());
  }
  std::printf("(medians over rounds; ratios are medians of the ratios within each round; peak = the RSS high-water mark "
              "of the process: weights + cache + runtime)\n");
  std::printf("ours, RSS high-water mark once the model is built (before the cache and the prompt):");
  for (const std::string& preset : o.presets) std::printf(" %s %s MiB;", preset.c_str(), cell(ours[preset]["loaded"], "%.0f").c_str());
  std::printf("\n\n");
  std::printf("prefill beside the GEMM limit (tokens/s that the measured fp32 SGEMM speed at the prompt's GEMM shapes "
              "allows: bench/prefill_gemm_limit.h):\n");
  std::printf("%-16s %12s %12s %12s %12s %12s %16s\n", "preset", "ours tok/s", "torch tok/s", "limit tok/s", "ours/limit",
              "torch/limit", "1.5x torch/limit");
  for (const std::string& preset : o.presets) {
    Results &a = ours[preset], &b = theirs[preset];
    std::printf("%-16s %12s %12s %12s %12s %12s %16s\n", preset.c_str(), cell(a["prefill"], "%.0f").c_str(),
                cell(b["prefill"], "%.0f").c_str(), cell(a["prefill limit"], "%.0f").c_str(),
                cell(a["prefill/gemm limit"], "%.0f%%", 100).c_str(), cell(b["prefill/gemm limit"], "%.0f%%", 100).c_str(),
                cell(b["prefill/gemm limit"], "%.0f%%", 150).c_str());
  }
  std::printf("\n");
  if (!o.baseline.empty()) {
    std::printf("before (--baseline %s) and after (this build), alternating in each round; spread = (max - min) / median "
                "of ours over the rounds:\n", o.baseline.c_str());
    std::printf("%-16s %14s %14s %10s %9s | %13s %13s %10s %9s\n", "preset", "prefill before", "prefill after",
                "after/bef.", "spread", "decode before", "decode after", "after/bef.", "spread");
    const auto spread = [](const Series& s) {
      if (s.values.size() < 2) return std::string("-");
      const auto [lo, hi] = std::minmax_element(s.values.begin(), s.values.end());
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.1f%%", 100 * (*hi - *lo) / median(s.values));
      return std::string(buf);
    };
    for (const std::string& preset : o.presets) {
      Results &a = ours[preset], &b = before[preset];
      std::printf("%-16s %14s %14s %10s %9s | %13s %13s %10s %9s\n", preset.c_str(), cell(b["prefill"], "%.0f").c_str(),
                  cell(a["prefill"], "%.0f").c_str(), cell(a["prefill/before"], "%.3fx").c_str(), spread(a["prefill"]).c_str(),
                  cell(b["decode"], "%.1f").c_str(), cell(a["decode"], "%.1f").c_str(), cell(a["decode/before"], "%.3fx").c_str(),
                  spread(a["decode"]).c_str());
    }
    std::printf("\n");
  }
  if (!rows.empty()) print_peer_table(table, files, rows, flash_attn);
  if (!rows.empty() && !o.plot.empty()) write_peer_chart(o.plot, table, rows, o.thread_counts.back(), o.rounds);
  std::printf("the linear kernel alone, one token's weight matrices (x of 1 row; every routed expert):\n");
  std::printf("%-16s %16s %16s %12s %14s\n", "preset", "linear GB/s", "sgemm GB/s", "read GB/s", "linear/read");
  for (const std::string& preset : o.presets) {
    Results& a = ours[preset];
    std::printf("%-16s %16s %16s %12s %13.0f%%\n", preset.c_str(), cell(a["gemv"], "%.1f").c_str(),
                cell(a["sgemm"], "%.1f").c_str(), cell(a["bandwidth"], "%.1f").c_str(),
                a["bandwidth"].values.empty() ? 0.0 : 100 * median(a["gemv"].values) / median(a["bandwidth"].values));
  }
  if (o.long_context > o.long_new) {
    std::printf("\ndecode at a long context by KV cache type (--cache-type; a prompt of context - %lld tokens, then %lld "
                "new): limit = read GB/s / (weight bytes + the cache's bytes) per token\n",
                static_cast<long long>(o.long_new), static_cast<long long>(o.long_new));
    std::printf("%-16s %8s %6s | %9s %9s | %9s | %9s %8s\n", "preset", "context", "cache", "tok/s", "x/f32", "MiB",
                "limit", "of limit");
    for (const std::string& preset : o.presets) {
      Results& r = long_decode[preset];
      const double read = ours[preset]["bandwidth"].values.empty() ? 0.0 : median(ours[preset]["bandwidth"].values);
      const double weights = weight_bytes_per_token(nf::models::preset_config(preset));
      for (const std::string& type : kLongCacheTypes) {
        const Series &decode = r["decode " + type], &cache = r["cache " + type];
        // tokens/s, or 0 when a number is missing
        const double limit = cache.values.empty() || read == 0 ? 0.0 : read * 1e9 / (weights + median(cache.values) * (1 << 20));
        char of_limit[32] = "n/a";
        if (!decode.values.empty() && limit > 0) std::snprintf(of_limit, sizeof of_limit, "%.0f%%", 100 * median(decode.values) / limit);
        const std::string ratio = type == kLongCacheTypes[0] ? "1" : cell(r[type + "/" + kLongCacheTypes[0]], "%.2fx");
        std::printf("%-16s %8lld %6s | %9s %9s | %9s | %9.0f %8s\n", preset.c_str(),
                    static_cast<long long>(long_context(o, preset)), type.c_str(), cell(decode, "%.1f").c_str(),
                    ratio.c_str(), cell(cache, "%.1f").c_str(), limit, of_limit);
      }
      for (const auto& [name, series] : r)
        if (!series.note.empty()) std::printf("  %s: %s\n", name.c_str(), series.note.c_str());
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return nf::bench::benchmark_main("bench_inference", argc, argv, parse, worker, driver); }
