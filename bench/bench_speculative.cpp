// Speculative decoding by prompt lookup (docs/inference.md, "Speculative decoding"): greedy decode
// tokens/s with and without --lookup-ngram on an extraction task whose answer copies the prompt,
// and on one whose answer copies nothing (every draft refused: the backoff's cost).
//
// The model has random weights (a preset, or --model FILE), which cannot copy: the answer is
// scripted instead, honestly for speed: a grammar that allows only the script's next token
// (GrammarConstraint over one letter per id) masks every row, so each step runs the model's full
// forward over its cache and the same accept path as any decode, and the tokens taken are the
// script's. What the script fixes is which drafts are taken, i.e. the acceptance rate, which is
// printed; the time of every forward, verification and rollback is real. The prompt is a
// "document" of random letters; the extraction answer is spans of it (8..40 tokens from random
// places) between a few new letters (1..6), about 85 % copied; the rewrite-nothing answer is new
// random letters. Both sides pay the grammar's mask (counted: its time is part of both rows).
//
// Each task runs as one stream (Session::generate) and as --streams streams decoded together (a
// server's batch: plain steps batch them in one forward, drafted streams verify each in its own).
// Rounds alternate the order of plain and lookup; the table gives medians and the range.
//
// With --draft FILE (a draft model, infer/draft_model.h) it measures free text instead: the model
// continues a prompt (--document tokens of --text FILE by --tokenizer, else random ids; round r the
// (r mod --prompts)-th of --prompts windows spread over the file) greedily, or sampled at
// --temperature, with and without the draft model; the acceptance rate is the models' own
// (greedy: the drafted tokens equal plain decoding's, checked).
//   NANOFORMER_THREADS=2 ./build/bench_speculative [--model minimind2-small] [--rounds 5] [--new 256]
//                                                  [--document 400] [--lookup-ngram 3] [--draft-max 3] [--streams 4]
//                                                  [--draft FILE --tokenizer FILE --text FILE --prompts 1 --temperature 0
//                                                   --draft-cost C (the backoff's cost of a draft token; default: the weights' ratio)
//                                                   --draft-p-min P (a draft ends before a token the draft model is less sure of)]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "nanoformer/autograd/grad_mode.h"
#include "nanoformer/formats/model_io.h"
#include "nanoformer/grammar/constraint.h"
#include "nanoformer/grammar/grammar.h"
#include "nanoformer/grammar/token_trie.h"
#include "nanoformer/infer/decode_step.h"
#include "nanoformer/infer/session.h"
#include "nanoformer/nanoformer.h"
#include "nanoformer/tokenizer/tokenizer.h"
#include "ops/cpu/quant/int8_isa.h"
#include "bench_process.h"

namespace {

using namespace nf;

constexpr int64_t kLetters = 52;

char letter(int64_t id) { return static_cast<char>(id < 26 ? 'a' + id : 'A' + (id - 26)); }

// One letter for each of the first 52 ids; the others spell "#<id>", which no script holds.
std::vector<std::string> vocabulary(int64_t size) {
  std::vector<std::string> v;
  for (int64_t i = 0; i < size; ++i) {
    std::string piece(1, i < kLetters ? letter(i) : '#');  // (appended: GCC 12's -Wrestrict misfires on "#" + s)
    if (i >= kLetters) piece += std::to_string(i);
    v.push_back(piece);
  }
  return v;
}

struct Task {
  std::string name;
  std::vector<int64_t> prompt, answer;
};

std::vector<int64_t> random_letters(std::mt19937& rng, int64_t n) {
  std::uniform_int_distribution<int64_t> pick(0, kLetters - 1);
  std::vector<int64_t> out;
  for (int64_t i = 0; i < n; ++i) out.push_back(pick(rng));
  return out;
}

// Spans of the document between a few new letters, `n` tokens in all.
std::vector<int64_t> extraction(std::mt19937& rng, const std::vector<int64_t>& document, int64_t n) {
  std::vector<int64_t> out;
  const auto length = static_cast<int64_t>(document.size());
  while (static_cast<int64_t>(out.size()) < n) {
    const int64_t span = std::uniform_int_distribution<int64_t>(8, 40)(rng);
    const int64_t from = std::uniform_int_distribution<int64_t>(0, length - span)(rng);
    out.insert(out.end(), document.begin() + from, document.begin() + from + span);
    const auto fresh = random_letters(rng, std::uniform_int_distribution<int64_t>(1, 6)(rng));
    out.insert(out.end(), fresh.begin(), fresh.end());
  }
  out.resize(static_cast<size_t>(n));
  return out;
}

struct Sample {
  double tokens_per_s = 0, acceptance = 0;
  int64_t drafted = 0, accepted = 0;
};

Sample run(models::DecoderLM& model, const std::shared_ptr<const grammar::TokenTrie>& trie, const Task& task,
           const infer::SpeculativeConfig& speculative) {
  std::string gbnf = "root ::= \"";
  for (const int64_t id : task.answer) gbnf += letter(id);
  gbnf += '"';
  grammar::GrammarConstraint constraint(std::make_shared<const grammar::Grammar>(grammar::compile_gbnf(gbnf)), trie, {});
  infer::Session session(model, static_cast<int64_t>(task.prompt.size() + task.answer.size()) + 8);
  infer::Sampler sampler({.temperature = 0});
  const auto r = session.generate(task.prompt, sampler, {.max_new_tokens = static_cast<int64_t>(task.answer.size())},
                                  {}, &constraint, speculative);
  if (r.tokens != task.answer) {
    std::fprintf(stderr, "bench_speculative: %s: the output is not the script\n", task.name.c_str());
    std::exit(1);
  }
  return {r.decode_tokens_per_s(), r.acceptance_rate(), r.draft_tokens, r.accepted_tokens};
}

double median(std::vector<double> v);

// The same with `n` streams decoded together (infer/decode_step.h): plain, one batched forward
// per step; with lookup, the drafted streams each in a forward of its own. Tokens/s of all.
Sample run_streams(models::DecoderLM& model, const std::shared_ptr<const grammar::TokenTrie>& trie, const Task& task,
                   const infer::SpeculativeConfig& speculative, int n) {
  std::string gbnf = "root ::= \"";
  for (const int64_t id : task.answer) gbnf += letter(id);
  gbnf += '"';
  const auto grammar = std::make_shared<const grammar::Grammar>(grammar::compile_gbnf(gbnf));
  std::deque<infer::CachedSequence> sequences;
  std::deque<infer::Sampler> samplers;
  std::deque<grammar::GrammarConstraint> constraints;
  std::deque<infer::DecodeStream> streams;
  std::vector<infer::DecodeStream*> all;
  const infer::StopCriteria stop{.max_new_tokens = static_cast<int64_t>(task.answer.size())};
  for (int i = 0; i < n; ++i) {
    sequences.emplace_back(model, static_cast<int64_t>(task.prompt.size() + task.answer.size()) + 8);
    samplers.emplace_back(infer::SamplerConfig{.temperature = 0});
    constraints.emplace_back(grammar, trie, std::vector<int64_t>{});
    streams.emplace_back(sequences.back(), samplers.back(), stop, task.prompt, &constraints.back(),
                         infer::StreamCallbacks{}, speculative);
    streams.back().prefill(task.prompt);
    all.push_back(&streams.back());
  }
  const auto start = std::chrono::steady_clock::now();
  infer::decode(all);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  Sample out;
  for (const infer::DecodeStream& s : streams) {
    if (s.generated() != task.answer) {
      std::fprintf(stderr, "bench_speculative: %s: a stream's output is not the script\n", task.name.c_str());
      std::exit(1);
    }
    out.drafted += s.drafted(), out.accepted += s.accepted();
  }
  out.tokens_per_s = static_cast<double>(n) * static_cast<double>(task.answer.size() - 1) / seconds;
  out.acceptance = out.drafted > 0 ? static_cast<double>(out.accepted) / static_cast<double>(out.drafted) : 0;
  return out;
}

// The time of a forward of k + 1 tokens (every position's logits) after `context` tokens, rolled
// back after each, relative to a forward of one: what verifying a draft of k costs in plain steps.
void verify_costs(models::DecoderLM& model, const std::vector<int64_t>& context, int reps) {
  infer::CachedSequence sequence(model, static_cast<int64_t>(context.size()) + 64);
  sequence.feed(context);
  const auto length = static_cast<int64_t>(context.size());
  std::printf("| draft k | forward of k + 1 (ms, median) | / plain step |\n| ---: | ---: | ---: |\n");
  double one = 0;
  for (const int64_t k : {0, 1, 2, 4, 8, 16, 32}) {
    std::vector<int64_t> ids(static_cast<size_t>(k + 1), 7);
    std::vector<double> ms;
    for (int r = 0; r < reps; ++r) {
      const auto start = std::chrono::steady_clock::now();
      sequence.feed(ids, /*all_positions=*/true);
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
      sequence.truncate(length);
    }
    const double m = median(ms);
    if (k == 0) one = m;
    std::printf("| %lld | %.3f | %.2f |\n", static_cast<long long>(k), m, m / one);
  }
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::string arg(int argc, char** argv, const std::string& name, const std::string& fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (argv[i] == name) return argv[i + 1];
  return fallback;
}

// Free text with a draft model: decode tokens/s of `model` continuing `prompt` with and without
// `draft` drafting, rounds alternating; the forward of each model alone beside it.
// Round r continues prompts[r % prompts.size()].
int free_text(models::DecoderLM& model, models::DecoderLM& draft, const std::vector<std::vector<int64_t>>& prompts,
              int64_t n_new, double temperature, infer::SpeculativeConfig speculative, int rounds) {
  const std::vector<int64_t>& prompt = prompts.front();
  int64_t longest = 0;
  for (const auto& p : prompts) longest = std::max(longest, static_cast<int64_t>(p.size()));
  const int64_t length = longest + n_new + 8;
  speculative.draft_model = &draft;
  const auto measure = [&](const infer::SpeculativeConfig& s, uint64_t seed, const std::vector<int64_t>& p) {
    infer::Session session(model, length);
    infer::Sampler sampler({.temperature = temperature, .seed = seed});
    return session.generate(p, sampler, {.max_new_tokens = n_new}, {}, nullptr, s);
  };
  // one decode step of each model alone after the prompt: what a draft token costs beside a target step
  const auto step_ms = [&](models::DecoderLM& m) {
    infer::CachedSequence sequence(m, length);
    sequence.feed(prompt);
    std::vector<double> ms;
    for (int r = 0; r < 10 * rounds; ++r) {
      const auto start = std::chrono::steady_clock::now();
      sequence.feed({7});
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
      sequence.truncate(static_cast<int64_t>(prompt.size()));
    }
    return median(ms);
  };
  const double target_ms = step_ms(model), draft_ms = step_ms(draft);
  std::printf("a decode step: model %.2f ms, draft model %.2f ms (%.2f of the model's)\n", target_ms, draft_ms,
              draft_ms / target_ms);
  measure({}, 0, prompt);  // warm-up
  std::vector<double> plain, drafted, ratio, acceptance;
  int64_t accepted = 0, total = 0;
  for (int r = 0; r < rounds; ++r) {
    infer::GenerationResult a, b;
    const auto seed = static_cast<uint64_t>(r);
    const std::vector<int64_t>& p = prompts[static_cast<size_t>(r) % prompts.size()];
    if (r % 2 == 0) {
      a = measure({}, seed, p);
      b = measure(speculative, seed, p);
    } else {
      b = measure(speculative, seed, p);
      a = measure({}, seed, p);
    }
    if (temperature == 0 && a.tokens != b.tokens) {
      std::fprintf(stderr, "bench_speculative: greedy decoding with the draft model differs from plain decoding\n");
      return 1;
    }
    plain.push_back(a.decode_tokens_per_s()), drafted.push_back(b.decode_tokens_per_s());
    ratio.push_back(drafted.back() / plain.back()), acceptance.push_back(b.acceptance_rate());
    accepted += b.accepted_tokens, total += b.draft_tokens;
  }
  std::printf("| text, temperature | plain tok/s | draft tok/s | speedup (median of rounds, range) | accepted / drafted |\n");
  std::printf("| --- | ---: | ---: | ---: | ---: |\n");
  std::printf("| free text, %g | %.1f | %.1f | %.2fx (%.2f-%.2f) | %lld / %lld (%.0f %%) |\n", temperature, median(plain),
              median(drafted), median(ratio), *std::min_element(ratio.begin(), ratio.end()),
              *std::max_element(ratio.begin(), ratio.end()), static_cast<long long>(accepted),
              static_cast<long long>(total), total > 0 ? 100.0 * static_cast<double>(accepted) / static_cast<double>(total) : 0.0);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string model_path = arg(argc, argv, "--model", "minimind2-small");
  const int rounds = std::stoi(arg(argc, argv, "--rounds", "5"));
  const int n_streams = std::stoi(arg(argc, argv, "--streams", "4"));
  const int64_t n_new = std::stoll(arg(argc, argv, "--new", "256"));
  const int64_t doc = std::stoll(arg(argc, argv, "--document", "400"));
  const infer::SpeculativeConfig lookup{.lookup_ngram = std::stoll(arg(argc, argv, "--lookup-ngram", "3")),
                                        .draft_max = std::stoll(arg(argc, argv, "--draft-max", "3")),
                                        .draft_min = std::stoll(arg(argc, argv, "--draft-min", "0"))};
  NoGradGuard no_grad;
  auto model = std::dynamic_pointer_cast<models::DecoderLM>(formats::load_model(model_path));
  if (!model) {
    std::fprintf(stderr, "bench_speculative: %s is no decoder language model\n", model_path.c_str());
    return 1;
  }
  model->eval();
  if (const std::string draft_path = arg(argc, argv, "--draft", ""); !draft_path.empty()) {
    auto draft = std::dynamic_pointer_cast<models::DecoderLM>(formats::load_model(draft_path));
    if (!draft) {
      std::fprintf(stderr, "bench_speculative: %s is no decoder language model\n", draft_path.c_str());
      return 1;
    }
    draft->eval();
    // --prompts N windows of --text (each from a paragraph's start, spread evenly over the file), or random ids
    const int64_t prompts_flag = std::stoll(arg(argc, argv, "--prompts", "1"));
    if (prompts_flag < 1) {
      std::fprintf(stderr, "bench_speculative: --prompts %lld: must be at least 1\n", static_cast<long long>(prompts_flag));
      return 1;
    }
    const auto n_prompts = static_cast<size_t>(prompts_flag);
    std::vector<std::vector<int64_t>> prompts;
    if (const std::string text = arg(argc, argv, "--text", ""); !text.empty()) {
      const auto tok = tokenizer::load_tokenizer(arg(argc, argv, "--tokenizer", ""));
      std::string chars;
      std::FILE* f = std::fopen(text.c_str(), "rb");
      if (f == nullptr) {
        std::fprintf(stderr, "bench_speculative: cannot read %s\n", text.c_str());
        return 1;
      }
      for (char buffer[65536]; const size_t n = std::fread(buffer, 1, sizeof buffer, f);) chars.append(buffer, n);
      std::fclose(f);
      for (size_t i = 0; i < n_prompts; ++i) {
        size_t from = chars.size() * i / n_prompts;
        if (i > 0 && (from = chars.find("\n\n", from)) != std::string::npos) from += 2;
        if (from == std::string::npos || from >= chars.size()) break;
        std::vector<int64_t> prompt;
        for (const auto id : tok->encode(chars.substr(from, static_cast<size_t>(16 * doc)))) prompt.push_back(id);
        prompt.resize(std::min<size_t>(prompt.size(), static_cast<size_t>(doc)));
        prompts.push_back(std::move(prompt));
      }
    } else {
      std::mt19937 ids(42);
      for (size_t i = 0; i < n_prompts; ++i) {
        std::vector<int64_t> prompt;
        for (int64_t j = 0; j < doc; ++j)
          prompt.push_back(std::uniform_int_distribution<int64_t>(0, model->config().vocab_size - 1)(ids));
        prompts.push_back(std::move(prompt));
      }
    }
    if (prompts.empty() || prompts.front().empty()) {
      std::fprintf(stderr, "bench_speculative: no prompt (--prompts, --text)\n");
      return 1;
    }
    const std::vector<int64_t>& prompt = prompts.front();
    std::printf("cpu: %s, %d threads; int8 kernels %s, BLAS %s\n", bench::cpu_model().c_str(), num_threads(),
                std::string(cpu::int8_isa_name(cpu::int8_isa())).c_str(), blas_info());
    const infer::SpeculativeConfig drafting{.draft_max = lookup.draft_max,
                                            .draft_min = lookup.draft_min,
                                            .draft_cost = std::stod(arg(argc, argv, "--draft-cost", "-1")),
                                            .draft_p_min = std::stod(arg(argc, argv, "--draft-p-min", "0"))};
    drafting.validate();
    std::printf("model %s, draft model %s, %zu prompts of %zu tokens, %lld new, --draft-max %lld, --draft-p-min %g, "
                "%d rounds\n",
                model_path.c_str(), draft_path.c_str(), prompts.size(), prompt.size(), static_cast<long long>(n_new),
                static_cast<long long>(drafting.draft_max), drafting.draft_p_min, rounds);
    return free_text(*model, *draft, prompts, n_new, std::stod(arg(argc, argv, "--temperature", "0")), drafting,
                     rounds);
  }
  const auto trie = std::make_shared<const grammar::TokenTrie>(vocabulary(model->config().vocab_size));
  std::mt19937 rng(42);
  const std::vector<int64_t> document = random_letters(rng, doc);
  const std::vector<Task> tasks = {{"extraction (copies the prompt)", document, extraction(rng, document, n_new)},
                                   {"nothing copied (drafts refused)", document, random_letters(rng, n_new)}};
  verify_costs(*model, document, 5 * rounds);
  std::printf("cpu: %s, %d threads; int8 kernels %s, BLAS %s\n", bench::cpu_model().c_str(), num_threads(),
              std::string(cpu::int8_isa_name(cpu::int8_isa())).c_str(), blas_info());
  std::printf("model %s, prompt %lld tokens, %lld new, --lookup-ngram %lld --draft-max %lld, %d rounds\n",
              model_path.c_str(), static_cast<long long>(doc), static_cast<long long>(n_new),
              static_cast<long long>(lookup.lookup_ngram), static_cast<long long>(lookup.draft_max), rounds);
  std::printf("| task | plain tok/s | lookup tok/s | speedup (median of rounds, range) | accepted / drafted |\n");
  std::printf("| --- | ---: | ---: | ---: | ---: |\n");
  for (const int n : {1, n_streams}) {
    for (const Task& task : tasks) {
      const auto measure = [&](const infer::SpeculativeConfig& speculative) {
        return n == 1 ? run(*model, trie, task, speculative) : run_streams(*model, trie, task, speculative, n);
      };
      measure({});  // warm-up
      std::vector<double> plain, spec, ratio;
      Sample last;
      for (int r = 0; r < rounds; ++r) {
        Sample a, b;
        if (r % 2 == 0) {
          a = measure({});
          b = measure(lookup);
        } else {
          b = measure(lookup);
          a = measure({});
        }
        plain.push_back(a.tokens_per_s), spec.push_back(b.tokens_per_s), ratio.push_back(b.tokens_per_s / a.tokens_per_s);
        last = b;
      }
      std::printf("| %s, %d stream%s | %.1f | %.1f | %.2fx (%.2f-%.2f) | %lld / %lld (%.0f %%) |\n", task.name.c_str(), n,
                  n == 1 ? "" : "s", median(plain), median(spec), median(ratio), *std::min_element(ratio.begin(), ratio.end()),
                  *std::max_element(ratio.begin(), ratio.end()), static_cast<long long>(last.accepted),
                  static_cast<long long>(last.drafted), 100 * last.acceptance);
      std::fflush(stdout);
    }
  }
  return 0;
}
