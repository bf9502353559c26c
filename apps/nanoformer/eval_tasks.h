#pragma once
// `nanoformer eval MODEL --task FILE --layout NAME`: a benchmark on a local JSONL task file.
// Multiple-choice layouts (hellaswag, arc, mmlu, ceval, mc) are scored by log-likelihood
// (eval/choice_scoring.h): acc = argmax of the summed continuation log-probs is the gold choice,
// acc_norm = the same with each sum divided by its choice's UTF-8 bytes. gsm8k is generative:
// greedy generation until a stop string, the answer extracted (eval/answer_extraction.h) and
// matched exactly. Few-shot examples come from --fewshot-file (eval/task_records.h).
#include <cstdint>
#include <string>
#include <vector>

namespace nf::cli {

struct TaskArgs {
  std::string model, tokenizer, task, layout, fewshot_file, json, label;
  int64_t fewshot = 0;
  uint64_t seed = 1234;
  int64_t max_new_tokens = 256;
  std::vector<std::string> stop;  // gsm8k; empty: lm-eval's "Question:", "</s>", "<|im_end|>"
  std::string tools;              // gsm8k: "calculator" answers as generate --tools calculator does
  std::string chat_template;      // gsm8k: prompt the question as a user message of this template ("auto": the tokenizer's)
  bool quiet = false;
};

// Validates the options, reads and checks the task (and few-shot) file before loading the model,
// prints the results table to stdout and writes --json.
void run_task(const TaskArgs& args);

}  // namespace nf::cli
