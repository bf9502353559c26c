// Structured output through the scheduler (SequenceRequest::constraint): a random-weight model
// sampled with seeds under a JSON schema always writes JSON that parses and validates (checked here
// by a small validator of the schema subset); its logprobs are those of the constrained
// distribution; a grammar that can only end stops the sequence without an end id.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <future>
#include <nlohmann/json.hpp>

#include "nanoformer/core/generator.h"
#include "nanoformer/grammar/json_schema.h"
#include "nanoformer/serve/scheduler.h"

namespace nf::serve {
namespace {

using json = nlohmann::json;

// A random-weight model as tests/infer/tiny_lm.h's, with room for the byte strings below.
std::shared_ptr<models::DecoderLM> random_model(int64_t max_seq_len) {
  models::DecoderLMConfig c = models::preset_config("llama2c-stories260k");
  c.vocab_size = 160, c.dim = 32, c.n_layers = 2, c.n_heads = 4, c.n_kv_heads = 2, c.max_seq_len = max_seq_len;
  c.init_std = 0.3;
  Generator gen(3);
  return std::make_shared<models::DecoderLM>(c, gen);
}

constexpr int64_t kVocab = 160, kEnd = kVocab - 1;

// Byte strings for the model's ids: every printable ASCII byte and a newline (so that every
// prefix can be continued, as a byte-level BPE's 256 bytes ensure), pieces of JSON, the two bytes
// of a UTF-8 letter, pieces no JSON here can use; the last id is the end id (no bytes).
std::vector<std::string> vocab() {
  std::vector<std::string> v;
  for (char c = ' '; c <= '~'; ++c) v.push_back(std::string(1, c));
  v.emplace_back("\n");
  for (const char* piece : {"{\"", "\":", "\",", "\"}", "true", "false", "null", "\"name\"", "\"age\"", "é", "\xC3",
                            "\xA9", "\\n", "\\\"", "12", "ab", "]}", "\"x\"", "\"y\"", "\"ok\"", "\"tags\"", "\"extra\"",
                            "ag", "na", "me", "ok", "\"n", "\"a", "ta", "gs"})
    v.emplace_back(piece);
  for (std::string piece; v.size() < kEnd; piece.clear()) {  // (appended: GCC 12's -Wrestrict misfires on "x" + s)
    piece += v.size() < 150 ? "\"e" : "~";
    piece += std::to_string(v.size());
    v.push_back(piece);
  }
  v.emplace_back("");
  return v;
}

// Whether v validates against s (the subset of JSON Schema the test schemas use).
bool validates(const json& v, const json& s) {
  if (s.contains("anyOf")) {
    for (const json& option : s["anyOf"])
      if (validates(v, option)) return true;
    return false;
  }
  if (s.contains("enum")) return std::find(s["enum"].begin(), s["enum"].end(), v) != s["enum"].end();
  const std::string type = s.value("type", "");
  if (type == "object") {
    if (!v.is_object()) return false;
    for (const auto& [key, value] : v.items())
      if (!s["properties"].contains(key) || !validates(value, s["properties"][key])) return false;
    for (const json& name : s.value("required", json::array()))
      if (!v.contains(name.get<std::string>())) return false;
    return true;
  }
  if (type == "array") {
    if (!v.is_array() || static_cast<int64_t>(v.size()) > s.value("maxItems", int64_t{1} << 40) ||
        static_cast<int64_t>(v.size()) < s.value("minItems", int64_t{0}))
      return false;
    for (const json& item : v)
      if (!validates(item, s["items"])) return false;
    return true;
  }
  if (type == "string") {
    if (!v.is_string()) return false;
    int64_t code_points = 0;
    for (const char c : v.get<std::string>()) code_points += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    return code_points <= s.value("maxLength", int64_t{1} << 40);
  }
  if (type == "integer") return v.is_number_integer();
  if (type == "number") return v.is_number();
  if (type == "boolean") return v.is_boolean();
  if (type == "null") return v.is_null();
  return false;
}

struct Sampled {
  std::vector<int64_t> tokens;
  std::vector<infer::TokenLogprobs> logprobs;
  std::promise<SequenceOutcome> done;
};

SequenceOutcome wait(Sampled& run) {
  auto f = run.done.get_future();
  if (f.wait_for(std::chrono::seconds(120)) != std::future_status::ready) throw std::runtime_error("a sequence did not end");
  return f.get();
}

SequenceRequest constrained(Sampled& run, const std::string& gbnf, const std::shared_ptr<const grammar::TokenTrie>& trie,
                            infer::SamplerConfig sampler, int64_t top_logprobs = 0) {
  SequenceRequest r{.prompt = {5, 9, 13},
                    .sampler = sampler,
                    .stop = {.eos_ids = {kEnd}, .stop_strings = {}, .max_new_tokens = 400},
                    .on_token = [&run](int64_t id) { run.tokens.push_back(id); return true; },
                    .on_done = [&run](const SequenceOutcome& o) { run.done.set_value(o); }};
  r.constraint = std::make_shared<grammar::GrammarConstraint>(std::make_shared<const grammar::Grammar>(grammar::compile_gbnf(gbnf)),
                                                            trie, std::vector<int64_t>{kEnd});
  if (top_logprobs > 0) {
    r.top_logprobs = top_logprobs;
    r.on_logprobs = [&run](const infer::TokenLogprobs& l) { run.logprobs.push_back(l); };
  }
  return r;
}

std::string text(const std::vector<int64_t>& tokens, const std::vector<std::string>& v) {
  std::string out;
  for (const int64_t id : tokens) out += v[static_cast<size_t>(id)];
  return out;
}

TEST(StructuredOutput, SeededSamplesUnderASchemaAlwaysParseAndValidate) {
  const auto model = random_model(512);
  const std::vector<std::string> v = vocab();
  const auto trie = std::make_shared<const grammar::TokenTrie>(v);
  const std::string schema_text = R"({"type": "object", "properties": {
      "name": {"type": "string", "maxLength": 6}, "age": {"type": "integer"},
      "tags": {"type": "array", "items": {"enum": ["x", "y"]}, "maxItems": 3},
      "ok": {"type": "boolean"}, "extra": {"anyOf": [{"type": "null"}, {"type": "number"}]}},
      "required": ["name", "age"], "additionalProperties": false})";
  const json schema = json::parse(schema_text);
  const std::string gbnf = grammar::json_schema_grammar(nlohmann::ordered_json::parse(schema_text)).gbnf;
  constexpr int kSamples = 24;
  std::vector<Sampled> runs(kSamples);
  {
    Scheduler scheduler(*model, {.parallel = 4, .max_queue = kSamples, .context = 0});
    for (int i = 0; i < kSamples; ++i) {
      const infer::SamplerConfig sampler = i % 4 == 3 ? infer::SamplerConfig{.temperature = 0}
                                                      : infer::SamplerConfig{.temperature = 1.0, .top_k = i % 2 ? 8 : 0,
                                                                             .top_p = i % 3 ? 0.9 : 1.0, .seed = 1000u + i};
      ASSERT_TRUE(scheduler.submit(constrained(runs[static_cast<size_t>(i)], gbnf, trie, sampler)));
    }
    for (int i = 0; i < kSamples; ++i) {
      Sampled& run = runs[static_cast<size_t>(i)];
      const SequenceOutcome o = wait(run);
      ASSERT_TRUE(o.error.empty()) << o.error;
      EXPECT_EQ(o.reason, infer::StopReason::end_of_sequence) << "sample " << i;
      std::vector<int64_t> shown = run.tokens;
      if (!shown.empty() && shown.back() == kEnd) shown.pop_back();
      const std::string out = text(shown, v);
      const json parsed = json::parse(out, nullptr, false);
      ASSERT_FALSE(parsed.is_discarded()) << "sample " << i << " does not parse: " << out;
      EXPECT_TRUE(validates(parsed, schema)) << "sample " << i << " does not validate: " << out;
    }
  }
}

TEST(StructuredOutput, LogprobsAreThoseOfTheConstrainedDistribution) {
  const auto model = random_model(512);
  const std::vector<std::string> v = vocab();
  const auto trie = std::make_shared<const grammar::TokenTrie>(v);
  Sampled run;
  {
    Scheduler scheduler(*model, {.parallel = 1, .max_queue = 1, .context = 0});
    ASSERT_TRUE(scheduler.submit(constrained(run, "root ::= \"[\" (\"true\" | \"false\" | \"null\") (\",\" (\"true\" | \"null\"))* \"]\"",
                                             trie, {.temperature = 1.0, .seed = 7}, 5)));
    ASSERT_TRUE(wait(run).error.empty());
  }
  ASSERT_EQ(run.logprobs.size(), run.tokens.size());
  for (size_t i = 0; i < run.logprobs.size(); ++i) {
    const infer::TokenLogprobs& l = run.logprobs[i];
    EXPECT_EQ(l.id, run.tokens[i]);
    EXPECT_TRUE(std::isfinite(l.logprob) && l.logprob <= 0);
    double mass = 0;  // the listed ids are allowed ones only, so few that their mass is the whole
    for (const auto& [id, logprob] : l.top) {
      const std::string& b = v[static_cast<size_t>(id)];
      EXPECT_TRUE(id == kEnd || b == "[" || b == "]" || b == "," || b == "true" || b == "false" || b == "null" ||
                  (b.size() == 1 && std::string("truefalsn").find(b[0]) != std::string::npos))
          << "step " << i << " lists id " << id << " '" << b << "'";
      mass += std::exp(static_cast<double>(logprob));
    }
    if (l.top.size() < 5) {
      EXPECT_NEAR(mass, 1.0, 1e-4) << "step " << i;  // every allowed id is listed
    }
  }
}

TEST(StructuredOutput, AGrammarThatCanOnlyEndStopsTheSequence) {
  const auto model = random_model(64);
  const std::vector<std::string> v = vocab();
  const auto trie = std::make_shared<const grammar::TokenTrie>(v);
  Sampled run;
  {
    Scheduler scheduler(*model, {.parallel = 1, .max_queue = 1, .context = 0});
    SequenceRequest r = constrained(run, "root ::= \"ab\" \"c\"", trie, {.temperature = 1.0, .seed = 3});
    r.stop.eos_ids.clear();  // no end id: the grammar alone ends it
    ASSERT_TRUE(scheduler.submit(std::move(r)));
    const SequenceOutcome o = wait(run);
    ASSERT_TRUE(o.error.empty()) << o.error;
    EXPECT_EQ(o.reason, infer::StopReason::end_of_sequence);
  }
  EXPECT_EQ(text(run.tokens, v), "abc");
}

}  // namespace
}  // namespace nf::serve
