// `nanoformer eval MODEL --data TOKENS --context 256,512,1024`: perplexity of a language model at
// several context lengths in one command (eval/perplexity.h), optionally past the model's
// max_seq_len and with a RoPE scaling applied at evaluation time (models/context_extension.h).
// With a tokenizer, bits per byte beside perplexity. A markdown table goes to stdout, progress and
// conditions to stderr, and --json writes the table as JSON. `--task FILE --layout NAME` runs a
// benchmark instead (eval_tasks.h).
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "command.h"
#include "eval_report.h"
#include "eval_tasks.h"
#include "generation_options.h"
#include "nanoformer/core/error.h"
#include "nanoformer/core/parallel.h"
#include "nanoformer/data/eval_data.h"
#include "nanoformer/formats/model_io.h"
#include "nanoformer/io/gguf.h"
#include "nanoformer/models/context_extension.h"
#include "nanoformer/tokenizer/tokenizer.h"
#include "nanoformer/eval/perplexity.h"
#include "nanoformer/util/progress_bar.h"

namespace nf::cli {
namespace {

constexpr const char* kContextExample = "(example: --context 256,512,1024)";

struct EvalArgs {
  std::string model, tokenizer, contexts, json, rope_scaling, rope_factor = "1", label, plot, title, cache_type = "f32",
      baseline;
  std::vector<std::string> data, combine;
  std::vector<double> bounds;
  uint64_t max_tokens = 131072;
  int64_t batch_tokens = 4096;
  bool quiet = false;
  TaskArgs task;  // --task: a benchmark instead of perplexity
};

// "256,512, 1024" -> {256, 512, 1024}: positive integers, each once.
std::vector<int64_t> parse_contexts(const std::string& text) {
  std::vector<int64_t> contexts;
  std::set<int64_t> seen;
  size_t begin = 0;
  while (begin <= text.size()) {
    const size_t comma = std::min(text.find(',', begin), text.size());
    std::string item = text.substr(begin, comma - begin);
    item.erase(0, item.find_first_not_of(' '));
    item.erase(item.find_last_not_of(' ') + 1);
    const bool digits = !item.empty() && item.size() <= 9 && item.find_first_not_of("0123456789") == std::string::npos;
    NF_CHECK(digits && std::stoll(item) > 0, "--context: '", item, "' is not a positive integer ", kContextExample);
    const int64_t context = std::stoll(item);
    NF_CHECK(seen.insert(context).second, "--context: ", context, " is listed twice");
    contexts.push_back(context);
    begin = comma + 1;
  }
  return contexts;
}

// The RoPE scale factor at one context: --rope-factor's number, or with "auto" the context over
// the model's max_seq_len (at least 1).
struct RopeFactor {
  bool automatic = false;
  double value = 1.0;
  double at(int64_t context, int64_t max_seq_len) const {
    return automatic ? std::max(1.0, static_cast<double>(context) / static_cast<double>(max_seq_len)) : value;
  }
};

RopeFactor parse_rope_factor(const std::string& text) {
  if (text == "auto") return {.automatic = true};
  size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  NF_CHECK(used == text.size() && used > 0 && std::isfinite(value) && value >= 1.0, "--rope-factor: '", text,
           "' is neither a number >= 1 nor auto");
  return {.value = value};
}

struct Row {
  eval::Perplexity result;
  double rope_factor = 1.0, seconds = 0.0;
};

std::string format(const char* pattern, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, pattern, value);
  return buffer;
}

// "linear x4", "ntk x2.5", or "-" without scaling.
std::string scaling_text(const std::string& scaling, double factor) {
  if (scaling == "none") return "-";
  return scaling + " x" + format("%g", factor);
}

void print_table(const std::vector<Row>& rows, const models::DecoderLMConfig& c, const std::string& scaling) {
  std::printf("| context | windows | tokens | loss | perplexity | bits/byte | positions | RoPE scaling |\n");
  std::printf("| ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |\n");
  for (const Row& r : rows) {
    const int64_t L = r.result.context;
    const std::string positions = L <= c.max_seq_len ? "within max_seq_len"
                                                     : format("%gx max_seq_len", static_cast<double>(L) /
                                                                                     static_cast<double>(c.max_seq_len));
    const std::string bpb = std::isnan(r.result.bits_per_byte) ? "-" : format("%.4f", r.result.bits_per_byte);
    std::printf("| %lld | %lld | %lld | %.4f | %.3f | %s | %s | %s |\n", static_cast<long long>(L),
                static_cast<long long>(r.result.windows), static_cast<long long>(r.result.tokens), r.result.loss,
                r.result.perplexity, bpb.c_str(), positions.c_str(), scaling_text(scaling, r.rope_factor).c_str());
  }
}

nlohmann::json report_json(const EvalArgs& a, const nlohmann::json& config, uint64_t stream_tokens,
                           const std::string& scaling, const std::vector<Row>& rows) {
  const auto max_seq_len = config.at("max_seq_len").get<int64_t>();
  nlohmann::json results = nlohmann::json::array();
  for (const Row& r : rows)
    results.push_back({{"context", r.result.context},
                       {"windows", r.result.windows},
                       {"tokens", r.result.tokens},
                       {"loss", r.result.loss},
                       {"perplexity", r.result.perplexity},
                       {"bytes", r.result.bytes},
                       {"bits_per_byte", std::isnan(r.result.bits_per_byte) ? nlohmann::json(nullptr)
                                                                            : nlohmann::json(r.result.bits_per_byte)},
                       {"past_max_seq_len", r.result.context > max_seq_len},
                       {"rope_factor", r.rope_factor},
                       {"seconds", r.seconds}});
  return {{"model", a.model},
          {"label", a.label},
          {"data", a.data},
          {"data_tokens", stream_tokens},
          {"max_tokens", a.max_tokens},
          {"rope_scaling", scaling},
          {"cache_type", a.cache_type},
          {"model_config", config},
          {"results", results}};
}

// --combine: earlier reports side by side, no model run.
void run_combine(const EvalArgs& a, const CLI::App& cmd) {
  for (const char* flag : {"--model", "--data", "--context", "--tokenizer", "--rope-scaling", "--rope-factor", "--json",
                           "--label", "--max-tokens", "--batch-tokens", "--cache-type"})
    NF_CHECK(cmd.count(flag) == 0, "--combine shows earlier reports; ", flag, " is for evaluating a model");
  NF_CHECK(cmd.count("--bounds") == 0 || (!a.baseline.empty() && !a.plot.empty()),
           "--bounds are lines on the --baseline chart: give --baseline LABEL and --plot FILE");
  for (double bound : a.bounds) NF_CHECK(std::isfinite(bound), "--bounds: ", bound, " is not a finite number");
  std::vector<nlohmann::json> reports;
  for (const std::string& path : a.combine) reports.push_back(read_eval_report(path));
  for (size_t i = 1; i < reports.size(); ++i)
    NF_CHECK(is_task_report(reports[i]) == is_task_report(reports[0]), "--combine: ", a.combine[i], " is a ",
             is_task_report(reports[i]) ? "benchmark" : "perplexity", " report but ", a.combine[0], " a ",
             is_task_report(reports[0]) ? "benchmark" : "perplexity", " report: combine reports of one kind");
  if (is_task_report(reports[0])) {  // benchmarks across checkpoints
    NF_CHECK(a.baseline.empty(), "--baseline compares perplexity reports; ", a.combine[0], " is a benchmark report");
    std::printf("%s", task_table(reports).c_str());
    if (!a.plot.empty()) write_task_chart(a.plot, a.title, reports);
    return;
  }
  if (a.baseline.empty()) {
    std::printf("%s", comparison_table(reports).c_str());
    if (!a.plot.empty()) write_eval_chart(a.plot, a.title, reports);
    return;
  }
  std::printf("%s", change_table(reports, a.baseline).c_str());
  if (!a.plot.empty()) write_change_chart(a.plot, a.title, reports, a.baseline, a.bounds);
}

// --task: a benchmark; the perplexity flags do not apply, the task flags only with it.
void run_benchmark(EvalArgs a, const CLI::App& cmd) {
  for (const char* flag : {"--data", "--context", "--rope-scaling", "--rope-factor", "--max-tokens", "--batch-tokens",
                           "--cache-type", "--combine", "--baseline", "--bounds", "--plot", "--title"})
    NF_CHECK(cmd.count(flag) == 0, flag, " is for perplexity; --task runs a benchmark");
  NF_CHECK(!a.model.empty() && !a.task.layout.empty(), "--task needs MODEL and --layout hellaswag|arc|mmlu|ceval|mc|gsm8k");
  a.task.model = a.model, a.task.tokenizer = a.tokenizer, a.task.json = a.json, a.task.label = a.label;
  a.task.quiet = a.quiet;
  run_task(a.task);
}

// The UTF-8 bytes of every id's text (0 for ids the tokenizer does not use), for bits per byte.
std::vector<int64_t> token_byte_lengths(const std::string& tokenizer_path, int64_t vocab_size) {
  if (tokenizer_path.empty()) return {};
  const std::unique_ptr<tokenizer::Tokenizer> tok = tokenizer::load_tokenizer(tokenizer_path);
  std::vector<int64_t> bytes(static_cast<size_t>(vocab_size), 0);
  for (int64_t id = 0; id < vocab_size && static_cast<size_t>(id) < tok->vocab_size(); ++id) {
    try {
      bytes[static_cast<size_t>(id)] = static_cast<int64_t>(tok->token_bytes(static_cast<tokenizer::TokenId>(id)).size());
    } catch (const Error&) {  // an unused id
    }
  }
  return bytes;
}

void run_eval(const EvalArgs& a, const CLI::App& cmd) {
  if (!a.task.task.empty()) return run_benchmark(a, cmd);
  for (const char* flag : {"--layout", "--fewshot", "--fewshot-file", "--seed", "--max-new-tokens", "--stop", "--tools",
                           "--chat-template"})
    NF_CHECK(cmd.count(flag) == 0, flag, " is for benchmarks: give --task FILE");
  NF_CHECK(cmd.count("--title") == 0 || !a.plot.empty(), "--title is the --plot chart's title: give --plot FILE");
  if (!a.combine.empty()) return run_combine(a, cmd);
  for (const char* flag : {"--baseline", "--bounds"})
    NF_CHECK(cmd.count(flag) == 0, flag, " compares earlier reports: give --combine REPORT.json ...");
  NF_CHECK(!a.model.empty() && !a.data.empty() && !a.contexts.empty(),
           "eval: give MODEL, --data and --context (or --combine REPORT.json ... to compare earlier reports)");
  const std::vector<int64_t> contexts = parse_contexts(a.contexts);
  const RopeFactor factor = parse_rope_factor(a.rope_factor);
  std::optional<nn::RopeScaling> scaling;
  if (!a.rope_scaling.empty()) scaling = nn::parse_rope_scaling(a.rope_scaling);
  NF_CHECK(cmd.count("--rope-factor") == 0 || (scaling && *scaling != nn::RopeScaling::none),
           "--rope-factor needs --rope-scaling linear, ntk or yarn");
  NF_CHECK(a.batch_tokens > 0, "--batch-tokens: ", a.batch_tokens, " must be positive");
  const QuantType cache_type = nn::kv_cache_type_from_name(a.cache_type);

  const std::shared_ptr<models::DecoderLM> model = formats::load_decoder_lm(a.model);
  const models::DecoderLMConfig& c = model->config();
  const nlohmann::json config = nlohmann::json::parse(model->config_json());
  const std::string used_scaling = scaling ? a.rope_scaling : config.at("rope_scaling").get<std::string>();
  auto extension = [&](int64_t L) {
    return models::ContextExtension{.max_seq_len = L, .rope_scaling = scaling,
                                    .rope_factor = scaling ? factor.at(L, c.max_seq_len) : c.rope_scale_factor};
  };
  for (int64_t L : contexts) models::check_context_extension(*model, extension(L));
  (void)model->make_cache(1, 1, cache_type);  // refuses a cache type the model's head_dim does not take

  // a GGUF model brings its own tokenizer
  const std::string tokenizer = a.tokenizer.empty() && io::is_gguf_file(a.model) ? tokenizer_beside(a.model) : a.tokenizer;
  const auto corpus = data::load_token_corpus(a.data, tokenizer, c.vocab_size, !a.quiet);
  const std::vector<int64_t> token_bytes = token_byte_lengths(tokenizer, c.vocab_size);
  int64_t total_windows = 0;
  for (int64_t L : contexts) {
    const int64_t windows = eval::perplexity_windows(corpus->size(), L, a.max_tokens);
    NF_CHECK(windows > 0, "--context ", L, ": the data (", corpus->sources(), ") holds ", corpus->size(),
             " tokens, fewer than one window of ", L, " + 1");
    total_windows += windows;
  }
  std::fprintf(stderr, "nanoformer eval: %s (%s positions, max_seq_len %lld); data %s: %llu tokens, at most %llu "
               "scored per context; KV cache: %s; threads: %d\n", a.model.c_str(), nn::position_kind_name(c.position),
               static_cast<long long>(c.max_seq_len), corpus->sources().c_str(),
               static_cast<unsigned long long>(corpus->size()), static_cast<unsigned long long>(a.max_tokens),
               cache_type == QuantType::f32 ? "none (f32 forward)" : quant_type_name(cache_type), num_threads());

  std::unique_ptr<util::ProgressBar> bar;
  if (!a.quiet) bar = std::make_unique<util::ProgressBar>(total_windows, "eval", "windows");
  std::vector<Row> rows;
  int64_t windows_before = 0;
  for (int64_t L : contexts) {
    const auto start = std::chrono::steady_clock::now();
    const models::ContextExtension e = extension(L);
    const std::shared_ptr<models::DecoderLM> extended = models::extend_context(model, e);
    const std::string status = "context " + std::to_string(L);
    Row row;
    row.rope_factor = e.rope_factor;
    row.result = eval::evaluate_perplexity(*extended, *corpus, {.context = L, .max_tokens = a.max_tokens,
                                                                 .batch_tokens = a.batch_tokens, .cache_type = cache_type,
                                                                 .token_bytes = token_bytes},
                                            [&](int64_t done) {
                                              if (bar) bar->update(windows_before + done, status);
                                            });
    row.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    windows_before += row.result.windows;
    rows.push_back(row);
  }
  if (bar) bar->finish();
  print_table(rows, c, used_scaling);
  const nlohmann::json report = report_json(a, config, corpus->size(), used_scaling, rows);
  if (!a.json.empty()) write_eval_report(a.json, report);
  if (!a.plot.empty()) write_eval_chart(a.plot, a.title.empty() ? a.model : a.title, {report});
}

}  // namespace

void add_eval_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "eval",
      "Perplexity of a language model at several context lengths, on held-out data.\n"
      "  nanoformer eval runs/rope/ckpt_00001000.safetensors --data val.bin --context 128,256,512,1024\n"
      "  nanoformer eval model.safetensors --data val.txt -t chars.json --context 512,1024 \\\n"
      "      --rope-scaling linear --rope-factor auto --json ppl.json\n"
      "Each context L cuts the first --max-tokens tokens into windows of L + 1 (overlapping by one),\n"
      "each run from position 0; perplexity = exp(mean cross-entropy of every target). Contexts past\n"
      "max_seq_len are evaluated by extending the position tables (sinusoidal, RoPE) or as is (ALiBi,\n"
      "T5 bias); a learned position table cannot be extended. --rope-scaling applies position\n"
      "interpolation (linear), NTK-aware scaling or YaRN at evaluation time; --rope-factor auto uses\n"
      "context / max_seq_len at each context.\n"
      "  nanoformer eval --combine rope.json alibi.json --plot ppl.png   (earlier --json reports side by side)\n"
      "  nanoformer eval --combine f32.json q8_0.json q4_0.json --baseline f32 --bounds 0.5,5 --plot change.png\n"
      "      (each report's change from the report labelled f32 of the same model, as bars)\n"
      "With a tokenizer, bits per byte beside perplexity. Benchmarks on local JSONL task files (docs/evaluation.md):\n"
      "  nanoformer eval model/ -t tokenizer.json --task hellaswag_val.jsonl --layout hellaswag --json hs.json\n"
      "  nanoformer eval model/ -t tokenizer.json --task arc_test.jsonl --layout arc --fewshot 5 --fewshot-file arc_dev.jsonl\n"
      "  nanoformer eval model/ -t tokenizer.json --task gsm8k_test.jsonl --layout gsm8k --max-new-tokens 256");
  auto a = std::make_shared<EvalArgs>();
  cmd->add_option("model,--model,-m", a->model, "Model: checkpoint, HF / MiniMind / nanochat folder, llama2.c .bin");
  cmd->add_option("--data,-d", a->data, "Token files, text or JSONL documents (text and JSONL need --tokenizer)");
  cmd->add_option("--tokenizer,-t", a->tokenizer, "tokenizer.json or character vocabulary, for text and JSONL data (default: a GGUF model's own)");
  cmd->add_option("--context,-T", a->contexts, "Context lengths, comma-separated: 256,512,1024");
  cmd->add_option("--max-tokens", a->max_tokens, "Targets scored per context, from the start of the data (0 = all)")
      ->capture_default_str();
  cmd->add_option("--batch-tokens", a->batch_tokens, "Tokens per forward pass (windows per pass: this / context)")
      ->capture_default_str();
  add_cache_type_flag(*cmd, a->cache_type);
  cmd->add_option("--rope-scaling", a->rope_scaling, "RoPE scaling at evaluation time: none, linear, ntk or yarn");
  cmd->add_option("--rope-factor", a->rope_factor, "Scale factor s >= 1 of --rope-scaling, or auto (context / max_seq_len)")
      ->capture_default_str();
  cmd->add_option("--json", a->json, "Also write the results to this JSON file");
  cmd->add_option("--label", a->label, "The model's name in --json reports, tables and charts (default: its path)");
  cmd->add_option("--combine", a->combine, "Instead of evaluating: print these --json reports as one table");
  cmd->add_option("--baseline", a->baseline,
                  "With --combine: show each report's perplexity change from the report of the same model "
                  "(its config's name) with this label");
  cmd->add_option("--bounds", a->bounds, "With --baseline: dashed lines on the chart at these changes in %: 0.5,5")
      ->delimiter(',');
  cmd->add_option("--plot", a->plot,
                  "Draw perplexity against context (.png or .svg; with --baseline, the changes as bars)");
  cmd->add_option("--title", a->title, "The chart's title");
  cmd->add_option("--task", a->task.task, "Instead of perplexity: a benchmark on this local JSONL task file");
  cmd->add_option("--layout", a->task.layout, "The --task file's record layout: hellaswag, arc, mmlu, ceval, mc, gsm8k");
  cmd->add_option("--fewshot", a->task.fewshot, "With --task: few-shot examples before each record, from --fewshot-file");
  cmd->add_option("--fewshot-file", a->task.fewshot_file, "With --task: the dev split the few-shot examples come from");
  cmd->add_option("--seed", a->task.seed, "With --fewshot: which examples each record is shown")->capture_default_str();
  cmd->add_option("--max-new-tokens", a->task.max_new_tokens, "With --layout gsm8k: the longest answer generated")
      ->capture_default_str();
  cmd->add_option("--stop", a->task.stop,
                  "With --layout gsm8k: a stop string, repeatable (default lm-eval's: \"Question:\", \"</s>\", \"<|im_end|>\")");
  cmd->add_option("--tools", a->task.tools,
                  "With --layout gsm8k: calculator, called while the model generates: a nanochat model's is nanochat's "
                  "(<|python_start|> ... <|python_end|>; the answer scored is the text with the tool's answers); with "
                  "--chat-template, in the Hermes syntax, offered in the prompt and answered as tool messages (the "
                  "answer scored is the final turn's text)");
  cmd->add_option("--chat-template", a->task.chat_template,
                  "With --layout gsm8k: each question as a user message of this chat template (a name, a template file, "
                  "a tokenizer_config.json; auto: the one beside the tokenizer), generation ending at its end of turn");
  cmd->add_flag("--quiet,-q", a->quiet, "No progress bar");
  cmd->callback([a, cmd] { run_eval(*a, *cmd); });
}

}  // namespace nf::cli
