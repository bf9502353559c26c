#pragma once
// The reports of `nanoformer eval` (its --json files) side by side: one table in reference
// document 001's shape (a row per evaluated model, a column per context) and a chart of
// perplexity against context, one line per report; or each report's change from a baseline.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace nf::cli {

// Writes a report as JSON to a temporary beside `path`, then renames it (--json).
void write_eval_report(const std::string& path, const nlohmann::json& report);
// Reads an eval report; an nf::Error names the file and the key when it is not one.
nlohmann::json read_eval_report(const std::string& path);
// "| model | 128 | 256 | ... |" rows of perplexities, "-" where a report lacks a context.
std::string comparison_table(const std::vector<nlohmann::json>& reports);
// Perplexity against context (a log y axis when the values span more than a factor of 3).
void write_eval_chart(const std::string& path, const std::string& title, const std::vector<nlohmann::json>& reports);

// Benchmark reports (`--task`: "task", "layout" and its scores: acc and acc_norm, or exact_match).
bool is_task_report(const nlohmann::json& report);
// "| label | task | layout | records | acc | acc_norm | exact_match |", a row per report ("-" for a
// score its layout does not have).
std::string task_table(const std::vector<nlohmann::json>& reports);
// Scores across reports, such as the checkpoints of one run: the x axis the labels in order of
// first appearance, a line per task and score through the mean of the reports sharing a label
// (repeats: other seeds), and a dot per report.
void write_task_chart(const std::string& path, const std::string& title, const std::vector<nlohmann::json>& reports);

// Against a baseline (--baseline LABEL): the reports grouped by model (model_config's "name"), each
// group holding one report labelled `baseline`; every other report's perplexity beside its change
// from its group's baseline at the same context, change = 100 (ppl / ppl_baseline - 1) %.
// A row per label, a perplexity and a change column per model and context.
std::string change_table(const std::vector<nlohmann::json>& reports, const std::string& baseline);
// The changes in % as bars, one colour per model, a bar group per label; dashed lines at `bounds` %.
void write_change_chart(const std::string& path, const std::string& title, const std::vector<nlohmann::json>& reports,
                        const std::string& baseline, const std::vector<double>& bounds);

}  // namespace nf::cli
