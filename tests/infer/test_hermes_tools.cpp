// Hermes tools while decoding (infer/hermes_tools.h): after a model's <tool_call> block, the tokens
// forced are what transformers' apply_chat_template renders after that call for MiniMind's,
// Qwen2.5's and Qwen3's templates (tests/fixtures/tokenizer/hf_chat_templates.json, written by
// tools/golden/hf_chat_template_fixtures.py: a conversation whose assistant calls get_weather and
// gets a tool message back); the calculator's answers; unknown tools, malformed blocks and failing
// tools answered with errors; the turn limit; the command tool's time and output limits through the
// registry; the answer taken in the decoding loop without ending the stream at its end of turn; and
// calls answered off the decoding thread: the caller's stream waits while the others decode, and
// gets the tokens it gets with the call answered inside the step.
#include "nanoformer/infer/hermes_tools.h"

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <nlohmann/json.hpp>
#include <thread>

#include "nanoformer/autograd/grad_mode.h"
#include "nanoformer/infer/decode_step.h"
#include "nanoformer/infer/session.h"
#include "speculative_models.h"
#include "support/testing.h"
#include "tokenizer/fixtures.h"

namespace nf::infer {
namespace {

using json = nlohmann::ordered_json;
using tokenizer::testing::fixture;

json golden() { return json::parse(tokenizer::read_file(fixture("hf_chat_templates.json"))); }

std::vector<std::pair<std::string, std::string>> special_of(const json& j) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [k, v] : j.items()) out.emplace_back(k, v.get<std::string>());
  return out;
}

struct Fixture {
  json doc = golden();
  std::unique_ptr<tokenizer::Tokenizer> tok = tokenizer::load_tokenizer(fixture(doc.at("tokenizer").get<std::string>()));
  std::unique_ptr<tokenizer::HfChatTemplate> chat_template(const std::string& name) const {
    for (const json& t : doc.at("templates"))
      if (t.at("name") == name)
        return std::make_unique<tokenizer::HfChatTemplate>(name, t.at("template").get<std::string>(),
                                                           special_of(t.at("special_tokens")), *tok);
    ADD_FAILURE() << "no template " << name;
    return nullptr;
  }
};

std::string decode(const tokenizer::Tokenizer& tok, const std::vector<int64_t>& ids) {
  return tok.decode(std::vector<tokenizer::TokenId>(ids.begin(), ids.end()));
}

// The model writes `text` token by token (its encoding): the tokens forced after it (from its
// last token: none may come earlier).
std::vector<int64_t> write(ToolUse& tools, const tokenizer::Tokenizer& tok, std::string_view text) {
  const std::vector<tokenizer::TokenId> ids = tok.encode(text);
  std::vector<int64_t> forced;
  for (size_t i = 0; i < ids.size(); ++i) {
    forced = tools.after(ids[i]);
    if (i + 1 < ids.size()) {
      EXPECT_TRUE(forced.empty()) << "forced before the call's end, at token " << i << " of " << text;
    }
  }
  return forced;
}

// The forced tokens taken back through the tool use (as the decoding loop does): none answered again.
void take(ToolUse& tools, const std::vector<int64_t>& forced) {
  for (const int64_t id : forced) EXPECT_TRUE(tools.after(id).empty());
}

std::shared_ptr<ToolRegistry> weather_registry() {
  auto registry = std::make_shared<ToolRegistry>();
  registry->add("get_weather", [](const ToolCall& call) {
    EXPECT_EQ(call.arguments, R"({"city":"Paris","days":2})");
    return std::string(R"({"sky": "sunny"})");
  });
  registry->add("calculator", calculator_tool);
  return registry;
}

TEST(HermesToolUse, ForcesTheToolMessageAsTransformersRendersIt) {
  const Fixture f;
  for (const std::string name : {"minimind", "qwen2.5", "qwen3"}) {
    const auto chat_template = f.chat_template(name);
    const json* tool_case = nullptr;
    for (const json& t : f.doc.at("templates"))
      if (t.at("name") == name) tool_case = &t.at("tool_cases").at(1);
    ASSERT_NE(tool_case, nullptr);
    ASSERT_EQ(tool_case->at("messages").back().at("content"), R"({"sky": "sunny"})");
    // transformers' text: ... <|im_start|>assistant\n<tool_call>\n{call}\n</tool_call><|im_end|>\n<|im_start|>user\n<tool_response> ...
    const std::string text = tool_case->at("text").get<std::string>();
    const std::string call = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 2}}\n</tool_call>";
    const size_t at = text.rfind(call);
    ASSERT_NE(at, std::string::npos) << name;
    HermesToolUse tools(weather_registry(), *chat_template, *f.tok);
    std::vector<ToolTurn> turns;
    tools.on_turn = [&](const ToolTurn& t) { turns.push_back(t); };
    // the model's text before the call (the template's own opening of the reply is the prompt's)
    const std::vector<int64_t> forced = write(tools, *f.tok, call);
    EXPECT_EQ(decode(*f.tok, forced), text.substr(at + call.size())) << name;
    ASSERT_EQ(turns.size(), 1u);
    EXPECT_TRUE(turns[0].ran);
    EXPECT_EQ(turns[0].forced, static_cast<int64_t>(forced.size()));
    ASSERT_EQ(turns[0].calls.size(), 1u);
    EXPECT_EQ(turns[0].calls[0].name, "get_weather");
    EXPECT_EQ(turns[0].answers, std::vector<std::string>{R"({"sky": "sunny"})"});
    // the forced tokens come back through the tool use as the stream takes them: not the model's
    // text; a second call after them is answered as the first
    take(tools, forced);
    const std::vector<int64_t> again = write(tools, *f.tok, "Sure.<tool_call>{\"name\": \"calculator\", \"arguments\": {\"expression\": \"12*34\"}}</tool_call>");
    EXPECT_NE(decode(*f.tok, again).find("<tool_response>\n408\n</tool_response>"), std::string::npos) << decode(*f.tok, again);
    EXPECT_EQ(turns.size(), 2u);
  }
}

TEST(HermesToolUse, UnknownToolsMalformedCallsAndFailingToolsAreAnsweredWithAnError) {
  const Fixture f;
  const auto chat_template = f.chat_template("qwen2.5");
  auto registry = std::make_shared<ToolRegistry>();
  registry->add("calculator", calculator_tool);
  registry->add("broken", [](const ToolCall&) -> std::string { throw std::runtime_error("disk on fire"); });
  HermesToolUse tools(registry, *chat_template, *f.tok);
  std::vector<ToolTurn> turns;
  tools.on_turn = [&](const ToolTurn& t) { turns.push_back(t); };
  const auto answer_of = [&](std::string_view text) {
    const std::vector<int64_t> forced = write(tools, *f.tok, text);
    take(tools, forced);
    EXPECT_FALSE(forced.empty()) << text;
    return turns.empty() || turns.back().answers.empty() ? std::string() : turns.back().answers[0];
  };
  EXPECT_EQ(answer_of(R"(<tool_call>{"name": "weather", "arguments": {}}</tool_call>)"),
            R"({"error":"unknown tool 'weather'; the tools are: calculator, broken"})");
  EXPECT_EQ(answer_of("<tool_call>{\"name\": \"calculator\", \"arguments\": {\"expression\": \"1/0\"}}</tool_call>"),
            R"({"error":"cannot evaluate '1/0': numbers, + - * / // and parentheses only"})");
  EXPECT_EQ(answer_of(R"(<tool_call>{"name": "calculator", "arguments": {"x": "2"}}</tool_call>)"),
            R"({"error":"the calculator takes {\"expression\": \"...\"}, e.g. {\"expression\": \"12*(3+4)\"}"})");
  EXPECT_EQ(answer_of(R"(<tool_call>{"name": "broken"}</tool_call>)"), R"({"error":"disk on fire"})");
  EXPECT_EQ(answer_of("<tool_call>{not json</tool_call>"),
            R"({"error":"a tool call is JSON {\"name\": \"...\", \"arguments\": {...}} between <tool_call> and </tool_call>"})");
  EXPECT_EQ(turns.back().calls.at(0).name, "");
  EXPECT_EQ(answer_of("<tool_call>{\"name\": \"calculator\", \"arguments\": \"{\\\"expression\\\": \\\"2**10 if 1 else 0\\\"}\"}</tool_call>"),
            R"({"error":"cannot evaluate '2**10 if 1 else 0': numbers, + - * / // and parentheses only"})");
  EXPECT_EQ(answer_of("<tool_call>{\"name\": \"calculator\", \"arguments\": {\"expression\": \"(1,000 + 0.5) * 2\"}}</tool_call>"), "2001.0");
  // text that is no call forces nothing
  EXPECT_TRUE(write(tools, *f.tok, "a <tool_call mention and </tool_call> alone").empty());
}

TEST(HermesToolUse, CallsPastTheTurnLimitAreNotRun) {
  const Fixture f;
  const auto chat_template = f.chat_template("qwen2.5");
  auto registry = std::make_shared<ToolRegistry>();
  int64_t runs = 0;
  registry->add("count", [&](const ToolCall&) { return std::to_string(++runs); });
  HermesToolUse tools(registry, *chat_template, *f.tok, /*max_turns=*/2);
  std::vector<ToolTurn> turns;
  tools.on_turn = [&](const ToolTurn& t) { turns.push_back(t); };
  const std::string call = R"(<tool_call>{"name": "count"}</tool_call>)";
  take(tools, write(tools, *f.tok, call));
  take(tools, write(tools, *f.tok, call));
  EXPECT_TRUE(write(tools, *f.tok, call).empty());
  EXPECT_EQ(runs, 2);
  ASSERT_EQ(turns.size(), 3u);
  EXPECT_TRUE(turns[1].ran);
  EXPECT_FALSE(turns[2].ran);
  EXPECT_TRUE(turns[2].answers.empty());
  EXPECT_EQ(turns[2].forced, 0);
  // a clone starts over: its own turns
  const std::unique_ptr<ToolUse> fresh = tools.clone();
  EXPECT_FALSE(write(*fresh, *f.tok, call).empty());
}

TEST(HermesToolUse, ATemplateWithoutToolMessagesIsRefusedNamingIt) {
  const auto tok = tokenizer::testing::byte_tokenizer({"<|im_start|>", "<|im_end|>"});
  const tokenizer::HfChatTemplate no_tools(
      "no-tools",
      "{% for m in messages %}{% if m.role == 'tool' %}{{ raise_exception('no tool messages') }}{% endif %}"
      "<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>{% endfor %}",
      {}, tok);
  EXPECT_THROW_WITH(HermesToolUse(std::make_shared<ToolRegistry>(), no_tools, tok),
                    "the chat template no-tools does not render a tool message after an assistant's");
}

TEST(HermesToolUse, TheCommandToolsLimitsAndFailuresThroughTheRegistry) {
  using std::chrono::milliseconds;
  ToolRegistry registry;
  registry.add("echo", command_tool({"cat"}, {}));
  registry.add("slow", command_tool({"sh", "-c", "sleep 20"}, {.time = milliseconds(300)}));
  registry.add("loud", command_tool({"sh", "-c", "yes"}, {.output_bytes = 100}));
  registry.add("failing", command_tool({"sh", "-c", "echo nope; exit 4"}, {}));
  registry.add("missing", command_tool({"/nonexistent/tool"}, {}));
  const ToolCall call{.id = "call_1", .name = "echo", .arguments = R"({"x":1,"s":"é"})"};
  // the program reads the call's JSON on its standard input
  EXPECT_EQ(registry.answer(call), R"({"name":"echo","arguments":{"x":1,"s":"é"}})");
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(registry.answer({.id = "", .name = "slow", .arguments = "{}"}),
            R"({"error":"the command 'sh' was stopped at its time limit of 300 ms"})");
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(5000));
  EXPECT_EQ(registry.answer({.id = "", .name = "loud", .arguments = "{}"}),
            R"({"error":"the command 'sh' was stopped at its output limit of 100 bytes"})");
  EXPECT_EQ(registry.answer({.id = "", .name = "failing", .arguments = "{}"}),
            R"({"error":"the command 'sh' failed with exit code 4: nope\n"})");
  EXPECT_NE(registry.answer({.id = "", .name = "missing", .arguments = "{}"}).find("cannot run '/nonexistent/tool'"), std::string::npos);
  EXPECT_THROW_WITH(registry.add("echo", calculator_tool), "the tool 'echo' is given twice");
}

// In the decoding loop: a tool's answer holding the end-of-turn id (a template's tool message) is
// taken whole and decoding goes on after it; the model's own end-of-turn still ends the stream.
struct Answer : ToolUse {
  int64_t trigger;
  std::vector<int64_t> answer;
  Answer(int64_t t, std::vector<int64_t> a) : trigger(t), answer(std::move(a)) {}
  std::vector<int64_t> after(int64_t id) override { return id == trigger ? std::exchange(answer, {}) : std::vector<int64_t>{}; }
  std::unique_ptr<ToolUse> clone() const override { return std::make_unique<Answer>(trigger, answer); }
};

TEST(HermesToolUse, AnAnswersEndOfTurnDoesNotEndTheStream) {
  const auto model = testing::tiny_llama(256);
  model->eval();
  const std::vector<int64_t> prompt{1, 2, 3, 4, 5};
  Sampler greedy({.temperature = 0});
  const std::vector<int64_t> plain = Session(*model).generate(prompt, greedy, {.max_new_tokens = 6}).tokens;
  const int64_t end = 61;  // an end id the answer holds, not the model's first tokens
  ASSERT_NE(plain[0], end);
  Answer tools(plain[0], {7, end, 9});
  const GenerationResult r = Session(*model).generate(prompt, greedy, {.eos_ids = {end}, .max_new_tokens = 12}, {}, nullptr, {}, &tools);
  ASSERT_GE(r.tokens.size(), 5u);  // decoding went on after the answer
  EXPECT_EQ(std::vector<int64_t>(r.tokens.begin(), r.tokens.begin() + 4), (std::vector<int64_t>{plain[0], 7, end, 9}));
  if (r.reason == StopReason::end_of_sequence) {
    EXPECT_EQ(r.tokens.back(), end);  // only the model's own end ends it
  }
}

// Off the decoding thread. The tiny model cannot write a call, so the tool use below forces one
// (as if written) after the stream's first token; the call goes to a HermesToolUse like any other.
// Its wait_for_answer() tells the test that a loop is about to sleep on the answer.
struct ScriptedCall : ToolUse {
  HermesToolUse hermes;
  std::vector<int64_t> script;  // the call's tokens, forced after the first token
  std::function<void()> on_wait = [] {};
  ScriptedCall(HermesToolUse h, std::vector<int64_t> s) : hermes(std::move(h)), script(std::move(s)) {}
  std::vector<int64_t> after(int64_t id) override {
    std::vector<int64_t> forced = hermes.after(id);
    return script.empty() ? forced : std::exchange(script, {});
  }
  std::unique_ptr<ToolUse> clone() const override { return nullptr; }
  void answer_off_thread(std::shared_ptr<ToolAnswerBell> bell) override { hermes.answer_off_thread(std::move(bell)); }
  bool answering() const override { return hermes.answering(); }
  std::optional<std::vector<int64_t>> take_answer() override { return hermes.take_answer(); }
  void wait_for_answer() override {
    on_wait();
    hermes.wait_for_answer();
  }
};

// A byte tokenizer, a ChatML-like template with tool messages, a model over their ids, and a
// registry whose `wait` tool answers "42" once the test releases it (from any thread).
struct OffThreadFixture {
  tokenizer::BpeTokenizer tok = tokenizer::testing::byte_tokenizer({"<|im_start|>", "<|im_end|>"});
  tokenizer::HfChatTemplate chat_template{
      "chatml-tools",
      "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
      "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}",
      {}, tok};
  std::shared_ptr<models::DecoderLM> model = testing::tiny_lm(256, 0, static_cast<int64_t>(tok.vocab_size()));
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::shared_ptr<ToolRegistry> registry = std::make_shared<ToolRegistry>();
  std::vector<ToolTurn> turns;
  NoGradGuard no_grad;
  OffThreadFixture() {
    model->eval();
    registry->add("wait", [r = released](const ToolCall&) {
      r.wait();
      return std::string("42");
    });
  }
  ScriptedCall tools() {
    std::vector<int64_t> call;
    for (const tokenizer::TokenId id : tok.encode(R"(<tool_call>{"name": "wait", "arguments": {}}</tool_call>)"))
      call.push_back(id);
    ScriptedCall t(HermesToolUse(registry, chat_template, tok), std::move(call));
    t.hermes.on_turn = [this](const ToolTurn& turn) { turns.push_back(turn); };
    return t;
  }
};

const std::vector<int64_t> kCaller{60, 61, 62}, kOther{10, 20, 30, 40};

// What two greedy streams decoded together take when the caller's call is answered inside the
// step (the tool released beforehand): the caller's tokens, the other's.
std::pair<std::vector<int64_t>, std::vector<int64_t>> answered_inside(OffThreadFixture& f) {
  CachedSequence caller_sequence(*f.model), other_sequence(*f.model);
  Sampler caller_sampler({.temperature = 0}), other_sampler({.temperature = 0});
  ScriptedCall tools = f.tools();
  DecodeStream caller(caller_sequence, caller_sampler, {.max_new_tokens = 120}, kCaller, nullptr, {.tools = &tools});
  DecodeStream other(other_sequence, other_sampler, {.max_new_tokens = 100}, kOther);
  caller.prefill(kCaller);
  other.prefill(kOther);
  DecodeStream* both[] = {&caller, &other};
  decode(both);
  return {caller.generated(), other.generated()};
}

TEST(HermesToolUse, ACallAnsweredOffTheDecodingThreadHoldsOnlyItsOwnStream) {
  OffThreadFixture f;
  CachedSequence caller_sequence(*f.model), other_sequence(*f.model);
  Sampler caller_sampler({.temperature = 0}), other_sampler({.temperature = 0});
  ScriptedCall tools = f.tools();
  tools.answer_off_thread(std::make_shared<ToolAnswerBell>());
  DecodeStream caller(caller_sequence, caller_sampler, {.max_new_tokens = 120}, kCaller, nullptr, {.tools = &tools});
  DecodeStream other(other_sequence, other_sampler, {.max_new_tokens = 100}, kOther);
  caller.prefill(kCaller);
  other.prefill(kOther);
  DecodeStream* both[] = {&caller, &other};
  while (!caller.waiting()) {  // the call's tokens, one a step, until its end starts the call
    ASSERT_TRUE(caller.running());
    ASSERT_EQ(decode_step(both), 2u);
  }
  // the tool is blocked: the caller takes nothing, the other stream goes on alone
  const size_t caller_tokens = caller.generated().size(), other_tokens = other.generated().size();
  for (int i = 0; i < 8; ++i) EXPECT_EQ(decode_step(both), 1u);
  EXPECT_EQ(caller.generated().size(), caller_tokens);
  EXPECT_EQ(other.generated().size(), other_tokens + 8);
  EXPECT_TRUE(caller.waiting());
  EXPECT_TRUE(f.turns.empty());  // reported when the answer is taken, on this thread
  f.release.set_value();
  decode(both);
  ASSERT_EQ(f.turns.size(), 1u);
  EXPECT_EQ(f.turns[0].answers, std::vector<std::string>{"42"});
  EXPECT_EQ(decode(f.tok, std::vector<int64_t>(caller.generated().begin() + static_cast<int64_t>(caller_tokens),
                                               caller.generated().begin() + static_cast<int64_t>(caller_tokens) + f.turns[0].forced)),
            "<|im_end|>\n<|im_start|>tool\n42<|im_end|>\n<|im_start|>assistant\n");
  // the same tokens, the tool message's and the model's after it, as with the call answered in the step
  const auto [caller_inside, other_inside] = answered_inside(f);
  EXPECT_EQ(caller.generated(), caller_inside);
  EXPECT_EQ(other.generated(), other_inside);
  EXPECT_EQ(caller.reason(), StopReason::max_new_tokens);
}

TEST(HermesToolUse, DecodeSleepsWhileEveryStreamWaitsOnItsToolAndGoesOnWithTheAnswer) {
  OffThreadFixture f;
  CachedSequence sequence(*f.model);
  Sampler greedy({.temperature = 0});
  ScriptedCall tools = f.tools();
  tools.answer_off_thread(std::make_shared<ToolAnswerBell>());
  std::promise<void> sleeping;
  tools.on_wait = [&] { sleeping.set_value(); };  // once: the one call
  // the tool is released once decode() sleeps on it (a decode that spins, or waits on something
  // else, fails here after a minute instead of hanging)
  std::thread releaser([&] {
    EXPECT_EQ(sleeping.get_future().wait_for(std::chrono::seconds(60)), std::future_status::ready);
    f.release.set_value();
  });
  DecodeStream caller(sequence, greedy, {.max_new_tokens = 120}, kCaller, nullptr, {.tools = &tools});
  caller.prefill(kCaller);
  DecodeStream* one[] = {&caller};
  decode(one);
  releaser.join();
  EXPECT_EQ(caller.reason(), StopReason::max_new_tokens);
  EXPECT_EQ(caller.generated(), answered_inside(f).first);
}

// A client gone while its call runs: the stream and its tool use are destroyed, the call ends on
// its thread (with what it holds: the registry, the call, the bell), its answer never taken, and
// the bell counts it in flight until then.
TEST(HermesToolUse, ACallOutlivesItsToolUseAndItsBellCountsItUntilItEnds) {
  OffThreadFixture f;
  const auto bell = std::make_shared<ToolAnswerBell>();
  {
    CachedSequence sequence(*f.model);
    Sampler greedy({.temperature = 0});
    ScriptedCall tools = f.tools();
    tools.answer_off_thread(bell);
    DecodeStream caller(sequence, greedy, {.max_new_tokens = 120}, kCaller, nullptr, {.tools = &tools});
    caller.prefill(kCaller);
    DecodeStream* one[] = {&caller};
    while (!caller.waiting()) ASSERT_EQ(decode_step(one), 1u);
  }
  const uint64_t seen = bell->rings();
  f.release.set_value();
  bell->wait_for_calls();
  EXPECT_NE(bell->rings(), seen);
  EXPECT_TRUE(f.turns.empty());
}

}  // namespace
}  // namespace nf::infer
