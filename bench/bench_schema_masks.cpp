// Mask and compile times over JSONSchemaBench schemas, as MaskBench measures them
// (guidance-ai/jsonschemabench ba103c73, maskbench/maskbench/runner.py): each schema is compiled,
// then one valid instance of it (json.dumps(data, indent=None, ensure_ascii=False)) is tokenized and
// followed token by token, each step a mask computation and the token committed.
//   compile  json_schema_grammar + compile_gbnf + the GrammarConstraint (MaskBench's "TTFM" is
//            its engine's compile_grammar alone, the first mask being its first TBM sample)
//   ttfm     compile + the first mask (time to first mask, the first token's step not counted twice)
//   mask     per token: GrammarConstraint::allowed() + accept() (MaskBench's TBM: compute_mask +
//            commit_token); masks are cached per matcher state within one schema's constraint, as
//            a served request's would be, and every schema starts cold
// A schema our compiler refuses counts as refused (MaskBench: compile error); an instance whose token
// is not allowed, or after which the grammar cannot end, counts as rejected (MaskBench: validation
// error: the grammar is narrower than the schema, e.g. a property order other than the schema's).
// Percentiles pool the tokens of all schemas of one pass (MaskBench pools all its schemas'); each
// benchmark is one pass (Iterations(1)), repeated by --benchmark_repetitions; after the table the
// pooled percentiles of all passes are printed beside MaskBench's published ones.
// Input: NF_BENCH_SCHEMAS (from tools/grammar/jsonschemabench.py --export-masks FILE), else the
// committed fixture bench/data/jsonschemabench_masks.json. Vocabularies: MiniMind's 6400
// (NF_BENCH_TOKENIZER or /work/shared/data/minimind2_tokenizer.json) and GPT-2's 50257
// (NF_BENCH_GPT2_TOKENIZER or /work/shared/data/gpt2_tokenizer.json.gz, the intact file, decompressed
// with gzip; the .json beside it has one entry damaged: /work/shared/data/README.md), and Qwen2's
// 151936 (NF_BENCH_QWEN2_TOKENIZER or .cache/llamacpp/ggml-vocab-qwen2.gguf: llama.cpp's vocabulary
// file, which tools/llamacpp/schema_converter.sh extracts; skipped when absent). MaskBench used
// Llama 3.1's 128k tokenizer.
//   ./build/bench_schema_masks --benchmark_repetitions=3
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <unistd.h>
#include <vector>

#include "bench_support.h"
#include "nanoformer/grammar/constraint.h"
#include "nanoformer/grammar/grammar.h"
#include "nanoformer/grammar/json_schema.h"
#include "nanoformer/tokenizer/jsonl.h"
#include "nanoformer/tokenizer/tokenizer.h"

namespace {

using namespace nf;
using Clock = std::chrono::steady_clock;

struct Entry {
  std::string id;
  nlohmann::ordered_json schema;
  std::string instance;
};

struct Vocab {
  const char* name;
  const char* env;
  const char* fallback;
  std::unique_ptr<tokenizer::Tokenizer> tokenizer;
  std::shared_ptr<const grammar::TokenTrie> trie;
  std::vector<int64_t> eos;
  std::vector<std::vector<tokenizer::TokenId>> tokens;  // of each entry's instance
  bool tried = false;
};

// Every pass's samples, pooled per vocabulary (microseconds).
struct Pool {
  std::vector<double> mask_us, compile_us, ttfm_us;
  int64_t schemas = 0, refused = 0, rejected = 0, passes = 0;
  std::map<std::string, std::pair<int, std::string>> refusals;  // first pass: keyword -> count, an example
  std::vector<std::string> rejections;  // first pass: "<id>: token k of n"
};

std::string schemas_path() {
  const char* env = std::getenv("NF_BENCH_SCHEMAS");
  return env ? env : NF_SOURCE_DIR "/bench/data/jsonschemabench_masks.json";
}

const std::vector<Entry>& entries() {
  static const std::vector<Entry> all = [] {
    std::vector<Entry> out;
    const std::string path = schemas_path();
    if (!std::filesystem::exists(path)) return out;
    const auto j = nlohmann::ordered_json::parse(tokenizer::read_file(path));
    for (const auto& e : j["schemas"]) out.push_back({e["id"].get<std::string>(), e["schema"], e["instance"].get<std::string>()});
    return out;
  }();
  return all;
}

Vocab vocabs[] = {{"minimind_6400", "NF_BENCH_TOKENIZER", "/work/shared/data/minimind2_tokenizer.json", {}, {}, {}, {}, false},
                  {"gpt2_50257", "NF_BENCH_GPT2_TOKENIZER", "/work/shared/data/gpt2_tokenizer.json.gz", {}, {}, {}, {}, false},
                  {"qwen2_151936", "NF_BENCH_QWEN2_TOKENIZER", NF_SOURCE_DIR "/.cache/llamacpp/ggml-vocab-qwen2.gguf", {}, {}, {}, {}, false}};
constexpr size_t kVocabs = std::size(vocabs);
Pool pools[kVocabs];

// A .gz tokenizer decompressed (gzip -dc) into the temporary folder; its path.
std::string gunzip(const std::string& path) {
  const std::string out = (std::filesystem::temp_directory_path() /
                           ("nf-bench-" + std::to_string(::getpid()) + "-" + std::filesystem::path(path).stem().string())).string();
  const std::string command = "gzip -dc '" + path + "' > '" + out + "'";
  if (std::system(command.c_str()) != 0) throw std::runtime_error("failed: " + command);
  return out;
}

Vocab* get_vocab(size_t i) {
  Vocab& v = vocabs[i];
  if (!v.tried) {
    v.tried = true;
    const char* env = std::getenv(v.env);
    const std::string path = env ? env : v.fallback;
    if (!std::filesystem::exists(path)) return nullptr;
    if (path.ends_with(".gz")) {
      const std::string plain = gunzip(path);
      v.tokenizer = tokenizer::load_tokenizer(plain);
      std::filesystem::remove(plain);
    } else {
      v.tokenizer = tokenizer::load_tokenizer(path);
    }
    v.trie = grammar::TokenTrie::of(*v.tokenizer);
    if (const auto eos = tokenizer::end_of_text_id(*v.tokenizer)) v.eos.push_back(*eos);
    for (const Entry& e : entries()) {
      std::vector<tokenizer::TokenId> ids;
      v.tokenizer->encode_ordinary(e.instance, ids);
      v.tokens.push_back(std::move(ids));
    }
  }
  return v.tokenizer ? &v : nullptr;
}

double us_since(Clock::time_point start) { return std::chrono::duration<double, std::micro>(Clock::now() - start).count(); }

// What a refusal names: the first quoted word of the message (a keyword), else its start.
std::string refusal_key(const std::string& message) {
  const size_t open = message.find('\'');
  const size_t close = open == std::string::npos ? open : message.find('\'', open + 1);
  if (close != std::string::npos && close - open < 40) return message.substr(open, close - open + 1);
  return message.substr(0, 60);
}

bool is_set(const std::vector<uint64_t>& mask, int64_t id) { return (mask[static_cast<size_t>(id) / 64] >> (id % 64)) & 1; }

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q / 100 * static_cast<double>(v.size() - 1) + 0.5))];
}

void BM_schema_masks(benchmark::State& state) {
  const size_t which = static_cast<size_t>(state.range(0));
  Vocab* v = get_vocab(which);
  if (!v) {
    state.SkipWithError("the tokenizer file is missing");
    return;
  }
  if (entries().empty()) {
    state.SkipWithError(("no schemas: " + schemas_path()).c_str());
    return;
  }
  Pool& pool = pools[which];
  std::vector<double> mask_us, ttfm_us;
  int64_t refused = 0, rejected = 0;
  for (auto _ : state) {
    const bool first_pass = pool.passes++ == 0;
    for (size_t s = 0; s < entries().size(); ++s) {
      const Entry& e = entries()[s];
      const auto& ids = v->tokens[s];
      const auto start = Clock::now();
      std::shared_ptr<const grammar::Grammar> g;
      try {
        g = std::make_shared<const grammar::Grammar>(grammar::compile_gbnf(grammar::json_schema_grammar(e.schema).gbnf));
      } catch (const std::exception& error) {
        ++refused;
        if (first_pass) {
          auto& [count, example] = pool.refusals[refusal_key(error.what())];
          if (count++ == 0) example = std::string(error.what()).substr(0, 90);
        }
        continue;
      }
      grammar::GrammarConstraint constraint(g, v->trie, v->eos);
      pool.compile_us.push_back(us_since(start));
      const auto first_mask = Clock::now();
      const std::vector<uint64_t>* mask = &constraint.allowed();
      double first_mask_us = us_since(first_mask);
      ttfm_us.push_back(pool.compile_us.back() + first_mask_us);
      bool ok = true;
      for (size_t t = 0; t < ids.size() && ok; ++t) {
        const auto step = Clock::now();
        if (t > 0) mask = &constraint.allowed();
        ok = is_set(*mask, ids[t]);
        if (ok) constraint.accept(ids[t]);
        mask_us.push_back(us_since(step) + first_mask_us);
        first_mask_us = 0;
        if (!ok && first_pass)
          pool.rejections.push_back(e.id + ": token " + std::to_string(t) + " of " + std::to_string(ids.size()) + " " +
                                    nlohmann::json(std::string(v->tokenizer->token_bytes(ids[t]))).dump());
      }
      if (ok && !constraint.finished() && !(v->eos.empty() ? false : constraint.allowed(v->eos[0]))) {
        ok = false;
        if (first_pass) pool.rejections.push_back(e.id + ": cannot end after the instance");
      }
      rejected += !ok;
    }
  }
  pool.mask_us.insert(pool.mask_us.end(), mask_us.begin(), mask_us.end());
  pool.ttfm_us.insert(pool.ttfm_us.end(), ttfm_us.begin(), ttfm_us.end());
  pool.schemas = static_cast<int64_t>(entries().size());
  pool.refused = refused;
  pool.rejected = rejected;
  state.counters["schemas"] = static_cast<double>(entries().size());
  state.counters["refused"] = static_cast<double>(refused);
  state.counters["rejected"] = static_cast<double>(rejected);
  state.counters["tokens"] = static_cast<double>(mask_us.size());
  state.counters["mask_us_p50"] = percentile(mask_us, 50);
  state.counters["mask_us_p99"] = percentile(mask_us, 99);
  state.counters["ttfm_us_p50"] = percentile(ttfm_us, 50);
  state.counters["ttfm_us_p99"] = percentile(ttfm_us, 99);
}

// MaskBench's published results (microseconds; Llama 3.1's tokenizer, one thread on an AMD EPYC
// of Azure NC96ads_A100_v4; all 11,306 schemas, every test): guidance-ai/jsonschemabench ba103c73,
// maskbench/README.md, "Performance Metrics" (llguidance 0.7.10, xgrammar 0.1.17,
// llama-cpp-python 0.3.8). TTFM there is compile_grammar alone.
struct Published {
  const char* engine;
  double tbm_p50, tbm_p75, tbm_p99, ttfm_p50, ttfm_p75, ttfm_p99;
};
constexpr Published kMaskBench[] = {
    {"LLGuidance", 46, 55, 533, 1037, 1534, 17988},
    {"XGrammar", 9, 39, 5687, 919459, 2399718, 900000000},
    {"llama.cpp", 17021, 22656, 60371, 312, 621, 28558},
};

void print_summary() {
  std::printf("\nschemas: %s (%zu)\n", schemas_path().c_str(), entries().size());
  std::printf("%-26s %9s %9s %9s %11s %11s %11s %11s\n", "microseconds", "mask p50", "mask p75", "mask p99",
              "compile p50", "compile p75", "compile p99", "ttfm p50");
  for (size_t i = 0; i < kVocabs; ++i) {
    const Pool& p = pools[i];
    if (p.passes == 0 || p.mask_us.empty()) continue;
    std::printf("%-26s %9.1f %9.1f %9.1f %11.0f %11.0f %11.0f %11.0f\n", (std::string("nanoformer ") + vocabs[i].name).c_str(),
                percentile(p.mask_us, 50), percentile(p.mask_us, 75), percentile(p.mask_us, 99), percentile(p.compile_us, 50),
                percentile(p.compile_us, 75), percentile(p.compile_us, 99), percentile(p.ttfm_us, 50));
    std::printf("  %lld schemas: %lld refused, %lld instances rejected (last pass); %zu masks in %lld passes\n",
                static_cast<long long>(p.schemas), static_cast<long long>(p.refused), static_cast<long long>(p.rejected),
                p.mask_us.size(), static_cast<long long>(p.passes));
  }
  for (const Published& m : kMaskBench)
    std::printf("%-26s %9.0f %9.0f %9.0f %11.0f %11.0f %11.0f %11s\n", (std::string("MaskBench ") + m.engine).c_str(), m.tbm_p50,
                m.tbm_p75, m.tbm_p99, m.ttfm_p50, m.ttfm_p75, m.ttfm_p99, "-");
  std::printf("(MaskBench: guidance-ai/jsonschemabench ba103c73 maskbench/README.md; Llama 3.1 tokenizer (128k), all 11,306\n"
              " schemas; its TTFM is compile alone, shown under compile; a different CPU: compare orders of magnitude)\n");
  for (size_t i = 0; i < kVocabs; ++i) {
    const Pool& p = pools[i];
    if (p.passes == 0) continue;
    std::vector<std::pair<int, std::string>> top;
    for (const auto& [what, counted] : p.refusals) top.emplace_back(counted.first, what);
    std::sort(top.rbegin(), top.rend());
    if (i == 0)
      for (size_t k = 0; k < top.size() && k < 10; ++k)
        std::printf("  refused %3d  %-24s e.g. %s\n", top[k].first, top[k].second.c_str(), p.refusals.at(top[k].second).second.c_str());
    for (size_t k = 0; k < p.rejections.size() && k < 12; ++k) std::printf("  rejected (%s) %s\n", vocabs[i].name, p.rejections[k].c_str());
  }
}

}  // namespace

BENCHMARK(BM_schema_masks)->Arg(0)->Arg(1)->Arg(2)->ArgNames({"vocab"})->Iterations(1)->Unit(benchmark::kMillisecond)->UseRealTime();

int main(int argc, char** argv) {
  const int status = nf::bench::run_benchmarks(argc, argv);
  print_summary();
  return status;
}
