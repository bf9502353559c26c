// OpenAI request bodies (serve/openai_request.h) and response shapes (serve/openai_response.h):
// every field parsed; every kind of bad input a 400 naming the field; the response objects.
#include "nanoformer/serve/openai_request.h"

#include <gtest/gtest.h>

#include "nanoformer/serve/api_error.h"
#include "nanoformer/serve/openai_response.h"

namespace nf::serve {
namespace {

using json = nlohmann::json;

// The ApiError a body raises: its status, param, and whether its message contains `needle`.
void expect_refused(const std::string& body, Endpoint endpoint, const std::string& param, const std::string& needle) {
  try {
    parse_completion_request(body, endpoint);
    ADD_FAILURE() << "accepted: " << body;
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 400) << body;
    EXPECT_EQ(e.param(), param) << body << " -> " << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << body << " -> " << e.what();
  }
}

TEST(OpenAIRequest, ChatFields) {
  const CompletionRequest r = parse_completion_request(
      R"({"model": "m", "messages": [{"role": "developer", "content": "Be brief"},
          {"role": "user", "content": [{"type": "text", "text": "Hel"}, {"type": "text", "text": "lo"}]},
          {"role": "assistant", "content": "Hi"}, {"role": "user", "content": "Again"}],
          "temperature": 0.5, "top_p": 0.9, "top_k": 40, "min_p": 0.05, "repetition_penalty": 1.1,
          "frequency_penalty": -0.5, "presence_penalty": 1.5, "max_tokens": 7, "stop": "END", "seed": 42, "stream": true, "stream_options": {"include_usage": true},
          "n": 1, "unknown_field": [1, 2]})",
      Endpoint::chat);
  ASSERT_EQ(r.messages.size(), 4u);
  EXPECT_EQ(r.messages[0].role, "system");
  EXPECT_EQ(r.messages[1].content, "Hello");
  EXPECT_EQ(r.messages[2].role, "assistant");
  EXPECT_EQ(r.model, "m");
  EXPECT_DOUBLE_EQ(r.sampler.temperature, 0.5);
  EXPECT_DOUBLE_EQ(r.sampler.top_p, 0.9);
  EXPECT_EQ(r.sampler.top_k, 40);
  EXPECT_DOUBLE_EQ(r.sampler.min_p, 0.05);
  EXPECT_DOUBLE_EQ(r.sampler.repetition_penalty, 1.1);
  EXPECT_DOUBLE_EQ(r.sampler.frequency_penalty, -0.5);
  EXPECT_DOUBLE_EQ(r.sampler.presence_penalty, 1.5);
  EXPECT_EQ(r.max_tokens, 7);
  EXPECT_EQ(r.stop, std::vector<std::string>{"END"});
  EXPECT_EQ(r.seed, 42u);
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.include_usage);
  EXPECT_EQ(r.n, 1);
  EXPECT_EQ(parse_completion_request(R"({"prompt": "x", "n": 3})", Endpoint::completion).n, 3);
  const CompletionRequest scored = parse_completion_request(R"({"prompt": "x", "echo": true, "max_tokens": 0})", Endpoint::completion);
  EXPECT_TRUE(scored.echo);
  EXPECT_EQ(scored.max_tokens, 0);
}

TEST(OpenAIRequest, DefaultsAndTextCompletions) {
  const CompletionRequest r = parse_completion_request(R"({"prompt": ["Once"], "stop": ["a", "b"], "max_completion_tokens": 3})",
                                                       Endpoint::completion);
  EXPECT_EQ(r.prompt, "Once");
  EXPECT_EQ(r.stop, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(r.max_tokens, 3);
  EXPECT_DOUBLE_EQ(r.sampler.temperature, 1.0);  // OpenAI's default
  EXPECT_DOUBLE_EQ(r.sampler.top_p, 1.0);
  EXPECT_FALSE(r.seed.has_value());
  EXPECT_FALSE(r.stream);
  const CompletionRequest nulls = parse_completion_request(R"({"prompt": "x", "temperature": null, "stop": null})",
                                                           Endpoint::completion);
  EXPECT_DOUBLE_EQ(nulls.sampler.temperature, 1.0);
  EXPECT_TRUE(nulls.stop.empty());
}

// logprobs: chat's boolean with top_logprobs, completion's integer; absent or false: none (-1).
TEST(OpenAIRequest, Logprobs) {
  const std::string user = R"("messages": [{"role": "user", "content": "hi"}])";
  EXPECT_EQ(parse_completion_request("{" + user + "}", Endpoint::chat).top_logprobs, -1);
  EXPECT_EQ(parse_completion_request("{" + user + R"(, "logprobs": false})", Endpoint::chat).top_logprobs, -1);
  EXPECT_EQ(parse_completion_request("{" + user + R"(, "logprobs": true})", Endpoint::chat).top_logprobs, 0);
  EXPECT_EQ(parse_completion_request("{" + user + R"(, "logprobs": true, "top_logprobs": 20})", Endpoint::chat).top_logprobs, 20);
  EXPECT_EQ(parse_completion_request(R"({"prompt": "x"})", Endpoint::completion).top_logprobs, -1);
  EXPECT_EQ(parse_completion_request(R"({"prompt": "x", "logprobs": null})", Endpoint::completion).top_logprobs, -1);
  EXPECT_EQ(parse_completion_request(R"({"prompt": "x", "logprobs": 0})", Endpoint::completion).top_logprobs, 0);
  EXPECT_EQ(parse_completion_request(R"({"prompt": "x", "logprobs": 5})", Endpoint::completion).top_logprobs, 5);
}

TEST(OpenAIRequest, StructuredOutput) {
  const std::string user = R"("messages": [{"role": "user", "content": "hi"}])";
  EXPECT_EQ(parse_completion_request("{" + user + "}", Endpoint::chat).grammar, nullptr);
  EXPECT_EQ(parse_completion_request("{" + user + R"(, "response_format": {"type": "text"}})", Endpoint::chat).grammar, nullptr);
  EXPECT_NE(parse_completion_request("{" + user + R"(, "response_format": {"type": "json_object"}})", Endpoint::chat).grammar, nullptr);
  EXPECT_NE(parse_completion_request("{" + user + R"(, "response_format": {"type": "json_schema", "json_schema":
      {"name": "p", "strict": true, "schema": {"type": "object", "properties": {"a": {"type": "string"}}}}}})",
                                     Endpoint::chat).grammar, nullptr);
  EXPECT_NE(parse_completion_request(R"({"prompt": "x", "grammar": "root ::= [a-z]+"})", Endpoint::completion).grammar, nullptr);
  const Endpoint chat = Endpoint::chat;
  // an assertion no grammar writes: refused unless strict is false, then approximated and listed
  const std::string unique = R"({"type": "array", "items": {"type": "object"}, "uniqueItems": true, "minItems": 2})";
  expect_refused("{" + user + R"(, "response_format": {"type": "json_schema", "json_schema": {"schema": )" + unique + "}}}",
                 chat, "response_format.json_schema.schema", "'uniqueItems' at # cannot be written as a grammar");
  const CompletionRequest loose = parse_completion_request(
      "{" + user + R"(, "response_format": {"type": "json_schema", "json_schema": {"strict": false, "schema": )" + unique + "}}}", chat);
  EXPECT_NE(loose.grammar, nullptr);
  EXPECT_EQ(loose.schema_approximations, std::vector<std::string>{"#: uniqueItems: items may repeat"});
  EXPECT_TRUE(parse_completion_request("{" + user + R"(, "response_format": {"type": "json_schema", "json_schema":
      {"schema": {"type": "string", "pattern": "^a+$"}}}})", chat).schema_approximations.empty());
  expect_refused("{" + user + R"(, "response_format": {"type": "json_schema", "json_schema": {"name": "x"}}})", chat,
                 "response_format.json_schema.schema", "is required");
  expect_refused("{" + user + R"(, "response_format": {"type": "xml"}})", chat, "response_format.type",
                 "the types are text, json_object and json_schema");
  expect_refused("{" + user + R"(, "response_format": "json"})", chat, "response_format", "must be an object");
  expect_refused("{" + user + R"(, "grammar": "root ::= x"})", chat, "grammar", "the rule 'x' is used but never defined");
  expect_refused("{" + user + R"(, "grammar": "root ::= \"a"})", chat, "grammar", "an unterminated literal at line 1");
  expect_refused("{" + user + R"(, "grammar": 5})", chat, "grammar", "must be a string of GBNF");
  expect_refused("{" + user + R"(, "grammar": "root ::= \"a\"", "response_format": {"type": "json_object"}})", chat,
                 "grammar", "cannot both be given");
}

// llama-server's per-request speculative fields: prompt lookup on with ngram_size_n, its draft
// bounds; off (and --draft-max's default) when absent.
TEST(OpenAIRequest, Speculative) {
  const CompletionRequest off = parse_completion_request(R"({"prompt": "x"})", Endpoint::completion);
  EXPECT_FALSE(off.speculative.enabled());
  EXPECT_EQ(off.speculative.draft_max, infer::SpeculativeConfig{}.draft_max);
  const CompletionRequest on = parse_completion_request(
      R"({"prompt": "x", "speculative.ngram_size_n": 3, "speculative.n_max": 8, "speculative.n_min": 2})", Endpoint::completion);
  EXPECT_EQ(on.speculative.lookup_ngram, 3);
  EXPECT_EQ(on.speculative.draft_max, 8);
  EXPECT_EQ(on.speculative.draft_min, 2);
  EXPECT_EQ(off.speculative.draft_p_min, 0.0);
  EXPECT_EQ(parse_completion_request(R"({"prompt": "x", "speculative.p_min": 0.75})", Endpoint::completion)
                .speculative.draft_p_min,
            0.75);
  expect_refused(R"({"prompt": "x", "speculative.p_min": 1.5})", Endpoint::completion, "speculative.p_min",
                 "must be in [0, 1], got 1.5");
  expect_refused(R"({"prompt": "x", "speculative.n_max": 0})", Endpoint::completion, "speculative.n_max", "at least 1");
  expect_refused(R"({"prompt": "x", "speculative.ngram_size_n": "3"})", Endpoint::completion, "speculative.ngram_size_n",
                 "must be an integer");
  expect_refused(R"({"prompt": "x", "speculative.n_max": 2, "speculative.n_min": 3})", Endpoint::completion,
                 "speculative.n_min", "at most 'speculative.n_max' (2)");
  // bounded: a lookup of a long n-gram, or a long draft, would cost every stream of the step
  expect_refused(R"({"prompt": "x", "speculative.ngram_size_n": 17})", Endpoint::completion, "speculative.ngram_size_n",
                 "must be at most 16, got 17");
  expect_refused(R"({"prompt": "x", "speculative.n_max": 1000000})", Endpoint::completion, "speculative.n_max",
                 "must be at most 15, got 1000000");
  EXPECT_EQ(parse_completion_request(R"({"prompt": "x", "speculative.ngram_size_n": 16, "speculative.n_max": 15})",
                                     Endpoint::completion).speculative.draft_max, 15);
}

TEST(OpenAIRequest, BadInputNamesTheField) {
  const Endpoint chat = Endpoint::chat;
  const std::string user = R"("messages": [{"role": "user", "content": "hi"}])";
  expect_refused("{\"messages\": [", chat, "", "not valid JSON");
  expect_refused("", chat, "", "not valid JSON");
  expect_refused("[]", chat, "", "JSON object, got array");
  expect_refused("{}", chat, "messages", "'messages' is required");
  expect_refused(R"({"messages": []})", chat, "messages", "non-empty array");
  expect_refused(R"({"messages": ["hi"]})", chat, "messages[0]", "must be an object");
  expect_refused(R"({"messages": [{"content": "hi"}]})", chat, "messages[0].role", "must be a string");
  expect_refused(R"({"messages": [{"role": "robot", "content": "hi"}]})", chat, "messages[0].role", "\"robot\"");
  expect_refused(R"({"messages": [{"role": "user"}]})", chat, "messages[0].content", "required");
  expect_refused(R"({"messages": [{"role": "user", "content": 5}]})", chat, "messages[0].content", "string or a non-empty array");
  expect_refused(R"({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]})", chat, "messages[0].content",
                 "parts must be");
  expect_refused("{" + user + R"(, "model": 3})", chat, "model", "must be a string");
  expect_refused("{" + user + R"(, "temperature": "hot"})", chat, "temperature", "must be a number, got string");
  expect_refused("{" + user + R"(, "temperature": 2.5})", chat, "temperature", "[0, 2], got 2.5");
  expect_refused("{" + user + R"(, "top_p": 0})", chat, "top_p", "(0, 1]");
  expect_refused("{" + user + R"(, "frequency_penalty": 2.5})", chat, "frequency_penalty", "[-2, 2], got 2.5");
  expect_refused("{" + user + R"(, "presence_penalty": "x"})", chat, "presence_penalty", "must be a number");
  expect_refused("{" + user + R"(, "top_k": -1})", chat, "top_k", "at least 0");
  expect_refused("{" + user + R"(, "top_k": 1.5})", chat, "top_k", "must be an integer");
  expect_refused("{" + user + R"(, "max_tokens": 0})", chat, "max_tokens", "at least 1");
  expect_refused("{" + user + R"(, "max_tokens": 18446744073709551615})", chat, "max_tokens", "too large");
  expect_refused("{" + user + R"(, "stop": ""})", chat, "stop", "must not be empty");
  expect_refused("{" + user + R"(, "stop": ["a", 1]})", chat, "stop", "must hold strings");
  expect_refused("{" + user + R"(, "stop": ["a", "b", "c", "d", "e"]})", chat, "stop", "up to 4");
  expect_refused("{" + user + R"(, "stream": "yes"})", chat, "stream", "must be a boolean");
  expect_refused("{" + user + R"(, "stream_options": {"include_usage": 1}})", chat, "stream_options.include_usage",
                 "boolean");
  expect_refused("{" + user + R"(, "n": 0})", chat, "n", "at least 1");
  expect_refused("{" + user + R"(, "n": 129})", chat, "n", "at most 128");
  expect_refused("{" + user + R"(, "echo": true})", chat, "echo", "is for text completions");
  expect_refused(R"({"prompt": "x", "echo": 1})", Endpoint::completion, "echo", "must be a boolean");
  expect_refused(R"({"prompt": "x", "max_tokens": 0})", Endpoint::completion, "max_tokens", "at least 1");
  expect_refused("{" + user + R"(, "logprobs": 1})", chat, "logprobs", "must be a boolean");
  expect_refused("{" + user + R"(, "logprobs": true, "top_logprobs": 21})", chat, "top_logprobs", "at most 20");
  expect_refused("{" + user + R"(, "top_logprobs": 2})", chat, "top_logprobs", "needs 'logprobs': true");
  expect_refused("{" + user + R"(, "logprobs": true, "top_logprobs": -1})", chat, "top_logprobs", "at least 0");
  expect_refused(R"({"prompt": "x", "logprobs": 6})", Endpoint::completion, "logprobs", "at most 5");
  expect_refused(R"({"prompt": "x", "logprobs": true})", Endpoint::completion, "logprobs", "must be an integer");
  expect_refused(R"({"prompt": 5})", Endpoint::completion, "prompt", "must be a string");
  expect_refused(R"({"prompt": ["a", "b"]})", Endpoint::completion, "prompt", "must be a string");
  expect_refused(R"({"messages": []})", Endpoint::completion, "prompt", "'prompt' is required");
}

TEST(OpenAIRequest, ToolsAndToolMessages) {
  const CompletionRequest r = parse_completion_request(
      R"({"messages": [{"role": "user", "content": "Weather in Paris?"},
          {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
           "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\", \"days\": 2}"}}]},
          {"role": "tool", "tool_call_id": "call_1", "content": "sunny"}],
          "tools": [{"type": "function", "function": {"name": "get_weather", "description": "d",
                     "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                                    "required": ["city"]}}}],
          "tool_choice": "auto"})",
      Endpoint::chat);
  ASSERT_EQ(r.messages.size(), 3u);
  EXPECT_EQ(r.messages[1].content, "");
  // the arguments' text becomes an object, its keys in their order, as the template renders it
  EXPECT_EQ(r.messages[1].tool_calls,
            R"([{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":{"city":"Paris","days":2}}}])");
  EXPECT_EQ(r.messages[2].role, "tool");
  EXPECT_EQ(r.messages[2].tool_call_id, "call_1");
  EXPECT_EQ(json::parse(r.tool_use.tools)[0]["function"]["name"], "get_weather");
  EXPECT_TRUE(r.tool_use.parsed());
  EXPECT_FALSE(r.tool_use.forced());
  EXPECT_EQ(r.grammar, nullptr);

  const std::string tools = R"("tools": [{"type": "function", "function": {"name": "a", "parameters": {"type": "object"}}},
                                        {"type": "function", "function": {"name": "b"}}])";
  const std::string user = R"("messages": [{"role": "user", "content": "hi"}])";
  const CompletionRequest none = parse_completion_request("{" + user + ", " + tools + R"(, "tool_choice": "none"})", Endpoint::chat);
  EXPECT_FALSE(none.tool_use.parsed());  // offered to the template, but never parsed or forced
  EXPECT_FALSE(none.tool_use.tools.empty());
  const CompletionRequest required = parse_completion_request("{" + user + ", " + tools + R"(, "tool_choice": "required"})", Endpoint::chat);
  EXPECT_TRUE(required.tool_use.forced());
  EXPECT_NE(required.grammar, nullptr);
  const CompletionRequest named = parse_completion_request(
      "{" + user + ", " + tools + R"(, "tool_choice": {"type": "function", "function": {"name": "b"}}, "parallel_tool_calls": true})",
      Endpoint::chat);
  EXPECT_EQ(named.tool_use.choice, ToolChoice::function);
  EXPECT_EQ(named.tool_use.function, "b");
  EXPECT_TRUE(named.tool_use.parallel);
  EXPECT_NE(named.grammar, nullptr);
}

TEST(OpenAIRequest, BadToolsNameTheField) {
  const Endpoint chat = Endpoint::chat;
  const std::string user = R"("messages": [{"role": "user", "content": "hi"}])";
  const auto with = [&](const std::string& fields) { return "{" + user + ", " + fields + "}"; };
  const std::string tool_a = R"({"type": "function", "function": {"name": "a", "parameters": {"type": "object"}}})";
  expect_refused(with(R"("tools": {})"), chat, "tools", "non-empty array");
  expect_refused(with(R"("tools": [])"), chat, "tools", "non-empty array");
  expect_refused(with(R"("tools": [3])"), chat, "tools[0]", "must be an object");
  expect_refused(with(R"("tools": [{"type": "code_interpreter"}])"), chat, "tools[0].type", "\"function\"");
  expect_refused(with(R"("tools": [{"type": "function"}])"), chat, "tools[0].function", "must be an object");
  expect_refused(with(R"("tools": [{"type": "function", "function": {"description": "x"}}])"), chat, "tools[0].function.name", "got nothing");
  expect_refused(with(R"("tools": [{"type": "function", "function": {"name": "a b"}}])"), chat, "tools[0].function.name", "letters, digits");
  expect_refused(with(R"("tools": [{"type": "function", "function": {"name": "a", "parameters": "x"}}])"), chat,
                 "tools[0].function.parameters", "JSON schema object");
  expect_refused(with(R"("tools": [{"type": "function", "function": {"name": "a", "description": 1}}])"), chat,
                 "tools[0].function.description", "must be a string");
  expect_refused(with(R"("tools": [)" + tool_a + ", " + tool_a + "]"), chat, "tools[1].function.name", "earlier tool");
  expect_refused(with(R"("tools": [)" + tool_a + R"(], "tool_choice": "sometimes")"), chat, "tool_choice", "\"sometimes\"");
  expect_refused(with(R"("tools": [)" + tool_a + R"(], "tool_choice": {"type": "function"})"), chat, "tool_choice", "must be auto");
  expect_refused(with(R"("tools": [)" + tool_a + R"(], "tool_choice": {"type": "function", "function": {"name": "zz"}})"), chat,
                 "tool_choice.function.name", "not one of the tools");
  expect_refused(with(R"("tool_choice": "required")"), chat, "tool_choice", "no 'tools'");
  expect_refused(with(R"("tools": [)" + tool_a + R"(], "parallel_tool_calls": 1)"), chat, "parallel_tool_calls", "boolean");
  expect_refused(with(R"("tools": [)" + tool_a + R"(], "tool_choice": "required", "response_format": {"type": "json_object"})"), chat,
                 "tool_choice", "cannot be combined");
  expect_refused(with(R"("tools": [{"type": "function", "function": {"name": "a", "parameters": {"type": "object", "properties":
      {"s": {"type": "array", "uniqueItems": true, "minItems": 2}}}}}], "tool_choice": "required")"),
                 chat, "tools[0].function.parameters", "uniqueItems");
  expect_refused(R"({"prompt": "x", "tools": []})", Endpoint::completion, "tools", "chat completions");
  // messages with tools
  expect_refused(R"({"messages": [{"role": "tool", "content": "sunny"}]})", chat, "messages[0].tool_call_id", "id of the call");
  expect_refused(R"({"messages": [{"role": "assistant", "tool_calls": {}}]})", chat, "messages[0].tool_calls", "must be an array");
  expect_refused(R"({"messages": [{"role": "assistant", "tool_calls": [{"type": "function", "function": {"arguments": "{}"}}]}]})",
                 chat, "messages[0].tool_calls[0].function.name", "must be a string");
  expect_refused(R"({"messages": [{"role": "assistant", "tool_calls": [{"type": "function", "function": {"name": "a", "arguments": "{oops"}}]}]})",
                 chat, "messages[0].tool_calls[0].function.arguments", "JSON object's text");
  expect_refused(R"({"messages": [{"role": "assistant", "content": null}]})", chat, "messages[0].content", "required");
}

// Hostile bodies (issue 39): a grammar or body deep or large enough to exhaust the stack or stall
// a thread is the client's error, a 400 naming the field and the budget, never a 5xx or a crash.
TEST(OpenAIRequest, GrammarsAndBodiesOverBudgetAre400s) {
  const Endpoint chat = Endpoint::chat;
  const std::string user = R"("messages": [{"role": "user", "content": "hi"}])";
  const auto with_grammar = [&](const std::string& gbnf) { return "{" + user + R"(, "grammar": )" + json(gbnf).dump() + "}"; };
  for (const int depth : {257, 5'000, 20'000, 100'000})
    expect_refused(with_grammar("root ::= " + std::string(depth, '(') + "\"a\"" + std::string(depth, ')')), chat, "grammar",
                   "groups nested deeper than 256");
  expect_refused(with_grammar(R"(root ::= (("a"{0,1000}){0,1000}){0,1000})"), chat, "grammar",
                 "reaches more than 65536 rule positions");
  expect_refused(with_grammar(R"(root ::= "\uD800")"), chat, "grammar", "the surrogate U+D800 is not a character");
  // JSON nested 100,000 deep: refused before it is parsed (copies and prints of it recurse)
  const std::string deep = std::string(100'000, '[') + std::string(100'000, ']');
  expect_refused("{" + user + R"(, "response_format": )" + deep + "}", chat, "", "nests deeper than 512 levels");
  expect_refused("{" + user + R"(, "stop": )" + deep + "}", chat, "", "nests deeper than 512 levels");
  expect_refused(R"({"messages": [{"role": "assistant", "tool_calls": [{"type": "function", "function": {"name": "a", "arguments": )" +
                     json("{\"a\": " + deep + "}").dump() + "}}]}]}",
                 chat, "messages[0].tool_calls[0].function.arguments", "nests deeper than 512 levels");
  // a schema nested deeper than the converter's 256 (within the body's 512)
  std::string schema = R"({"type": "string"})";
  for (int i = 0; i < 300; ++i) schema = R"({"type": "array", "items": )" + schema + "}";
  expect_refused("{" + user + R"(, "response_format": {"type": "json_schema", "json_schema": {"schema": )" + schema + "}}}", chat,
                 "response_format.json_schema.schema", "nested deeper than 256");
}

TEST(OpenAIRequest, ToolParametersAreCheckedWhateverTheChoice) {
  const std::string user = R"("messages": [{"role": "user", "content": "hi"}])";
  for (const std::string choice : {"", R"(, "tool_choice": "auto")", R"(, "tool_choice": "none")", R"(, "tool_choice": "required")"})
    expect_refused("{" + user + R"(, "tools": [{"type": "function", "function": {"name": "a", "parameters": {"type": "bogus"}}}])" +
                       choice + "}",
                   Endpoint::chat, "tools[0].function.parameters", "the type 'bogus' at # is not a JSON Schema type");
}

TEST(OpenAIRequest, EmptyContentPartsAreRefused) {
  expect_refused(R"({"messages": [{"role": "user", "content": []}]})", Endpoint::chat, "messages[0].content",
                 "non-empty array of text parts, got []");
}

TEST(OpenAIResponse, Shapes) {
  const ResponseHeader chat{.id = "chatcmpl-1", .created = 7, .model = "tiny", .endpoint = Endpoint::chat};
  const json body = completion_body(chat, {{.text = "hello", .finish_reason = "stop"}}, {.prompt_tokens = 3, .completion_tokens = 2});
  EXPECT_EQ(body["object"], "chat.completion");
  EXPECT_EQ(body["choices"][0]["message"], json({{"role", "assistant"}, {"content", "hello"}}));
  EXPECT_EQ(body["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(body["usage"], json({{"prompt_tokens", 3}, {"completion_tokens", 2}, {"total_tokens", 5}}));
  const json first = completion_chunk(chat, "he", true), last = completion_chunk(chat, "", false, "length");
  EXPECT_EQ(first["object"], "chat.completion.chunk");
  EXPECT_EQ(first["choices"][0]["delta"], json({{"role", "assistant"}, {"content", "he"}}));
  EXPECT_TRUE(first["choices"][0]["finish_reason"].is_null());
  EXPECT_EQ(last["choices"][0]["delta"], json::object());
  EXPECT_EQ(last["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(usage_chunk(chat, {.prompt_tokens = 1, .completion_tokens = 1})["choices"], json::array());
  const ResponseHeader text{.id = "cmpl-2", .created = 7, .model = "tiny", .endpoint = Endpoint::completion};
  EXPECT_EQ(completion_body(text, {{.text = "x", .finish_reason = "length"}}, {})["choices"][0]["text"], "x");
  EXPECT_EQ(completion_chunk(text, "y", true)["object"], "text_completion");
  EXPECT_TRUE(body["choices"][0]["logprobs"].is_null());
  // a reasoning: the message's reasoning_content, a chunk's delta's
  const json thought = completion_body(chat, {{.text = "4", .finish_reason = "stop", .reasoning = "2 + 2"}}, {});
  EXPECT_EQ(thought["choices"][0]["message"], json({{"role", "assistant"}, {"content", "4"}, {"reasoning_content", "2 + 2"}}));
  EXPECT_EQ(completion_chunk(chat, "", true, "", nullptr, "hm")["choices"][0]["delta"],
            json({{"role", "assistant"}, {"reasoning_content", "hm"}}));
  EXPECT_FALSE(body["choices"][0]["message"].contains("reasoning_content"));
  // n choices: one body with each at its index; a chunk names its choice
  const json two = completion_body(text, {{.text = "a", .finish_reason = "stop"}, {.text = "b", .finish_reason = "length"}}, {});
  ASSERT_EQ(two["choices"].size(), 2u);
  EXPECT_EQ(two["choices"][1]["index"], 1);
  EXPECT_EQ(two["choices"][1]["text"], "b");
  EXPECT_EQ(two["choices"][1]["finish_reason"], "length");
  ResponseHeader second = text;
  second.index = 1;
  EXPECT_EQ(completion_chunk(second, "y", true)["choices"][0]["index"], 1);
  // with logprobs: chat's content list, completion's legacy columns
  const std::vector<LogprobEntry> entries{{.token = "he", .logprob = -0.5f, .top = {{"he", -0.5f}, {"ha", -1.5f}}, .text_offset = 0},
                                          {.token = "\xff", .logprob = -2.0f, .top = {}, .text_offset = 2}};
  const json content = completion_body(chat, {{.text = "he?", .finish_reason = "stop", .logprobs = &entries}}, {})["choices"][0]["logprobs"]["content"];
  ASSERT_EQ(content.size(), 2u);
  EXPECT_EQ(content[0], json({{"token", "he"}, {"logprob", -0.5}, {"bytes", {104, 101}},
                              {"top_logprobs", {{{"token", "he"}, {"logprob", -0.5}, {"bytes", {104, 101}}},
                                                {{"token", "ha"}, {"logprob", -1.5}, {"bytes", {104, 97}}}}}}));
  EXPECT_EQ(content[1]["bytes"], json({255}));  // the token's own byte, whatever its string becomes in UTF-8
  EXPECT_EQ(content[1]["top_logprobs"], json::array());
  const ResponseHeader legacy{.id = "cmpl-3", .created = 7, .model = "tiny", .endpoint = Endpoint::completion};
  const json columns = completion_chunk(legacy, "he", true, "", &entries)["choices"][0]["logprobs"];
  EXPECT_EQ(columns["tokens"], json({"he", "\xff"}));
  EXPECT_EQ(columns["token_logprobs"], json({-0.5, -2.0}));
  EXPECT_EQ(columns["top_logprobs"], json({{{"he", -0.5}, {"ha", -1.5}}, json::object()}));
  EXPECT_EQ(columns["text_offset"], json({0, 2}));
  // tool calls: in the message (content null without text), and as a streamed call's two deltas
  const infer::ToolCall call{.id = "call_x", .name = "f", .arguments = R"({"a":1})"};
  const json message = completion_body(chat, {{.text = "", .finish_reason = "tool_calls", .tool_calls = {call}}}, {})["choices"][0]["message"];
  EXPECT_TRUE(message["content"].is_null());
  EXPECT_EQ(message["tool_calls"], json::parse(R"([{"id": "call_x", "type": "function", "function": {"name": "f", "arguments": "{\"a\":1}"}}])"));
  const std::vector<json> deltas = tool_call_chunks(chat, call, 2);
  ASSERT_EQ(deltas.size(), 2u);
  EXPECT_EQ(deltas[0]["choices"][0]["delta"], json::parse(R"({"tool_calls": [{"index": 2, "id": "call_x", "type": "function",
                                                                             "function": {"name": "f", "arguments": ""}}]})"));
  EXPECT_EQ(deltas[1]["choices"][0]["delta"], json::parse(R"({"tool_calls": [{"index": 2, "function": {"arguments": "{\"a\":1}"}}]})"));
  EXPECT_EQ(deltas[1]["object"], "chat.completion.chunk");
  const ApiError e = invalid_request("top_p", "bad", "code_x");
  EXPECT_EQ(e.body(), json({{"error", {{"message", "bad"}, {"type", "invalid_request_error"}, {"param", "top_p"}, {"code", "code_x"}}}}));
  EXPECT_TRUE(ApiError(503, "busy", "server_error").body()["error"]["param"].is_null());
}

}  // namespace
}  // namespace nf::serve
