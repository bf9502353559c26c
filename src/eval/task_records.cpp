// Benchmark task files in the layouts of known datasets (eval/task_records.h).
#include "nanoformer/eval/task_records.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <nlohmann/json.hpp>

#include "nanoformer/core/error.h"
#include "nanoformer/eval/answer_extraction.h"

namespace nf::eval {
namespace {

constexpr TaskLayout kLayouts[] = {TaskLayout::hellaswag, TaskLayout::arc, TaskLayout::mmlu,
                                   TaskLayout::ceval,     TaskLayout::mc,  TaskLayout::gsm8k};

// The fields of one record, each read with the file, line and field named when it is missing or
// of the wrong type.
class Fields {
 public:
  Fields(const nlohmann::json& row, const std::string& where) : row_(row), where_(where) {}
  const nlohmann::json& at(const char* field, const char* type) const {
    NF_CHECK(row_.contains(field), where_, ": field '", field, "' is missing (", type, ")");
    return row_.at(field);
  }
  std::string string(const char* field) const {
    const nlohmann::json& v = at(field, "a string");
    NF_CHECK(v.is_string(), where_, ": field '", field, "' must be a string, not ", v.dump());
    return v.get<std::string>();
  }
  int64_t integer(const char* field) const {
    const nlohmann::json& v = at(field, "an integer");
    NF_CHECK(v.is_number_integer(), where_, ": field '", field, "' must be an integer, not ", v.dump());
    return v.get<int64_t>();
  }
  // An integer, or a string of digits (HF's hellaswag stores label as "0".."3").
  int64_t index(const char* field) const {
    const nlohmann::json& v = at(field, "an integer or a string of digits");
    if (v.is_string()) {
      const std::string s = v.get<std::string>();
      NF_CHECK(!s.empty() && s.size() < 10 && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); }),
               where_, ": field '", field, "' must be an integer or a string of digits, not ", v.dump());
      return std::stoll(s);
    }
    NF_CHECK(v.is_number_integer(), where_, ": field '", field, "' must be an integer or a string of digits, not ", v.dump());
    return v.get<int64_t>();
  }
  std::vector<std::string> strings(const nlohmann::json& v, const std::string& field, size_t at_least) const {
    NF_CHECK(v.is_array() && v.size() >= at_least, where_, ": field '", field, "' must be an array of at least ",
             at_least, " strings, not ", v.dump());
    std::vector<std::string> out;
    for (size_t i = 0; i < v.size(); ++i) {
      NF_CHECK(v[i].is_string(), where_, ": field '", field, "[", i, "]' must be a string, not ", v[i].dump());
      out.push_back(v[i].get<std::string>());
    }
    return out;
  }
  std::vector<std::string> strings(const char* field, size_t at_least) const {
    return strings(at(field, "an array of strings"), field, at_least);
  }
  int64_t gold(const char* field, int64_t value, size_t choices) const {
    NF_CHECK(value >= 0 && static_cast<size_t>(value) < choices, where_, ": field '", field, "' is ", value,
             ", not an index below the ", choices, " choices");
    return value;
  }
  const std::string& where() const { return where_; }

 private:
  const nlohmann::json& row_;
  const std::string& where_;
};

std::string strip(std::string_view text) {
  const auto space = [](unsigned char c) { return std::isspace(c) != 0; };
  size_t begin = 0, end = text.size();
  while (begin < end && space(static_cast<unsigned char>(text[begin]))) ++begin;
  while (end > begin && space(static_cast<unsigned char>(text[end - 1]))) --end;
  return std::string(text.substr(begin, end - begin));
}

std::string replace_all(std::string text, std::string_view from, std::string_view to) {
  std::string out;
  for (size_t at = 0;;) {
    const size_t found = text.find(from, at);
    out.append(text, at, found == std::string::npos ? std::string::npos : found - at);
    if (found == std::string::npos) return out;
    out.append(to);
    at = found + from.size();
  }
}

// Python's str.capitalize on ASCII: the first character upper case, the rest lower case.
std::string capitalize(std::string text) {
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) text[i] = static_cast<char>(i == 0 ? std::toupper(c) : std::tolower(c));
  }
  return text;
}

// "A. x\nB. y\nC. z\nD. w" of four options.
std::string lettered(const std::vector<std::string>& options) {
  std::string out;
  for (size_t i = 0; i < options.size(); ++i) {
    out += '\n';
    out += static_cast<char>('A' + i);
    out.append(". ").append(options[i]);
  }
  return out;
}

TaskRecord read_record(const nlohmann::json& row, TaskLayout layout, const std::string& where) {
  const Fields f(row, where);
  TaskRecord r;
  switch (layout) {
    case TaskLayout::hellaswag: {  // lm-eval hellaswag.yaml / utils.py _process_doc
      const std::string ctx = f.string("ctx_a") + " " + capitalize(f.string("ctx_b"));
      r.query = hellaswag_preprocess(f.string("activity_label") + ": " + ctx);
      for (const std::string& ending : f.strings("endings", 2)) r.choices.push_back(hellaswag_preprocess(ending));
      r.gold = f.gold("label", f.index("label"), r.choices.size());
      break;
    }
    case TaskLayout::arc: {  // lm-eval arc_easy.yaml
      r.question = f.string("question");
      r.query = "Question: " + r.question + "\nAnswer:";
      const nlohmann::json& choices = f.at("choices", "an object with arrays 'text' and 'label'");
      NF_CHECK(choices.is_object() && choices.contains("text") && choices.contains("label"), where,
               ": field 'choices' must be an object with arrays 'text' and 'label', not ", choices.dump());
      r.choices = f.strings(choices.at("text"), "choices.text", 2);
      const std::vector<std::string> labels = f.strings(choices.at("label"), "choices.label", r.choices.size());
      NF_CHECK(labels.size() == r.choices.size(), where, ": field 'choices.label' has ", labels.size(),
               " labels for ", r.choices.size(), " texts");
      const std::string key = f.string("answerKey");
      const auto it = std::find(labels.begin(), labels.end(), key);
      NF_CHECK(it != labels.end(), where, ": field 'answerKey' is \"", key, "\", not one of choices.label");
      r.gold = it - labels.begin();
      break;
    }
    case TaskLayout::mmlu: {  // lm-eval mmlu/default/_default_template_yaml and _generate_configs.py
      const std::vector<std::string> options = f.strings("choices", 4);
      NF_CHECK(options.size() == 4, where, ": field 'choices' must hold 4 strings, not ", options.size());
      r.description = "The following are multiple choice questions (with answers) about " +
                      replace_all(f.string("subject"), "_", " ") + ".\n\n";
      r.query = strip(f.string("question")) + lettered(options) + "\nAnswer:";
      r.choices = {"A", "B", "C", "D"};
      r.gold = f.gold("answer", f.integer("answer"), 4);
      break;
    }
    case TaskLayout::ceval: {  // lm-eval ceval/_default_ceval_yaml (without the per-subject description)
      const std::vector<std::string> options = {f.string("A"), f.string("B"), f.string("C"), f.string("D")};
      r.query = strip(f.string("question")) + lettered(options) + "\n答案：";
      r.choices = {"A", "B", "C", "D"};
      const std::string answer = f.string("answer");
      const auto it = std::find(r.choices.begin(), r.choices.end(), answer);
      NF_CHECK(it != r.choices.end(), where, ": field 'answer' is \"", answer, "\", not one of A, B, C, D");
      r.gold = it - r.choices.begin();
      break;
    }
    case TaskLayout::mc: {  // generic: the context and the continuations exactly as written
      r.query = f.string("context");
      r.delimiter = "";
      r.choices = f.strings("choices", 2);
      r.gold = f.gold("gold", f.integer("gold"), r.choices.size());
      break;
    }
    case TaskLayout::gsm8k: {  // lm-eval gsm8k.yaml
      r.question = f.string("question");
      r.query = "Question: " + r.question + "\nAnswer:";
      r.target = f.string("answer");
      const size_t hashes = r.target.rfind("####");
      NF_CHECK(hashes != std::string::npos, where, ": field 'answer' has no \"#### N\" final answer");
      r.answer = normalize_answer(r.target.substr(hashes + 4));
      NF_CHECK(!r.answer.empty(), where, ": field 'answer' has nothing after \"####\"");
      break;
    }
  }
  return r;
}

}  // namespace

TaskLayout task_layout_from_name(std::string_view name) {
  for (TaskLayout layout : kLayouts)
    if (name == task_layout_name(layout)) return layout;
  NF_FAIL("--layout: '", name, "' is not one of hellaswag, arc, mmlu, ceval, mc, gsm8k");
}

const char* task_layout_name(TaskLayout layout) {
  switch (layout) {
    case TaskLayout::hellaswag: return "hellaswag";
    case TaskLayout::arc: return "arc";
    case TaskLayout::mmlu: return "mmlu";
    case TaskLayout::ceval: return "ceval";
    case TaskLayout::mc: return "mc";
    case TaskLayout::gsm8k: return "gsm8k";
  }
  return "?";
}

bool is_multiple_choice(TaskLayout layout) { return layout != TaskLayout::gsm8k; }

std::vector<TaskRecord> load_task_records(const std::string& path, TaskLayout layout) {
  std::ifstream in(path);
  NF_CHECK(in, path, ": cannot open the task file");
  std::vector<TaskRecord> records;
  std::string text;
  for (int64_t line = 1; std::getline(in, text); ++line) {
    if (strip(text).empty()) continue;
    const std::string where = path + ":" + std::to_string(line);
    const nlohmann::json row = nlohmann::json::parse(text, nullptr, false);
    NF_CHECK(!row.is_discarded() && row.is_object(), where, ": not a JSON object (", task_layout_name(layout),
             " layout)");
    records.push_back(read_record(row, layout, where));
    records.back().line = line;
  }
  NF_CHECK(!records.empty(), path, ": no records");
  return records;
}

std::string hellaswag_preprocess(std::string_view text) {
  std::string out = replace_all(strip(text), " [title]", ". ");
  std::string kept;  // re.sub("\\[.*?\\]", "", text): '.' stops at a newline
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == '[') {
      const size_t close = out.find_first_of("]\n", i + 1);
      if (close != std::string::npos && out[close] == ']') {
        i = close;
        continue;
      }
    }
    kept += out[i];
  }
  return replace_all(kept, "  ", " ");
}

std::vector<size_t> fewshot_indices(uint64_t seed, uint64_t record_index, size_t pool_size, size_t count) {
  NF_CHECK(count <= pool_size, "--fewshot ", count, ": the few-shot file holds only ", pool_size, " records");
  uint64_t state = seed + record_index * 0x9E3779B97F4A7C15ull;
  auto next = [&state] {  // splitmix64
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  };
  std::vector<size_t> order(pool_size);
  for (size_t i = 0; i < pool_size; ++i) order[i] = i;
  for (size_t k = 0; k < count; ++k) std::swap(order[k], order[k + next() % (pool_size - k)]);
  order.resize(count);
  return order;
}

std::string task_context(const TaskRecord& record, std::span<const TaskRecord* const> shots) {
  std::string context = record.description;
  for (const TaskRecord* shot : shots) context += shot->query + shot->delimiter + shot->shown_answer() + "\n\n";
  return context + record.query;
}

}  // namespace nf::eval
