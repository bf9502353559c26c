#pragma once
// Benchmark task files (`nanoformer eval --task FILE --layout NAME`): local JSONL, one record a line,
// in the layout of a known dataset, turned into the prompt pieces lm-evaluation-harness builds
// (its task YAMLs: doc_to_text, doc_to_choice, doc_to_target, description, target_delimiter " ",
// few-shot examples joined by "\n\n"). A record in the wrong layout (not JSON, a missing field, a
// field of the wrong type, a gold answer out of range) is an nf::Error naming file, line and field.
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace nf::eval {

enum class TaskLayout { hellaswag, arc, mmlu, ceval, mc, gsm8k };

// By name, as --layout takes it; an nf::Error naming the flag and the names otherwise.
TaskLayout task_layout_from_name(std::string_view name);
const char* task_layout_name(TaskLayout layout);
// Multiple choice by log-likelihood (every layout but gsm8k, which is generative).
bool is_multiple_choice(TaskLayout layout);

// One record in the form every layout becomes.
struct TaskRecord {
  int64_t line = 0;                  // 1-based line of the file
  std::string description;           // before the few-shot examples (MMLU's subject sentence), often empty
  std::string query;                 // the record's prompt (lm-eval's doc_to_text)
  std::string delimiter = " ";       // between the query and an answer (lm-eval's target_delimiter)
  std::vector<std::string> choices;  // multiple choice: the continuations, without the delimiter
  int64_t gold = 0;                  // multiple choice: the index of the right continuation
  std::string target;                // generative: the whole reference answer (a few-shot example's answer)
  std::string answer;                // generative: the answer to match (GSM8K: the text after "####", normalised)
  std::string question;              // generative: the question alone (GSM8K's), a chat's user message
  // The answer a few-shot example shows: choices[gold] or target.
  const std::string& shown_answer() const { return choices.empty() ? target : choices[static_cast<size_t>(gold)]; }
};

// Reads every record of a JSONL file in `layout` (blank lines skipped); throws nf::Error
// "FILE:LINE: field 'F' ..." on the first bad record, and when the file holds none.
std::vector<TaskRecord> load_task_records(const std::string& path, TaskLayout layout);

// lm-eval's HellaSwag preprocess: strip, " [title]" -> ". ", drop "[...]", "  " -> " ".
std::string hellaswag_preprocess(std::string_view text);

// The indices into a pool of `pool_size` few-shot examples that record `record_index` is shown:
// the first `count` of a Fisher-Yates shuffle driven by splitmix64 seeded with
// seed + record_index * 0x9E3779B97F4A7C15 (step k swaps k with k + next() % (pool_size - k)).
std::vector<size_t> fewshot_indices(uint64_t seed, uint64_t record_index, size_t pool_size, size_t count);

// The context a record is scored or generated after:
//   description + (shot.query + shot.delimiter + shot.shown_answer() + "\n\n" for each shot) + query.
std::string task_context(const TaskRecord& record, std::span<const TaskRecord* const> shots);

}  // namespace nf::eval
