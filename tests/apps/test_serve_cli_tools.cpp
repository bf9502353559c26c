// `nanoformer serve` with tools and beyond completions: a forced tool call is a valid call and comes
// back in the next turn; echo scores the prompt; /v1/embeddings from a sentence-transformers folder
// (what sentence-transformers computes, as floats and as base64) and from a decoder beside its
// completions; server-side tools run while the answer decodes and stream their calls and answers;
// a slow server-side tool holds up only its own answer.
#include <filesystem>
#include <future>

#include "serve_cli_support.h"

namespace nf {
namespace {

// The UTF-8 characters of `s` (maxLength counts them).
int64_t code_points(const std::string& s) {
  int64_t n = 0;
  for (const char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

// Whether a call's arguments (JSON text) validate against kWeatherParameters below.
bool valid_weather_arguments(const std::string& text) {
  const json a = json::parse(text, nullptr, false);
  if (!a.is_object() || !a.contains("city") || !a.contains("days")) return false;
  for (const auto& [key, value] : a.items()) {
    if (key == "city" && !(value.is_string() && code_points(value.get<std::string>()) <= 8)) return false;
    if (key == "days" && !(value == 1 || value == 2 || value == 3 || value == 7)) return false;
    if (key == "unit" && value != "c" && value != "f") return false;
    if (key != "city" && key != "days" && key != "unit") return false;
  }
  return true;
}

constexpr const char* kWeatherParameters = R"({"type": "object", "properties": {"city": {"type": "string", "maxLength": 8},
    "days": {"enum": [1, 2, 3, 7]}, "unit": {"enum": ["c", "f"]}}, "required": ["city", "days"], "additionalProperties": false})";
// (every value bounded: a random model under the grammar then ends its call within max_tokens
// whatever its sampled tokens, which differ with the CPU's float rounding)
constexpr const char* kTimeParameters = R"({"type": "object", "properties": {"tz": {"enum": [0, 1, 2]}}, "required": ["tz"],
    "additionalProperties": false})";

// Tools through MiniMind's current template (its tokenizer_config.json beside the model): with
// tool_choice required or a named function the random model's answer is a call whose arguments
// validate against the function's schema (the grammar allows nothing else), given as tool_calls
// with finish_reason tool_calls, streamed as OpenAI's deltas; with auto, a call the answer writes
// (a grammar makes the random model write one) is parsed out of it; the call and its result (role tool)
// come back in the next request and are rendered by the template; the built-in ChatML template
// refuses tools with a 400.
TEST_F(ServeCliTest, AForcedToolCallIsAValidCallAndComesBackInTheNextTurn) {
  use_golden_template("minimind");
  const json tools = {{{"type", "function"}, {"function", {{"name", "get_weather"}, {"parameters", json::parse(kWeatherParameters)}}}},
                      {{"type", "function"}, {"function", {{"name", "get_time"}, {"parameters", json::parse(kTimeParameters)}}}}};
  const json question = chat("Weather in Paris?", {{"tools", tools}, {"max_tokens", 400}});
  json first_call;
  {
    ServerProcess server = serve("--context 4096");
    httplib::Client client = server.client();
    // named: greedy, and sampled with seeds as n choices
    json named = question;
    named["tool_choice"] = {{"type", "function"}, {"function", {{"name", "get_weather"}}}};
    for (const json& extra : {json{{"temperature", 0}}, json{{"temperature", 1.0}, {"seed", 11}, {"n", 4}}}) {
      json body = named;
      body.update(extra);
      const json answer = post(client, "/v1/chat/completions", body, 200);
      for (const json& choice : answer["choices"]) {
        ASSERT_EQ(choice["finish_reason"], "tool_calls") << choice;
        const json& calls = choice["message"]["tool_calls"];
        ASSERT_EQ(calls.size(), 1u) << choice;
        EXPECT_EQ(calls[0]["type"], "function");
        EXPECT_EQ(calls[0]["id"].get<std::string>().rfind("call_", 0), 0u) << calls[0];
        EXPECT_EQ(calls[0]["function"]["name"], "get_weather");
        EXPECT_TRUE(valid_weather_arguments(calls[0]["function"]["arguments"].get<std::string>())) << calls[0];
        EXPECT_TRUE(choice["message"]["content"].is_null()) << choice;
      }
      if (first_call.is_null()) first_call = answer["choices"][0]["message"];
    }
    // required: either function, with its own schema's arguments
    json required = question;
    required.update({{"tool_choice", "required"}, {"temperature", 1.0}, {"seed", 3}, {"n", 4}});
    const json required_answer = post(client, "/v1/chat/completions", required, 200);  // (kept: the loop reads into it)
    for (const json& choice : required_answer["choices"]) {
      ASSERT_EQ(choice["finish_reason"], "tool_calls") << choice;
      const json& call = choice["message"]["tool_calls"].at(0)["function"];
      if (call["name"] == "get_weather")
        EXPECT_TRUE(valid_weather_arguments(call["arguments"].get<std::string>())) << call;
      else
        EXPECT_TRUE(call["name"] == "get_time" && json::parse(call["arguments"].get<std::string>()).at("tz").is_number_integer())
            << call;
    }
    // streamed: the call as deltas, its arguments those of the greedy answer
    json streamed_body = named;
    streamed_body["temperature"] = 0;
    const Streamed streamed = stream(client, "/v1/chat/completions", streamed_body);
    std::string name, id, arguments, finish;
    for (const json& chunk : streamed.chunks) {
      if (chunk["choices"].empty()) continue;
      const json& choice = chunk["choices"][0];
      if (!choice["finish_reason"].is_null()) finish = choice["finish_reason"];
      if (!choice["delta"].contains("tool_calls")) continue;
      const json& delta = choice["delta"]["tool_calls"].at(0);
      EXPECT_EQ(delta["index"], 0);
      if (delta.contains("id")) id = delta["id"], name = delta["function"]["name"];
      arguments += delta["function"]["arguments"].get<std::string>();
    }
    EXPECT_EQ(finish, "tool_calls");
    EXPECT_EQ(id.rfind("call_", 0), 0u);
    EXPECT_EQ(name, "get_weather");
    EXPECT_EQ(arguments, first_call["tool_calls"][0]["function"]["arguments"]);
    EXPECT_EQ(streamed.text, "");

    // auto: the answer's own <tool_call> text (written here through a grammar) is parsed, the text
    // before it streamed as content, a malformed tag left as content
    json automatic = question;
    automatic["grammar"] = R"(root ::= "Let me see. <tool_call>{\"name\": \"get_time\", \"arguments\": {\"tz\": 1}}</tool_call>")";
    const json told = post(client, "/v1/chat/completions", automatic, 200)["choices"][0];
    EXPECT_EQ(told["finish_reason"], "tool_calls") << told;
    EXPECT_EQ(told["message"]["content"], "Let me see.") << told;
    EXPECT_EQ(told["message"]["tool_calls"].at(0)["function"], json({{"name", "get_time"}, {"arguments", R"({"tz":1})"}})) << told;
    const Streamed told_streamed = stream(client, "/v1/chat/completions", automatic);
    EXPECT_EQ(told_streamed.text, "Let me see.");
    automatic["grammar"] = R"(root ::= "<tool_call>{\"name\": 7}</tool_call>")";
    const json malformed = post(client, "/v1/chat/completions", automatic, 200)["choices"][0];
    EXPECT_EQ(malformed["finish_reason"], "stop") << malformed;
    EXPECT_EQ(malformed["message"]["content"], "<tool_call>{\"name\": 7}</tool_call>") << malformed;
    EXPECT_FALSE(malformed["message"].contains("tool_calls")) << malformed;

    // the next turn: the call and its result, rendered by the template
    json turn = chat("Weather in Paris?", {{"tools", tools}, {"tool_choice", "none"}});
    turn["messages"].push_back(first_call);
    turn["messages"].push_back({{"role", "tool"}, {"tool_call_id", first_call["tool_calls"][0]["id"]}, {"content", "sunny, 21 C"}});
    const json answer = post(client, "/v1/chat/completions", turn, 200);
    EXPECT_TRUE(answer["choices"][0]["message"]["content"].is_string()) << answer;
    EXPECT_FALSE(answer["choices"][0]["message"].contains("tool_calls")) << answer;
    const std::string prompt = post(client, "/apply-template", turn, 200)["prompt"];
    EXPECT_NE(prompt.find("<|im_start|>system\n# Tools"), std::string::npos) << prompt;
    EXPECT_NE(prompt.find("\"name\": \"get_weather\""), std::string::npos) << prompt;
    EXPECT_NE(prompt.find("<|im_start|>user\n<tool_response>\nsunny, 21 C\n</tool_response><|im_end|>\n"), std::string::npos) << prompt;
    const std::string opening = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": ";
    const size_t rendered = prompt.find(opening);
    ASSERT_NE(rendered, std::string::npos) << prompt;
    const size_t begin = rendered + opening.size();
    EXPECT_EQ(json::parse(prompt.substr(begin, prompt.find("}\n</tool_call>", begin) - begin)),
              json::parse(first_call["tool_calls"][0]["function"]["arguments"].get<std::string>()))
        << prompt;
  }
  std::filesystem::remove(path("model/tokenizer_config.json"));  // the built-in ChatML template
  ServerProcess server(path("server2.log"), {"--model", path("model/model.safetensors"), "--name", "tiny"});
  httplib::Client client = server.client();
  expect_error(post(client, "/v1/chat/completions", question, 400), "cannot render tools", "messages");
}

// echo with logprobs, as lm-evaluation-harness scores a continuation (max_tokens 1, or 0 for the
// prompt alone): the text begins with the prompt, the first token's logprob is null, and every other
// prompt token's is log_softmax of the logits a full forward over the prompt gives.
TEST_F(ServeCliTest, EchoScoresThePromptWithTheForwardsLogSoftmax) {
  const std::string prompt = "Once upon a time";
  const auto tok = tokenizer::load_tokenizer(path("model/tokenizer.json"));
  const std::vector<tokenizer::TokenId> encoded = tok->encode(prompt);
  const std::vector<int64_t> ids(encoded.begin(), encoded.end());
  const auto model = formats::load_decoder_lm(path("model/model.safetensors"));
  model->eval();
  const Tensor logits = model->forward(Tensor::from_vector(ids, {1, static_cast<int64_t>(ids.size())})).logits.contiguous();
  const int64_t vocab = logits.size(2);
  const auto x = logits.to_vector<float>();
  ServerProcess server = serve("--prefill-chunk 4");  // the scoring comes in chunks too
  httplib::Client client = server.client();
  for (const int max_tokens : {1, 0}) {
    const json body = post(client, "/v1/completions",
                           {{"prompt", prompt}, {"echo", true}, {"logprobs", 2}, {"max_tokens", max_tokens}, {"temperature", 0}}, 200);
    const json& choice = body["choices"][0];
    const std::string text = choice["text"];
    EXPECT_EQ(text.substr(0, prompt.size()), prompt);
    EXPECT_EQ(body["usage"]["completion_tokens"], max_tokens);
    const json& lp = choice["logprobs"];
    ASSERT_EQ(lp["tokens"].size(), ids.size() + static_cast<size_t>(max_tokens)) << lp;
    EXPECT_TRUE(lp["token_logprobs"][0].is_null());
    EXPECT_TRUE(lp["top_logprobs"][0].is_null());
    double worst = 0;
    for (size_t t = 1; t < ids.size(); ++t) {
      const float* row = x.data() + (t - 1) * static_cast<size_t>(vocab);
      double top = row[0], sum = 0;
      for (int64_t v = 0; v < vocab; ++v) top = std::max<double>(top, row[v]);
      for (int64_t v = 0; v < vocab; ++v) sum += std::exp(row[v] - top);
      const double expected = row[ids[t]] - top - std::log(sum);  // log_softmax
      worst = std::max(worst, std::abs(lp["token_logprobs"][t].get<double>() - expected));
      EXPECT_EQ(lp["top_logprobs"][t].size(), 2u);
      EXPECT_EQ(lp["text_offset"][t], lp["text_offset"][t - 1].get<int>() + static_cast<int>(lp["tokens"][t - 1].get<std::string>().size()));
    }
    EXPECT_LE(worst, 1e-4) << "max_tokens " << max_tokens;
    if (max_tokens == 0) {
      EXPECT_EQ(text, prompt);
      EXPECT_EQ(choice["finish_reason"], "length");
    }
  }
  // streamed, the prompt comes first
  const Streamed streamed = stream(client, "/v1/completions", {{"prompt", prompt}, {"echo", true}, {"max_tokens", 3}});
  EXPECT_EQ(streamed.text.substr(0, prompt.size()), prompt);
  // with logprobs, the prompt's tokens come in the chunk whose text starts with the prompt (the
  // first new tokens may join it), never in a later one
  const Streamed scored = stream(client, "/v1/completions", {{"prompt", prompt}, {"echo", true}, {"max_tokens", 3}, {"logprobs", 0}});
  ASSERT_FALSE(scored.chunks.empty());
  const json& first = scored.chunks.front()["choices"][0];
  EXPECT_EQ(first["text"].get<std::string>().substr(0, prompt.size()), prompt) << first;
  std::string tokens;
  for (const json& t : first["logprobs"]["tokens"]) tokens += t.get<std::string>();
  EXPECT_EQ(tokens.substr(0, prompt.size()), prompt) << first;
}

// RFC 4648 base64 back to bytes (the test's own decoder of the server's base64 embeddings).
std::string from_base64(const std::string& text) {
  static const std::string kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  uint32_t bits = 0;
  int count = 0;
  for (const char c : text) {
    if (c == '=') break;
    bits = bits << 6 | static_cast<uint32_t>(kAlphabet.find(c));
    if ((count += 6) >= 8) out += static_cast<char>((bits >> (count -= 8)) & 0xFF);
  }
  return out;
}

TEST_F(ServeCliTest, ASentenceTransformersFolderServesItsEmbeddings) {
  const std::string data = NF_TEST_DATA_DIR;
  const std::string folder = path("sentence_bert");
  std::filesystem::copy(data + "/hf/sentence_bert", folder, std::filesystem::copy_options::recursive);
  for (const char* file : {"config.json", "model.safetensors"})
    std::filesystem::copy(data + "/hf/bert/" + file, folder + "/" + file);
  const auto f = io::load_safetensors(data + "/hf/sentence_embedding.safetensors");
  const auto ids = f.at("ids").to_vector<int64_t>(), mask = f.at("mask").to_vector<int64_t>();
  const auto expected = f.at("encoder.mean_normalized").to_vector<float>();
  json inputs = json::array();
  for (int64_t r = 0; r < 3; ++r) {
    json row = json::array();
    for (int64_t t = 0; t < 9; ++t)
      if (mask[static_cast<size_t>(r * 9 + t)]) row.push_back(ids[static_cast<size_t>(r * 9 + t)]);
    inputs.push_back(row);
  }
  ServerProcess server(path("server.log"), {"--model", folder, "--name", "minilm"});
  httplib::Client client = server.client();
  EXPECT_EQ(json::parse(client.Get("/v1/models")->body)["data"][0]["context_length"], 12);  // max_seq_length
  const json floats = post(client, "/v1/embeddings", {{"input", inputs}, {"model", "minilm"}}, 200);
  const json b64 = post(client, "/v1/embeddings", {{"input", inputs}, {"encoding_format", "base64"}}, 200);
  EXPECT_EQ(floats["object"], "list");
  EXPECT_EQ(floats["model"], "minilm");
  EXPECT_EQ(floats["usage"]["prompt_tokens"], 9 + 5 + 2);
  ASSERT_EQ(floats["data"].size(), 3u);
  double worst = 0;
  for (size_t r = 0; r < 3; ++r) {
    const json& item = floats["data"][r];
    EXPECT_EQ(item["object"], "embedding");
    EXPECT_EQ(item["index"], r);
    const auto vector = item["embedding"].get<std::vector<float>>();
    ASSERT_EQ(vector.size(), 32u);
    const std::string bytes = from_base64(b64["data"][r]["embedding"].get<std::string>());
    ASSERT_EQ(bytes.size(), 32 * sizeof(float));
    std::vector<float> decoded(32);
    std::memcpy(decoded.data(), bytes.data(), bytes.size());
    for (size_t d = 0; d < 32; ++d) {
      worst = std::max(worst, static_cast<double>(std::abs(vector[d] - expected[r * 32 + d])));
      EXPECT_EQ(decoded[d], vector[d]);  // the same f32, both ways
    }
  }
  EXPECT_LE(worst, 1e-5) << "vs sentence-transformers";
  // one input of ids; what the server cannot do is named
  EXPECT_EQ(post(client, "/v1/embeddings", {{"input", inputs[0]}}, 200)["data"].size(), 1u);
  expect_error(post(client, "/v1/embeddings", {{"input", "Hello"}}, 400), "no tokenizer: send token ids", "input");
  expect_error(post(client, "/v1/embeddings", {{"input", json::array({json::array({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13})})}}, 400),
               "input 0 is 13 tokens, over the model's limit of 12", "input");
  expect_error(post(client, "/v1/embeddings", {{"input", inputs}, {"dimensions", 16}}, 400), "cannot be cut", "dimensions");
  expect_error(post(client, "/v1/embeddings", {{"input", json::array({1, -2})}}, 400), "token ids (integers >= 0)", "input");
  expect_error(post(client, "/v1/embeddings", {{"input", json::array({"a", 3})}}, 400), "all strings or all arrays", "input[1]");
  expect_error(post(client, "/v1/embeddings", {{"input", inputs}, {"encoding_format", "f16"}}, 400), "\"float\" or \"base64\"",
               "encoding_format");
  expect_error(post(client, "/v1/embeddings", {{"input", inputs}, {"model", "other"}}, 404), "does not exist", "model");
  expect_error(post(client, "/v1/embeddings", json::object(), 400), "'input' is required", "input");
  expect_error(post(client, "/v1/chat/completions", chat("Hi"), 404), "does not serve chat completions");
  EXPECT_EQ(json::parse(client.Get("/health")->body)["status"], "ok");
}

TEST_F(ServeCliTest, ADecoderEmbedsTextBesideItsCompletions) {
  ServerProcess server = serve("");
  httplib::Client client = server.client();
  const json body = post(client, "/v1/embeddings", {{"input", json::array({"Hello there", "Hello there", "Other"})}}, 200);
  ASSERT_EQ(body["data"].size(), 3u);
  const auto a = body["data"][0]["embedding"].get<std::vector<float>>();
  const auto b = body["data"][1]["embedding"].get<std::vector<float>>();
  const auto c = body["data"][2]["embedding"].get<std::vector<float>>();
  ASSERT_EQ(a.size(), 32u);  // the tiny model's dim
  double norm = 0;
  for (float x : a) norm += static_cast<double>(x) * x;
  EXPECT_NEAR(norm, 1.0, 1e-5);  // normalised
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_EQ(body["usage"]["prompt_tokens"], 11 + 11 + 5);  // the byte tokenizer: one token a byte
  EXPECT_EQ(post(client, "/v1/chat/completions", chat("Hi", {{"max_tokens", 3}}), 200)["usage"]["completion_tokens"], 3);
}


// serve --tools: the server runs the model's calls inside its batched decoding. A grammar makes
// the random model write two calculator calls, a command tool's call and an answer (the grammar
// constrains the model's own text; the tool messages forced between are outside it): the calls come
// back with their answers as server_tool_calls (one streamed chunk each, before the text that
// follows them), the content is the model's text around them, finish_reason stop; a call to the
// request's own tool is left to the client as tool_calls.
TEST_F(ServeCliTest, ServerToolsRunWhileTheAnswerDecodesAndStreamTheirCallsAndAnswers) {
  use_golden_template("qwen2.5");
  ServerProcess server = serve("--context 2048 --tools calculator --tool-command echo=cat");
  httplib::Client client = server.client();
  json body = chat("What is 12*34, plus one?", {{"max_tokens", 600}});
  body["grammar"] =
      R"(root ::= "Let me compute. <tool_call>{\"name\": \"calculator\", \"arguments\": {\"expression\": \"12*34\"}}</tool_call>")"
      R"( "<tool_call>{\"name\": \"calculator\", \"arguments\": {\"expression\": \"408+1\"}}</tool_call>")"
      R"( "<tool_call>{\"name\": \"echo\", \"arguments\": {\"x\": 1}}</tool_call>" "It is 409.")";
  const json expected_calls = {{{"name", "calculator"}, {"arguments", R"({"expression":"12*34"})"}, {"output", "408"}},
                               {{"name", "calculator"}, {"arguments", R"({"expression":"408+1"})"}, {"output", "409"}},
                               {{"name", "echo"}, {"arguments", R"({"x":1})"}, {"output", R"({"name":"echo","arguments":{"x":1}})"}}};
  const auto check_call = [](const json& got, const json& want) {
    EXPECT_EQ(got["type"], "function") << got;
    EXPECT_EQ(got["id"].get<std::string>().rfind("call_", 0), 0u) << got;
    EXPECT_EQ(got["function"]["name"], want["name"]) << got;
    EXPECT_EQ(got["function"]["arguments"], want["arguments"]) << got;
    EXPECT_EQ(got["output"], want["output"]) << got;
  };
  const json whole = post(client, "/v1/chat/completions", body, 200);
  const json& message = whole["choices"][0]["message"];
  EXPECT_EQ(whole["choices"][0]["finish_reason"], "stop") << whole;
  EXPECT_EQ(message["content"], "Let me compute.It is 409.") << whole;
  EXPECT_FALSE(message.contains("tool_calls")) << whole;
  ASSERT_EQ(message["server_tool_calls"].size(), 3u) << whole;
  for (size_t i = 0; i < 3; ++i) check_call(message["server_tool_calls"][i], expected_calls[i]);
  // the tool messages' tokens were decoded too: more than the model's own text
  EXPECT_GT(whole["usage"]["completion_tokens"].get<int64_t>(), 200) << whole;
  // logprobs are those of the model's own tokens, its calls' included, the tool messages' not
  json with_logprobs = body;
  with_logprobs["logprobs"] = true;
  std::string logprob_text;
  const json scored = post(client, "/v1/chat/completions", with_logprobs, 200);
  for (const json& entry : scored["choices"][0]["logprobs"]["content"]) logprob_text += entry["token"].get<std::string>();
  EXPECT_EQ(logprob_text,
            "Let me compute. <tool_call>{\"name\": \"calculator\", \"arguments\": {\"expression\": \"12*34\"}}</tool_call>"
            "<tool_call>{\"name\": \"calculator\", \"arguments\": {\"expression\": \"408+1\"}}</tool_call>"
            "<tool_call>{\"name\": \"echo\", \"arguments\": {\"x\": 1}}</tool_call>It is 409.");

  const Streamed s = stream(client, "/v1/chat/completions", body);
  EXPECT_EQ(s.status, 200);
  EXPECT_TRUE(s.done);
  std::string content, finish;
  std::vector<json> calls;
  size_t text_before_first_call = 0, text_after_last_call = 0;
  for (const json& chunk : s.chunks) {
    const json& choice = chunk["choices"][0];
    const json& delta = choice["delta"];
    EXPECT_FALSE(delta.contains("tool_calls")) << chunk;
    if (delta.contains("server_tool_calls")) {
      ASSERT_EQ(delta["server_tool_calls"].size(), 1u) << chunk;
      EXPECT_EQ(delta["server_tool_calls"][0]["index"], calls.size()) << chunk;
      calls.push_back(delta["server_tool_calls"][0]);
      text_after_last_call = content.size();
    }
    if (delta.contains("content") && delta["content"].is_string()) content += delta["content"].get<std::string>();
    if (calls.empty()) text_before_first_call = content.size();
    if (!choice["finish_reason"].is_null()) finish = choice["finish_reason"];
  }
  EXPECT_EQ(content, "Let me compute.It is 409.");
  EXPECT_EQ(finish, "stop");
  ASSERT_EQ(calls.size(), 3u);
  for (size_t i = 0; i < 3; ++i) check_call(calls[i], expected_calls[i]);
  EXPECT_EQ(content.substr(0, text_before_first_call), "Let me compute.");  // streamed before the calls ran
  EXPECT_EQ(text_after_last_call, std::string("Let me compute.").size());  // the answer after them

  // a call to the request's own tool: left to the client
  json client_tool = body;
  client_tool["tools"] = {{{"type", "function"}, {"function", {{"name", "get_time"}, {"parameters", {{"type", "object"}}}}}}};
  client_tool["grammar"] = R"(root ::= "<tool_call>{\"name\": \"get_time\", \"arguments\": {}}</tool_call>")";
  const json left = post(client, "/v1/chat/completions", client_tool, 200)["choices"][0];
  EXPECT_EQ(left["finish_reason"], "tool_calls") << left;
  EXPECT_EQ(left["message"]["tool_calls"].at(0)["function"]["name"], "get_time") << left;
  EXPECT_FALSE(left["message"].contains("server_tool_calls")) << left;
}

// A server-side tool runs off the scheduler's thread: while a --tool-command program waits (for a
// file the test creates only afterwards), another client's request is answered in full, and a
// client that leaves while its own call runs is cancelled; then the first request completes with
// the program's answer. (Were the tool run inside the decode step, the second request would wait
// on it: its client gives up after a minute, the tool after two.)
TEST_F(ServeCliTest, ASlowServerToolHoldsUpOnlyItsOwnAnswer) {
  use_golden_template("qwen2.5");
  const std::string started = path("tool-started"), go = path("tool-go"), program = path("slow-tool.sh");
  std::ofstream(program) << "#!/bin/sh\necho call >> '" << started << "'\nwhile [ ! -e '" << go
                         << "' ]; do sleep 0.02; done\nprintf released\n";
  std::filesystem::permissions(program, std::filesystem::perms::owner_all);
  const auto wait_for_calls = [&](size_t n) {  // until n calls have started (up to a minute on a busy machine)
    for (int i = 0; i < 3000 && testing::read_text(started).size() < n * 5; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    return testing::read_text(started).size() == n * 5;
  };
  ServerProcess server = serve("--context 2048 --tool-timeout 120000 --tool-command slow=" + program);
  json body = chat("Wait for it.", {{"max_tokens", 200}});
  body["grammar"] = R"(root ::= "<tool_call>{\"name\": \"slow\", \"arguments\": {}}</tool_call>" "Done.")";
  std::future<json> first = std::async(std::launch::async, [&] {
    httplib::Client client = server.client();
    return post(client, "/v1/chat/completions", body, 200);
  });
  ASSERT_TRUE(wait_for_calls(1)) << testing::read_text(path("server.log"));
  httplib::Client client = server.client();
  const json second = post(client, "/v1/chat/completions", chat("Hi", {{"max_tokens", 8}}), 200);
  EXPECT_EQ(second["usage"]["completion_tokens"], 8) << second;
  // a client gone while its call runs: its sequence is cancelled (the call ends on its own)
  {
    RawConnection leaving(server.port());
    const std::string text = body.dump();
    ASSERT_TRUE(leaving.send("POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                             "Content-Length: " + std::to_string(text.size()) + "\r\n\r\n" + text));
    ASSERT_TRUE(wait_for_calls(2));
  }
  int64_t cancelled = 0;
  for (int i = 0; i < 600 && cancelled == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    cancelled = json::parse(client.Get("/health")->body)["cancelled"].get<int64_t>();
  }
  EXPECT_EQ(cancelled, 1);
  EXPECT_EQ(first.wait_for(std::chrono::seconds(0)), std::future_status::timeout);  // still on its tool
  std::ofstream(go) << "go";
  const json answer = first.get();
  const json& message = answer["choices"][0]["message"];
  EXPECT_EQ(answer["choices"][0]["finish_reason"], "stop") << answer;
  EXPECT_EQ(message["content"], "Done.") << answer;
  ASSERT_EQ(message["server_tool_calls"].size(), 1u) << answer;
  EXPECT_EQ(message["server_tool_calls"][0]["function"]["name"], "slow") << answer;
  EXPECT_EQ(message["server_tool_calls"][0]["output"], "released") << answer;
}

}  // namespace
}  // namespace nf
