// Benchmarks on local task files: multiple choice by log-likelihood, GSM8K by generation (eval_tasks.h).
#include "eval_tasks.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <deque>
#include <memory>
#include <nlohmann/json.hpp>

#include "eval_report.h"
#include "generation_options.h"
#include "nanoformer/autograd/grad_mode.h"
#include "nanoformer/core/error.h"
#include "nanoformer/formats/model_io.h"
#include "nanoformer/infer/decode_step.h"
#include "nanoformer/infer/prompt_ids.h"
#include "nanoformer/infer/stop_criteria.h"
#include "nanoformer/infer/tool_choice.h"
#include "nanoformer/infer/tool_transcript.h"
#include "nanoformer/tokenizer/chat_template.h"
#include "nanoformer/io/gguf.h"
#include "nanoformer/tokenizer/tokenizer.h"
#include "nanoformer/eval/answer_extraction.h"
#include "nanoformer/eval/choice_scoring.h"
#include "nanoformer/eval/task_records.h"
#include "nanoformer/util/progress_bar.h"

namespace nf::cli {
namespace {

struct Task {
  eval::TaskLayout layout;
  std::vector<eval::TaskRecord> records, shots;
  // The context of record i, with its few-shot examples.
  std::string context(const TaskArgs& a, size_t i) const {
    std::vector<const eval::TaskRecord*> shown;
    for (size_t k : eval::fewshot_indices(a.seed, i, shots.size(), static_cast<size_t>(a.fewshot)))
      shown.push_back(&shots[k]);
    return eval::task_context(records[i], shown);
  }
};

// acc and acc_norm of one record from its summed log-probs.
nlohmann::json score_record(const eval::TaskRecord& r, const std::vector<double>& logprobs) {
  std::vector<double> normalised;
  std::vector<int64_t> bytes;
  for (size_t c = 0; c < logprobs.size(); ++c) {
    bytes.push_back(static_cast<int64_t>(r.choices[c].size()));
    normalised.push_back(logprobs[c] / static_cast<double>(std::max<size_t>(1, r.choices[c].size())));
  }
  const size_t pred = eval::argmax(logprobs), pred_norm = eval::argmax(normalised);
  return {{"line", r.line},       {"gold", r.gold},           {"logprobs", logprobs}, {"bytes", bytes},
          {"pred", pred},         {"pred_norm", pred_norm},   {"acc", pred == static_cast<size_t>(r.gold) ? 1 : 0},
          {"acc_norm", pred_norm == static_cast<size_t>(r.gold) ? 1 : 0}};
}

// Records the generative layout decodes together: their streams share each step's forward
// (infer/decode_step.h), as the server's sequences do, and each gets the tokens it gets alone.
constexpr size_t kGenerationBatch = 8;

// One record's greedy generation until a stop string (the text before it is the answer), the chat
// template's end of turn, or max_new_tokens; in place (its stream refers to its sequence, sampler
// and transcript). With tools, a chat-template model's answer is its final turn's text
// (infer/tool_transcript.h); nanochat's calculator's answers are part of the text.
struct Generation {
  Generation(models::DecoderLM& model, const tokenizer::Tokenizer& tok, std::vector<int64_t> ids, const TaskArgs& a,
             const std::vector<std::string>& stop, const infer::ToolUse* tool_use,
             const tokenizer::ChatTemplate* chat_template)
      : sequence(model, 0, {.crop = true}),
        transcript(stop),
        tools(tool_use ? tool_use->clone() : nullptr),
        by_template(chat_template != nullptr),
        stream(sequence, argmax,
               {.eos_ids = chat_template ? std::vector<int64_t>{static_cast<int64_t>(chat_template->end_token())}
                                         : std::vector<int64_t>{},
                .max_new_tokens = a.max_new_tokens},
               ids, nullptr,
               {.on_token = [this, &tok](int64_t id) {
                  return transcript.push(tok.token_bytes(static_cast<tokenizer::TokenId>(id)),
                                         by_template && stream.forced().back());
                },
                .tools = tools.get()}) {
    if (tools) tools->on_turn = [this](const infer::ToolTurn& turn) { transcript.record(turn); };
    stream.prefill(ids);
  }
  std::string answer() {
    transcript.finish();
    return by_template ? transcript.final_answer() : transcript.turns().front();
  }

  infer::CachedSequence sequence;
  infer::Sampler argmax{{.temperature = 0.0}};
  infer::ToolTranscript transcript;
  std::unique_ptr<infer::ToolUse> tools;  // --tools calculator
  bool by_template;                        // prompted through a chat template
  infer::DecodeStream stream;
};

// The prompt's ids, its last max_seq_len (the window the model sees), checked against the vocabulary.
std::vector<int64_t> check_prompt(const models::DecoderLM& model, const std::vector<tokenizer::TokenId>& encoded) {
  std::vector<int64_t> ids(encoded.begin(), encoded.end());
  NF_CHECK(!ids.empty(), "--task: a prompt encodes to no token");
  const int64_t window = model.config().max_seq_len;
  if (static_cast<int64_t>(ids.size()) > window) ids.erase(ids.begin(), ids.end() - window);
  infer::check_token_ids(ids, model.config().vocab_size, "--task: the prompt");
  return ids;
}

std::vector<int64_t> encode_prompt(const models::DecoderLM& model, const tokenizer::Tokenizer& tok, const std::string& prompt) {
  return check_prompt(model, tok.encode(prompt));
}

// The rows of the report of records first .. first + n - 1: their choices' scores (one at a time),
// or their generations, decoded together, and exact matches.
std::vector<nlohmann::json> evaluate_records(models::DecoderLM& model, const tokenizer::Tokenizer& tok, const Task& t,
                                             const TaskArgs& a, size_t first, size_t n,
                                             const std::vector<std::string>& stop, const infer::ToolUse* tools,
                                             const tokenizer::ChatTemplate* chat_template) {
  std::vector<nlohmann::json> rows;
  std::deque<Generation> generations;
  for (size_t i = first; i < first + n; ++i) {
    const eval::TaskRecord& r = t.records[i];
    try {
      const std::string context = t.context(a, i);
      if (eval::is_multiple_choice(t.layout)) {
        std::vector<std::string> continuations;
        for (const std::string& choice : r.choices) continuations.push_back(r.delimiter + choice);
        rows.push_back(score_record(r, eval::continuation_logprobs(model, eval::encode_choices(tok, context, continuations))));
      } else {
        const std::vector<tokenizer::ChatMessage> user = {{"user", r.question}};
        const std::vector<int64_t> ids =
            chat_template ? check_prompt(model, chat_template->render_for_completion(user, tools ? tools->offered_tools() : ""))
                          : encode_prompt(model, tok, context);
        generations.emplace_back(model, tok, ids, a, stop, tools, chat_template);
      }
    } catch (const Error& e) {  // a text the tokenizer or the model cannot take: which record
      NF_FAIL(a.task, ":", r.line, ": ", e.what());
    }
  }
  if (generations.empty()) return rows;
  std::vector<infer::DecodeStream*> streams;
  for (Generation& g : generations) streams.push_back(&g.stream);
  infer::decode(streams);
  for (size_t k = 0; k < n; ++k) {
    const eval::TaskRecord& r = t.records[first + k];
    const std::string generated = generations[k].answer();
    const std::optional<std::string> extracted = eval::extract_answer(generated);
    rows.push_back({{"line", r.line},
                    {"answer", r.answer},
                    {"generated", generated},
                    {"extracted", extracted ? nlohmann::json(*extracted) : nlohmann::json(nullptr)},
                    {"exact_match", extracted && *extracted == r.answer ? 1 : 0}});
  }
  return rows;
}

void print_table(const TaskArgs& a, const Task& t, double acc, double acc_norm, double seconds) {
  const bool mc = eval::is_multiple_choice(t.layout);
  std::printf("| task | layout | records | shots | %s | seconds |\n", mc ? "acc | acc_norm" : "exact_match");
  std::printf("| --- | --- | ---: | ---: | ---: |%s ---: |\n", mc ? " ---: |" : "");
  std::printf("| %s | %s | %zu | %lld | %.4f |", a.task.c_str(), a.layout.c_str(), t.records.size(),
              static_cast<long long>(a.fewshot), acc);
  if (mc) std::printf(" %.4f |", acc_norm);
  std::printf(" %.1f |\n", seconds);
}

}  // namespace

void run_task(const TaskArgs& a) {
  const eval::TaskLayout layout = eval::task_layout_from_name(a.layout);
  NF_CHECK(a.fewshot >= 0, "--fewshot: ", a.fewshot, " must be 0 or more");
  NF_CHECK((a.fewshot > 0) == !a.fewshot_file.empty(), "--fewshot N and --fewshot-file FILE go together");
  NF_CHECK(a.max_new_tokens > 0, "--max-new-tokens: ", a.max_new_tokens, " must be positive");
  NF_CHECK(a.stop.empty() || layout == eval::TaskLayout::gsm8k, "--stop is for generative tasks (--layout gsm8k)");
  for (const std::string& s : a.stop) NF_CHECK(!s.empty(), "--stop: a stop string is empty");
  NF_CHECK(a.tools.empty() || a.tools == "calculator", "--tools: unknown tool '", a.tools, "' (known: calculator)");
  NF_CHECK(a.tools.empty() || layout == eval::TaskLayout::gsm8k, "--tools is for generative tasks (--layout gsm8k)");
  NF_CHECK(a.chat_template.empty() || layout == eval::TaskLayout::gsm8k,
           "--chat-template is for generative tasks (--layout gsm8k)");
  NF_CHECK(a.chat_template.empty() || a.fewshot == 0, "--chat-template: few-shot examples are not rendered as turns (--fewshot 0)");
  const std::string tokenizer_path =
      a.tokenizer.empty() && io::is_gguf_file(a.model) ? tokenizer_beside(a.model) : a.tokenizer;
  NF_CHECK(!tokenizer_path.empty(), "--task needs --tokenizer (the model's tokenizer.json or character vocabulary)");

  Task t{.layout = layout, .records = eval::load_task_records(a.task, layout), .shots = {}};
  if (a.fewshot > 0) {
    t.shots = eval::load_task_records(a.fewshot_file, layout);
    NF_CHECK(static_cast<size_t>(a.fewshot) <= t.shots.size(), "--fewshot ", a.fewshot, ": ", a.fewshot_file,
             " holds only ", t.shots.size(), " records");
  }
  const std::unique_ptr<tokenizer::Tokenizer> tok = tokenizer::load_tokenizer(tokenizer_path);
  const std::shared_ptr<models::DecoderLM> model = formats::load_decoder_lm(a.model);
  model->eval();
  NoGradGuard no_grad;
  const std::vector<std::string> stop =
      a.stop.empty() ? std::vector<std::string>{"Question:", "</s>", "<|im_end|>"} : a.stop;
  std::unique_ptr<tokenizer::ChatTemplate> chat_template;
  if (!a.chat_template.empty()) {
    const std::string name =
        a.chat_template == "auto" ? tokenizer::default_chat_template(*tok, tokenizer_path) : a.chat_template;
    NF_CHECK(!name.empty(), "--chat-template auto: the tokenizer ", tokenizer_path, " has no chat template beside it");
    chat_template = tokenizer::make_chat_template(name, *tok);
  }
  infer::ToolOptions tool_options;
  if (!a.tools.empty()) tool_options.tools = {a.tools};
  const std::unique_ptr<infer::ToolUse> tools = infer::make_tool_use(tool_options, *tok, chat_template.get());
  std::fprintf(stderr, "nanoformer eval: %s on %s (%s layout, %zu records, %lld-shot)\n", a.model.c_str(),
               a.task.c_str(), a.layout.c_str(), t.records.size(), static_cast<long long>(a.fewshot));

  const auto start = std::chrono::steady_clock::now();
  std::unique_ptr<util::ProgressBar> bar;
  if (!a.quiet) bar = std::make_unique<util::ProgressBar>(static_cast<int64_t>(t.records.size()), "eval", "records");
  nlohmann::json rows = nlohmann::json::array();
  double acc = 0, acc_norm = 0;
  const size_t batch = eval::is_multiple_choice(layout) ? 1 : kGenerationBatch;
  for (size_t i = 0; i < t.records.size(); i += batch) {
    for (nlohmann::json& row : evaluate_records(*model, *tok, t, a, i, std::min(batch, t.records.size() - i), stop, tools.get(),
                                                  chat_template.get())) {
      if (eval::is_multiple_choice(layout)) {
        acc += row.at("acc").get<int>(), acc_norm += row.at("acc_norm").get<int>();
      } else {
        acc += row.at("exact_match").get<int>();
      }
      rows.push_back(std::move(row));
    }
    if (bar) bar->update(static_cast<int64_t>(std::min(i + batch, t.records.size())));
  }
  if (bar) bar->finish();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const auto n = static_cast<double>(t.records.size());
  acc /= n, acc_norm /= n;
  print_table(a, t, acc, acc_norm, seconds);
  if (a.json.empty()) return;
  nlohmann::json report = {{"model", a.model},   {"label", a.label},     {"task", a.task},
                           {"layout", a.layout}, {"fewshot", a.fewshot}, {"seed", a.seed},
                           {"records", t.records.size()},                {"seconds", seconds},
                           {"model_config", nlohmann::json::parse(model->config_json())}};
  if (eval::is_multiple_choice(layout)) {
    report["acc"] = acc, report["acc_norm"] = acc_norm;
  } else {
    report["exact_match"] = acc, report["stop"] = stop, report["max_new_tokens"] = a.max_new_tokens;
    if (chat_template) report["chat_template"] = std::string(chat_template->name());
    if (!a.tools.empty()) report["tools"] = a.tools;
  }
  report["per_record"] = rows;
  write_eval_report(a.json, report);
}

}  // namespace nf::cli
