// `nanoformer eval --task`: benchmarks on local JSONL task files, against transformers. The fixtures
// (tests/fixtures/eval, written by tools/golden/eval_task_fixtures.py) hold 50 records in each
// multiple-choice layout, a random-weight LlamaForCausalLM saved with save_pretrained, a character
// vocabulary, and what transformers computed: every choice's summed continuation log-prob, acc and
// acc_norm, and greedy GSM8K generations cut at stop strings. The tolerance, 1e-4 on a sum of up
// to ~40 log-probs of magnitude ~5: both sides run the same f32 model, but with different kernels,
// summation orders and (here) a KV-cached prefix, so each logit differs by ~1e-6 relative; summed
// over a continuation that is ~1e-5, and 1e-4 leaves room without hiding a wrong token (a wrong or
// shifted token moves a sum by ~0.1 or more). Bad task files are one line naming file, line and
// field, before the model is read.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "infer/bigram_model.h"
#include "nanoformer/eval/answer_extraction.h"
#include "nanoformer/formats/model_io.h"
#include "nanoformer/tokenizer/tokenizer_json.h"
#include "support/cli_test.h"
#include "tokenizer/fixtures.h"

namespace nf {
namespace {

const std::string kFixtures = NF_SOURCE_DIR "/tests/fixtures/eval/";

class EvalTasksTest : public testing::CliTest {
 protected:
  static nlohmann::json expected() {
    return nlohmann::json::parse(testing::read_text(kFixtures + "expected.json"));
  }
  // Runs a task on the fixture model; returns its --json report.
  nlohmann::json run_task(const std::string& layout, const std::string& file, const std::string& extra = "") const {
    const auto r = cli("eval " + kFixtures + "llama_char -t " + kFixtures + "chars.json --task " + kFixtures + file +
                       " --layout " + layout + " --json " + path("report.json") + " -q " + extra);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("| task | layout | records | shots |"), std::string::npos) << r.out;
    return nlohmann::json::parse(testing::read_text(path("report.json")));
  }
  void expect_scores(const nlohmann::json& report, const nlohmann::json& oracle, const std::string& layout) const {
    const auto& rows = report.at("per_record");
    ASSERT_EQ(rows.size(), oracle.at("records").size()) << layout;
    ASSERT_GE(rows.size(), 50u) << layout;
    for (size_t i = 0; i < rows.size(); ++i) {
      const auto& want = oracle.at("records")[i];
      EXPECT_EQ(rows[i].at("gold"), want.at("gold")) << layout << " record " << i;
      const auto got = rows[i].at("logprobs").get<std::vector<double>>();
      const auto ref = want.at("logprobs").get<std::vector<double>>();
      ASSERT_EQ(got.size(), ref.size()) << layout << " record " << i;
      for (size_t c = 0; c < got.size(); ++c) EXPECT_NEAR(got[c], ref[c], 1e-4) << layout << " record " << i << " choice " << c;
    }
    EXPECT_DOUBLE_EQ(report.at("acc").get<double>(), oracle.at("acc").get<double>()) << layout;
    EXPECT_DOUBLE_EQ(report.at("acc_norm").get<double>(), oracle.at("acc_norm").get<double>()) << layout;
  }
  static std::string gsm8k_flags(const nlohmann::json& oracle) {
    std::string flags = "--max-new-tokens " + std::to_string(oracle.at("max_new_tokens").get<int>());
    for (const auto& s : oracle.at("stop")) flags += " --stop '" + s.get<std::string>() + "'";
    return flags;
  }
  // Runs eval and expects failure with one line naming every part, nothing on stdout.
  void expect_error(const std::string& args, const std::vector<std::string>& parts) const {
    expect_one_line_error("eval " + args + " --quiet", parts);
  }
  // A task file of one record line (the model path does not exist: the task file is read first).
  void expect_bad_record(const std::string& layout, const std::string& line, const std::vector<std::string>& parts) {
    std::ofstream(path("bad.jsonl")) << "\n" << line << "\n";
    std::vector<std::string> all = {"bad.jsonl:2"};
    all.insert(all.end(), parts.begin(), parts.end());
    expect_error(path("no_model") + " -t " + kFixtures + "chars.json --task " + path("bad.jsonl") + " --layout " + layout,
                 all);
  }
};

TEST_F(EvalTasksTest, MultipleChoiceLogLikelihoodsEqualTransformers) {
  const nlohmann::json oracle = expected();
  for (const std::string layout : {"hellaswag", "arc", "mmlu", "ceval", "mc"}) {
    const nlohmann::json report = run_task(layout, layout + ".jsonl");
    EXPECT_EQ(report.at("layout"), layout);
    expect_scores(report, oracle.at(layout), layout);
  }
}

TEST_F(EvalTasksTest, FewShotExamplesFromADevSplitEqualTransformers) {
  const nlohmann::json oracle = expected().at("arc_fewshot");
  const nlohmann::json report =
      run_task("arc", "arc.jsonl", "--fewshot 2 --fewshot-file " + kFixtures + "arc_dev.jsonl --seed 7");
  EXPECT_EQ(report.at("fewshot"), 2);
  expect_scores(report, oracle, "arc 2-shot");
  // another seed shows other examples: other scores
  const nlohmann::json other =
      run_task("arc", "arc.jsonl", "--fewshot 2 --fewshot-file " + kFixtures + "arc_dev.jsonl --seed 8");
  EXPECT_NE(other.at("per_record")[0].at("logprobs"), report.at("per_record")[0].at("logprobs"));
}

TEST_F(EvalTasksTest, Gsm8kGreedyGenerationStopsAtStopStringsAsTransformers) {
  // the odd records' references are what lm-eval's gsm8k filters extract from transformers' generation
  const nlohmann::json oracle = expected().at("gsm8k");
  const nlohmann::json report = run_task("gsm8k", "gsm8k.jsonl", gsm8k_flags(oracle));
  const auto& rows = report.at("per_record");
  ASSERT_EQ(rows.size(), oracle.at("generated").size());
  double matches = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i].at("generated"), oracle.at("generated")[i]) << "record " << i;
    EXPECT_EQ(rows[i].at("exact_match"), oracle.at("exact_match")[i]) << "record " << i << ": " << rows[i].dump();
    matches += oracle.at("exact_match")[i].get<int>();
  }
  EXPECT_GT(matches, 0);
  EXPECT_DOUBLE_EQ(report.at("exact_match").get<double>(), matches / static_cast<double>(rows.size()));
  EXPECT_EQ(rows[0].at("answer"), "1234") << "the fixture's first answer is #### 1,234 normalised";
  // one shot, its whole answer shown
  const nlohmann::json shot = run_task("gsm8k", "gsm8k.jsonl",
                                       gsm8k_flags(oracle) + " --fewshot 1 --fewshot-file " + kFixtures + "gsm8k.jsonl --seed 7");
  for (size_t i = 0; i < rows.size(); ++i)
    EXPECT_EQ(shot.at("per_record")[i].at("generated"), expected().at("gsm8k_fewshot").at("generated")[i]) << i;
}

TEST_F(EvalTasksTest, RecordsInTheWrongLayoutNameFileLineAndField) {
  expect_bad_record("hellaswag", R"({"activity_label": "a", "ctx_a": "b", "endings": ["x", "y"], "label": "0"})",
                    {"field 'ctx_b' is missing"});
  expect_bad_record("hellaswag", R"({"activity_label": "a", "ctx_a": "b", "ctx_b": "c", "endings": ["x", "y"], "label": "7"})",
                    {"field 'label' is 7", "2 choices"});
  expect_bad_record("hellaswag", R"({"activity_label": "a", "ctx_a": "b", "ctx_b": "c", "endings": ["x", 3], "label": 0})",
                    {"field 'endings[1]' must be a string"});
  expect_bad_record("arc", R"({"question": "q", "choices": {"text": ["a", "b"], "label": ["A", "B"]}, "answerKey": "C"})",
                    {"field 'answerKey'", "\"C\""});
  expect_bad_record("arc", R"({"question": "q", "choices": ["a", "b"], "answerKey": "A"})", {"field 'choices'"});
  expect_bad_record("mmlu", R"({"question": "q", "subject": "s", "choices": ["a", "b", "c", "d"], "answer": "B"})",
                    {"field 'answer' must be an integer"});
  expect_bad_record("mmlu", R"({"question": "q", "subject": "s", "choices": ["a", "b", "c", "d"], "answer": 4})",
                    {"field 'answer' is 4"});
  expect_bad_record("ceval", R"({"question": "q", "A": "a", "B": "b", "C": "c", "answer": "A"})", {"field 'D' is missing"});
  expect_bad_record("ceval", R"({"question": "q", "A": "a", "B": "b", "C": "c", "D": "d", "answer": "E"})",
                    {"field 'answer'", "\"E\""});
  expect_bad_record("mc", R"({"context": "c", "choices": ["a", "b"], "gold": -1})", {"field 'gold' is -1"});
  expect_bad_record("mc", R"({"context": "c", "choices": "ab", "gold": 0})", {"field 'choices' must be an array"});
  expect_bad_record("gsm8k", R"({"question": "q", "answer": "42"})", {"field 'answer'", "####"});
  expect_bad_record("gsm8k", R"({"question": 3, "answer": "#### 4"})", {"field 'question' must be a string"});
  expect_bad_record("arc", R"({"question": "q", )", {"not a JSON object"});
}

TEST_F(EvalTasksTest, TextTheTokenizerCannotTakeNamesItsRecord) {
  std::ofstream(path("euro.jsonl")) << R"({"context": "the dog", "choices": [" runs", " red"], "gold": 0})" << "\n"
                                    << R"({"context": "the \u20ac", "choices": [" runs", " red"], "gold": 0})" << "\n";
  const auto r = cli("eval " + kFixtures + "llama_char -t " + kFixtures + "chars.json --task " + path("euro.jsonl") +
                     " --layout mc -q");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(r.out, "");
  // after the conditions line, one error line naming the record and the character
  EXPECT_NE(r.err.find("\nnanoformer: " + path("euro.jsonl") + ":2: character tokenizer: U+20AC"), std::string::npos)
      << r.err;
}

TEST_F(EvalTasksTest, BadTaskFlagsAreErrors) {
  const std::string model = kFixtures + "llama_char -t " + kFixtures + "chars.json ";
  const std::string arc = "--task " + kFixtures + "arc.jsonl ";
  expect_error(model + arc + "--layout squad", {"--layout", "'squad'", "hellaswag"});
  expect_error(model + arc, {"--layout"});
  expect_error(model + arc + "--layout arc --fewshot 2", {"--fewshot", "--fewshot-file"});
  expect_error(model + arc + "--layout arc --fewshot 11 --fewshot-file " + kFixtures + "arc_dev.jsonl",
               {"--fewshot 11", "arc_dev.jsonl", "10 records"});
  expect_error(model + arc + "--layout arc --context 8", {"--context", "--task"});
  expect_error(model + arc + "--layout arc --stop x", {"--stop", "gsm8k"});
  expect_error(kFixtures + "llama_char " + arc + "--layout arc", {"--tokenizer"});
  expect_error(model + "--task " + path("none.jsonl") + " --layout arc", {"none.jsonl", "cannot open"});
  expect_error(model + "--data x.bin --context 8 --layout arc", {"--layout", "--task"});
}

// --tools calculator: the nanochat model of tests/fixtures/nanochat/engine_92d63d4 (scripted to call
// nanochat's calculator after a prompt ending in ":") answers "=<|python_start|>12*34<|python_end|>";
// with the tool the forced "<|output_start|>408<|output_end|>" follows and 408 is the answer (exact
// match 1), without it the model writes on by itself (exact match 0). A tool on a multiple-choice
// layout, or an unknown tool, is one line.
TEST_F(EvalTasksTest, Gsm8kAnswersWithTheCalculatorWhenAsked) {
  const nlohmann::json engine =
      nlohmann::json::parse(testing::read_text(NF_SOURCE_DIR "/tests/fixtures/nanochat/engine_92d63d4.json"));
  tokenizer::save_tokenizer_json(tokenizer::testing::byte_tokenizer(engine["specials"].get<std::vector<std::string>>()),
                                 path("tokenizer.json"));
  std::ofstream(path("calc.jsonl")) << R"({"question": "Q", "answer": "#### 408"})" << "\n";
  const std::string model = NF_SOURCE_DIR "/tests/fixtures/nanochat/engine_92d63d4 -t " + path("tokenizer.json");
  const auto run = [&](const std::string& extra) {
    const auto r = cli("eval " + model + " --task " + path("calc.jsonl") + " --layout gsm8k --max-new-tokens 13 --json " +
                       path("report.json") + " -q " + extra);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return nlohmann::json::parse(testing::read_text(path("report.json")));
  };
  const nlohmann::json with = run("--tools calculator");
  EXPECT_EQ(with.at("per_record")[0].at("generated"),
            "=<|python_start|>12*34<|python_end|><|output_start|>408<|output_end|>");
  EXPECT_EQ(with.at("exact_match").get<double>(), 1.0);
  const nlohmann::json without = run("");
  EXPECT_EQ(without.at("exact_match").get<double>(), 0.0) << without.at("per_record")[0].at("generated");
  expect_error(model + " --task " + path("calc.jsonl") + " --layout gsm8k --tools shell", {"--tools", "'shell'", "calculator"});
  expect_error(model + " --task " + kFixtures + "arc.jsonl --layout arc --tools calculator", {"--tools", "gsm8k"});
}

// --chat-template with --tools calculator on a chat-template model: each question a user message
// of the template, the calculator offered in it and called in the Hermes syntax. The template (a
// tokenizer_config.json's Jinja one) opens the assistant's turn with "\n", but with "\t" after a
// tool message; the model is a bigram table (tests/infer/bigram_model.h) that calls the calculator
// after "\n" and writes 408 after "\t". With the tool the final turn is "408" (exact match 1);
// without it nothing answers the call and the final turn's text after the call is empty (0).
TEST_F(EvalTasksTest, Gsm8kThroughAChatTemplateCallsToolsInTheHermesSyntax) {
  const std::vector<std::string> specials = {"<|endoftext|>", "<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>",
                                             R"({"name": "calculator", "arguments": {"expression": ")", "12*34", R"("}})"};
  std::filesystem::create_directories(path("model"));
  tokenizer::save_tokenizer_json(tokenizer::testing::byte_tokenizer(specials), path("model/tokenizer.json"));
  const auto id = [&](const std::string& s) {
    return static_cast<int64_t>(256 + (std::find(specials.begin(), specials.end(), s) - specials.begin()));
  };
  const auto model = testing::bigram_model(static_cast<int64_t>(256 + specials.size()),
                                           {{'\n', id("<tool_call>")},
                                            {id("<tool_call>"), id(specials[5])},
                                            {id(specials[5]), id("12*34")},
                                            {id("12*34"), id(specials[7])},
                                            {id(specials[7]), id("</tool_call>")},
                                            {id("</tool_call>"), id("<|im_end|>")},
                                            {'\t', '4'},
                                            {'4', '0'},
                                            {'0', '8'},
                                            {'8', id("<|im_end|>")}},
                                           1.0, 512);
  formats::save_model(*model, path("model/model.safetensors"), "nanoformer");
  const std::string chat_template =
      "{%- if tools %}<|im_start|>system\nTools:{% for t in tools %} {{ t.function.name }}{% endfor %}<|im_end|>\n"
      "{% endif %}{%- for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
      "{%- if add_generation_prompt %}<|im_start|>assistant{% if messages[-1].role == 'tool' %}\t{% else %}"
      "{{ '\\n' }}{% endif %}{% endif %}";  // a newline right after a block tag would be trimmed
  std::filesystem::create_directories(path("template"));
  std::ofstream(path("template/tokenizer_config.json"))
      << nlohmann::json{{"chat_template", chat_template}, {"eos_token", "<|im_end|>"}}.dump();
  std::ofstream(path("calc.jsonl")) << R"({"question": "What is 12 times 34?", "answer": "#### 408"})" << "\n";
  const std::string flags = path("model/model.safetensors") + " -t " + path("model/tokenizer.json") + " --task " +
                            path("calc.jsonl") + " --layout gsm8k --chat-template " + path("template/tokenizer_config.json");
  const auto run = [&](const std::string& extra) {
    const auto r = cli("eval " + flags + " --max-new-tokens 60 --json " + path("report.json") + " -q " + extra);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return nlohmann::json::parse(testing::read_text(path("report.json")));
  };
  const nlohmann::json with = run("--tools calculator");
  EXPECT_EQ(with.at("per_record")[0].at("generated"), "408");
  EXPECT_EQ(with.at("exact_match").get<double>(), 1.0);
  EXPECT_EQ(with.at("tools"), "calculator");
  const nlohmann::json without = run("");
  EXPECT_EQ(without.at("per_record")[0].at("generated"), "");
  EXPECT_EQ(without.at("exact_match").get<double>(), 0.0);
  expect_error(flags + " --fewshot 1 --fewshot-file " + path("calc.jsonl"), {"--chat-template", "--fewshot 0"});
  expect_error(path("model/model.safetensors") + " -t " + path("model/tokenizer.json") + " --task " + kFixtures +
                   "arc.jsonl --layout arc --chat-template auto",
               {"--chat-template", "--layout gsm8k"});
  expect_error(path("model/model.safetensors") + " -t " + path("model/tokenizer.json") + " --task " + path("calc.jsonl") +
                   " --layout gsm8k --tools calculator",
               {"--tools", "renders no tool messages"});
}

// --combine of benchmark reports (the checkpoints of one run, say): a row per report, and a chart of
// each task's scores across the reports' labels (reports sharing a label are repeats: their mean).
TEST_F(EvalTasksTest, BenchmarkReportsCombineIntoATableAndAChartAcrossCheckpoints) {
  const std::string model = kFixtures + "llama_char -t " + kFixtures + "chars.json -q ";
  const auto report = [&](const std::string& label, const std::string& layout, const std::string& file,
                          const std::string& json, const std::string& extra = "") {
    const auto r = cli("eval " + model + "--task " + kFixtures + file + " --layout " + layout + " --label '" + label +
                       "' --json " + path(json) + " " + extra);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return path(json);
  };
  const std::vector<std::string> files = {
      report("step 100", "mc", "mc.jsonl", "mc_100.json"), report("step 100", "arc", "arc.jsonl", "arc_100.json"),
      report("step 200", "mc", "mc.jsonl", "mc_200.json"),
      report("step 200", "gsm8k", "gsm8k.jsonl", "gsm8k_200.json", gsm8k_flags(expected().at("gsm8k")))};
  std::string combine = "eval --combine";
  for (const std::string& f : files) combine += " " + f;
  const auto r = cli(combine + " --plot " + path("scores.png") + " --title 'one run'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("| label | task | layout | records | acc | acc_norm | exact_match |"), std::string::npos) << r.out;
  for (const std::string& f : files) {
    const auto j = nlohmann::json::parse(testing::read_text(f));
    char scores[96];
    if (j.contains("exact_match"))
      std::snprintf(scores, sizeof scores, " | - | - | %.4f |", j.at("exact_match").get<double>());
    else
      std::snprintf(scores, sizeof scores, " | %.4f | %.4f | - |", j.at("acc").get<double>(), j.at("acc_norm").get<double>());
    const std::string row = "| " + j.at("label").get<std::string>() + " | " + j.at("task").get<std::string>() + " | " +
                            j.at("layout").get<std::string>() + " | " + j.at("records").dump() + scores + "\n";
    EXPECT_NE(r.out.find(row), std::string::npos) << row << " in:\n" << r.out;
  }
  EXPECT_EQ(testing::read_text(path("scores.png")).substr(1, 3), "PNG");
  // one kind at a time; a benchmark report without its scores; --baseline is for perplexity
  std::ofstream(path("ppl.json")) << R"({"model": "m", "results": [{"context": 8, "perplexity": 3.5}]})";
  expect_one_line_error("eval --combine " + files[0] + " " + path("ppl.json"),
                        {"--combine: " + path("ppl.json") + " is a perplexity report but " + files[0] +
                         " a benchmark report"});
  std::ofstream(path("no_acc.json")) << R"({"model": "m", "task": "t.jsonl", "layout": "arc", "acc_norm": 0.5})";
  expect_one_line_error("eval --combine " + path("no_acc.json"),
                        {path("no_acc.json") + ": a arc report without a number \"acc\""});
  expect_one_line_error("eval --combine " + files[0] + " --baseline x",
                        {"--baseline compares perplexity reports; " + files[0] + " is a benchmark report"});
}

TEST(AnswerExtraction, HashesFirstThenTheLastNumber) {
  EXPECT_EQ(eval::extract_answer("so 3 + 4 = 7\n#### 7").value(), "7");
  EXPECT_EQ(eval::extract_answer("#### $1,234.").value(), "1234");
  EXPECT_EQ(eval::extract_answer("#### -5 apples, not 6").value(), "-5");
  EXPECT_EQ(eval::extract_answer("she has 12 apples and gives 5, so 7.").value(), "7");
  EXPECT_EQ(eval::extract_answer("costs $1,000 in total").value(), "1000");
  EXPECT_EQ(eval::extract_answer("#### none, but 8").value(), "8");
  EXPECT_FALSE(eval::extract_answer("no digits here.").has_value());
  EXPECT_EQ(eval::normalize_answer(" 1,234. "), "1234");
}

}  // namespace
}  // namespace nf
