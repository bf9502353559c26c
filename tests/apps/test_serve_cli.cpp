// `nanoformer serve` end to end: the binary is started on a free loopback port (--port 0, the port
// read from its stderr) with a tiny chat model and called over HTTP. A streamed answer equals the
// non-streamed greedy one (chat and text completions); max_tokens and stop strings cut the answer
// where they should; /v1/models and /health; the API key; a full queue answers 503; a client that
// disconnects mid-stream frees its sequence; bad requests get OpenAI's error JSON with the right
// status, and the server keeps serving; a q8_0 KV cache answers as the f32 one does; a GGUF
// tokenizer with add_bos_token puts its bos before a completion prompt.
#include <httplib.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "nanoformer/io/gguf.h"
#include "nanoformer/tokenizer/gguf_tokenizer.h"
#include "nanoformer/tokenizer/tokenizer_json.h"
#include "support/cli_test.h"
#include "tiny_chat_model.h"

namespace nf {
namespace {

using json = nlohmann::json;

// `nanoformer serve` as a child process, stopped with SIGTERM at the end.
class ServerProcess {
 public:
  ServerProcess(const std::string& log, std::vector<std::string> args) {
    args.insert(args.begin(), {NF_CLI, "serve", "--port", "0"});
    pid_ = ::fork();
    if (pid_ == 0) {
      const int fd = ::creat(log.c_str(), 0644);
      ::dup2(fd, 2);
      if (::chdir(NF_SOURCE_DIR) != 0) ::_exit(127);
      std::vector<char*> argv;
      for (std::string& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    const std::string marker = "listening on http://127.0.0.1:";
    for (int i = 0; i < 600 && port_ == 0; ++i) {  // up to 60 s on a busy machine
      const std::string text = testing::read_text(log);
      if (const size_t at = text.find(marker); at != std::string::npos) port_ = std::stoi(text.substr(at + marker.size()));
      else std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    EXPECT_GT(port_, 0) << testing::read_text(log);
  }
  ~ServerProcess() {
    ::kill(pid_, SIGTERM);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the server did not stop cleanly: " << status;
  }
  httplib::Client client() const {
    httplib::Client c("127.0.0.1", port_);
    c.set_read_timeout(60);
    return c;
  }

 private:
  pid_t pid_ = -1;
  int port_ = 0;
};

json chat(const std::string& content, json extra = json::object()) {
  json body = {{"messages", {{{"role", "user"}, {"content", content}}}}, {"temperature", 0}, {"max_tokens", 16}};
  body.update(extra);
  return body;
}

struct Streamed {
  int status = 0;
  std::string text;
  std::vector<json> chunks;
  bool done = false;  // ended with data: [DONE]
};

Streamed stream(httplib::Client& client, const std::string& path, json body) {
  body["stream"] = true;
  Streamed s;
  std::string raw;
  httplib::Request req;
  req.method = "POST";
  req.path = path;
  req.body = body.dump();
  req.set_header("Content-Type", "application/json");
  req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
    raw.append(data, n);
    return true;
  };
  auto res = client.send(req);
  if (!res) return s;
  s.status = res->status;
  for (size_t at = 0; (at = raw.find("data: ", at)) != std::string::npos;) {
    const size_t end = raw.find("\n\n", at);
    const std::string data = raw.substr(at + 6, end - at - 6);
    at = end;
    if (data == "[DONE]") {
      s.done = true;
      continue;
    }
    s.chunks.push_back(json::parse(data));
    const json& choices = s.chunks.back()["choices"];
    if (choices.empty()) continue;
    if (choices[0].contains("delta") && choices[0]["delta"].contains("content"))
      s.text += choices[0]["delta"]["content"].get<std::string>();
    if (choices[0].contains("text")) s.text += choices[0]["text"].get<std::string>();
  }
  return s;
}

json post(httplib::Client& client, const std::string& path, const json& body, int expected_status) {
  auto res = client.Post(path.c_str(), body.dump(), "application/json");
  EXPECT_TRUE(res) << path;
  if (!res) return {};
  EXPECT_EQ(res->status, expected_status) << path << " " << res->body;
  return json::parse(res->body);
}

// The error shape: {"error": {"message", "type", "param", "code"}}, the message naming `needle`.
void expect_error(const json& body, const std::string& needle, const std::string& param = "") {
  ASSERT_TRUE(body.contains("error")) << body;
  const json& e = body["error"];
  EXPECT_TRUE(e.contains("message") && e.contains("type") && e.contains("param") && e.contains("code")) << body;
  EXPECT_NE(e["message"].get<std::string>().find(needle), std::string::npos) << body;
  if (!param.empty()) {
    EXPECT_EQ(e["param"], param) << body;
  }
}

class ServeCliTest : public testing::CliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    testing::save_tiny_chat_model(path("model"), /*ascii_only=*/true, /*max_seq_len=*/4096);
  }
  ServerProcess serve(const std::string& args) {
    std::vector<std::string> v{"--model", path("model/model.safetensors"), "--name", "tiny"};
    std::istringstream in(args);
    for (std::string a; in >> a;) v.push_back(a);
    return ServerProcess(path("server.log"), v);
  }
};

TEST_F(ServeCliTest, StreamedAnswersEqualTheNonStreamedOnes) {
  ServerProcess server = serve("--context 256");
  httplib::Client client = server.client();
  const json models = json::parse(client.Get("/v1/models")->body);
  EXPECT_EQ(models["data"][0]["id"], "tiny");
  EXPECT_EQ(models["data"][0]["context_length"], 256);
  EXPECT_EQ(json::parse(client.Get("/health")->body)["status"], "ok");

  const json whole = post(client, "/v1/chat/completions", chat("Hello"), 200);
  EXPECT_EQ(whole["object"], "chat.completion");
  EXPECT_EQ(whole["model"], "tiny");
  const std::string answer = whole["choices"][0]["message"]["content"];
  EXPECT_EQ(answer.size(), 16u);  // ASCII only: a byte per token, and no end token
  EXPECT_EQ(whole["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(whole["usage"]["completion_tokens"], 16);
  EXPECT_GT(whole["usage"]["prompt_tokens"].get<int>(), 5);
  EXPECT_EQ(whole["usage"]["total_tokens"], whole["usage"]["prompt_tokens"].get<int>() + 16);

  const Streamed s = stream(client, "/v1/chat/completions", chat("Hello", {{"stream_options", {{"include_usage", true}}}}));
  EXPECT_EQ(s.status, 200);
  EXPECT_EQ(s.text, answer);
  EXPECT_TRUE(s.done);
  ASSERT_GE(s.chunks.size(), 3u);
  EXPECT_EQ(s.chunks.front()["object"], "chat.completion.chunk");
  EXPECT_EQ(s.chunks.front()["choices"][0]["delta"]["role"], "assistant");
  EXPECT_EQ(s.chunks[s.chunks.size() - 2]["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(s.chunks.back()["usage"], whole["usage"]);

  const json text_body = {{"prompt", "Once upon"}, {"temperature", 0}, {"max_tokens", 12}};
  const json text = post(client, "/v1/completions", text_body, 200);
  EXPECT_EQ(text["object"], "text_completion");
  const Streamed ts = stream(client, "/v1/completions", text_body);
  EXPECT_EQ(ts.text, text["choices"][0]["text"]);
  EXPECT_EQ(ts.text.size(), 12u);
  EXPECT_TRUE(ts.done);
}

TEST_F(ServeCliTest, ACompletionPromptStartsWithBosWhenTheGGUFTokenizerSaysTo) {
  const auto tok = tokenizer::load_tokenizer_json(path("model/tokenizer.json"));
  auto metadata = tokenizer::gguf_tokenizer_metadata(tok, tok.vocab_size(), "tokenizer.json");
  for (auto& [key, value] : metadata)
    if (key == "tokenizer.ggml.add_bos_token") value = true;
  io::write_gguf(path("bos.gguf"), metadata, {});
  ServerProcess server = serve("--context 256 --tokenizer " + path("bos.gguf"));
  httplib::Client client = server.client();
  const json body = {{"prompt", "Hello"}, {"max_tokens", 1}, {"temperature", 0}};
  EXPECT_EQ(post(client, "/v1/completions", body, 200)["usage"]["prompt_tokens"].get<size_t>(),
            tok.encode("Hello").size() + 1);
}

TEST_F(ServeCliTest, MaxTokensAndStopStringsCutTheAnswer) {
  ServerProcess server = serve("");
  httplib::Client client = server.client();
  const std::string full = post(client, "/v1/chat/completions", chat("Hi", {{"max_tokens", 24}}), 200)["choices"][0]["message"]["content"];
  ASSERT_EQ(full.size(), 24u);
  const json short_answer = post(client, "/v1/chat/completions", chat("Hi", {{"max_tokens", 5}}), 200);
  EXPECT_EQ(short_answer["choices"][0]["message"]["content"], full.substr(0, 5));
  EXPECT_EQ(short_answer["usage"]["completion_tokens"], 5);
  // a stop string from the middle of the answer: the answer ends before it, finish_reason stop
  const std::string stop = full.substr(10, 3);
  const size_t at = full.find(stop);
  for (const bool streamed : {false, true}) {
    const json body = chat("Hi", {{"max_tokens", 24}, {"stop", json::array({"\x01\x02 never", stop})}});
    std::string text, reason;
    if (streamed) {
      const Streamed s = stream(client, "/v1/chat/completions", body);
      text = s.text;
      reason = s.chunks[s.chunks.size() - 1]["choices"][0]["finish_reason"];
    } else {
      const json r = post(client, "/v1/chat/completions", body, 200);
      text = r["choices"][0]["message"]["content"];
      reason = r["choices"][0]["finish_reason"];
    }
    EXPECT_EQ(text, full.substr(0, at)) << "streamed " << streamed;
    EXPECT_EQ(reason, "stop") << "streamed " << streamed;
  }
}

// A model whose vocabulary (320) is padded beyond its tokenizer's (259), the padded ids' logits the
// largest: sampled and greedy answers never draw a padded id, so the server answers 200, not 500.
TEST_F(ServeCliTest, APaddedVocabularyIsNeverSampledBeyondTheTokenizer) {
  testing::save_tiny_chat_model(path("padded"), /*ascii_only=*/false, /*max_seq_len=*/256, /*padded_vocab=*/320);
  ServerProcess server(path("padded.log"), {"--model", path("padded/model.safetensors")});
  httplib::Client client = server.client();
  for (const json& sampling : {json{{"temperature", 0}}, json{{"temperature", 1.0}, {"seed", 7}},
                               json{{"temperature", 1.5}, {"top_k", 400}, {"seed", 8}}}) {
    json text_body = {{"prompt", "Once upon"}, {"max_tokens", 48}};
    text_body.update(sampling);
    const json text = post(client, "/v1/completions", text_body, 200);
    EXPECT_GT(text["usage"]["completion_tokens"].get<int>(), 0) << text;
    EXPECT_TRUE(stream(client, "/v1/completions", text_body).done) << sampling;
    const json answer = post(client, "/v1/chat/completions", chat("Hello", sampling), 200);
    EXPECT_TRUE(answer["choices"][0]["message"].contains("content")) << answer;
  }
}

// --cache-type q8_0 (a model of head_dim 32: one q8_0 block per row) answers a greedy request with
// what the f32 cache answers; a bad cache type is one line before the model loads.
TEST_F(ServeCliTest, AQ8_0CacheAnswersAsTheF32CacheDoes) {
  testing::save_tiny_chat_model(path("wide"), /*ascii_only=*/true, /*max_seq_len=*/256, 0, /*head_dim=*/32);
  std::vector<json> answers;
  for (const std::string type : {"f32", "q8_0"}) {
    ServerProcess server(path(type + ".log"), {"--model", path("wide/model.safetensors"), "--cache-type", type});
    httplib::Client client = server.client();
    answers.push_back(post(client, "/v1/chat/completions", chat("Hello there", {{"max_tokens", 24}}), 200));
    EXPECT_NE(testing::read_text(path(type + ".log")).find("KV cache " + type), std::string::npos) << type;
  }
  EXPECT_EQ(answers[1]["choices"][0]["message"]["content"], answers[0]["choices"][0]["message"]["content"]);
  const auto bad = cli("serve --model '" + path("none/model.safetensors") + "' --cache-type q4 --port 0");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("--cache-type: 'q4' is not a KV cache type"), std::string::npos) << bad.err;
}

TEST_F(ServeCliTest, TheApiKeyIsRequired) {
  ServerProcess server = serve("--api-key s3cret");
  httplib::Client client = server.client();
  expect_error(post(client, "/v1/chat/completions", chat("Hi"), 401), "API key");
  auto models = client.Get("/v1/models");
  EXPECT_EQ(models->status, 401);
  EXPECT_EQ(client.Get("/health")->status, 200);  // open: health checks and the page
  EXPECT_EQ(client.Get("/")->status, 200);
  client.set_bearer_token_auth("wrong");
  EXPECT_EQ(client.Get("/v1/models")->status, 401);
  client.set_bearer_token_auth("s3cret");
  EXPECT_EQ(client.Get("/v1/models")->status, 200);
  EXPECT_EQ(post(client, "/v1/chat/completions", chat("Hi"), 200)["object"], "chat.completion");
}

TEST_F(ServeCliTest, BadRequestsGetOpenAIErrorsAndTheServerKeepsServing) {
  ServerProcess server = serve("--context 64 --max-body 4096");
  httplib::Client client = server.client();
  auto raw = [&](const std::string& path, const std::string& body, int status) {
    auto res = client.Post(path.c_str(), body, "application/json");
    EXPECT_TRUE(res);
    if (!res) return json();
    EXPECT_EQ(res->status, status) << body.substr(0, 80) << " -> " << res->body;
    return json::parse(res->body);
  };
  expect_error(raw("/v1/chat/completions", "{\"messages\": [", 400), "not valid JSON");
  expect_error(raw("/v1/chat/completions", "[1, 2]", 400), "JSON object");
  expect_error(post(client, "/v1/chat/completions", chat("Hi", {{"temperature", "hot"}}), 400), "number", "temperature");
  expect_error(post(client, "/v1/chat/completions", chat("Hi", {{"max_tokens", 0}}), 400), "at least 1", "max_tokens");
  expect_error(post(client, "/v1/chat/completions", {{"messages", {{{"role", "wizard"}, {"content", "x"}}}}}, 400),
               "\"wizard\"", "messages[0].role");
  expect_error(post(client, "/v1/chat/completions", {{"messages", "hello"}}, 400), "non-empty array", "messages");
  expect_error(post(client, "/v1/completions", {{"prompt", 7}}, 400), "string", "prompt");
  const json too_long = post(client, "/v1/completions", {{"prompt", std::string(100, 'a')}}, 400);
  expect_error(too_long, "the prompt is 100 tokens, but the context holds 64", "prompt");
  EXPECT_EQ(too_long["error"]["code"], "context_length_exceeded");
  expect_error(raw("/v1/completions", json({{"prompt", std::string(5000, 'a')}}).dump(), 413), "over the limit of 4096");
  auto missing = client.Get("/v1/engines");
  EXPECT_EQ(missing->status, 404);
  expect_error(json::parse(missing->body), "no such endpoint");
  EXPECT_EQ(post(client, "/v1/completions", {{"prompt", "still"}, {"max_tokens", 3}}, 200)["usage"]["completion_tokens"], 3);
}

TEST_F(ServeCliTest, AFullQueueAnswers503AndADisconnectFreesTheSequence) {
  ServerProcess server = serve("--parallel 1 --queue 0");
  httplib::Client client = server.client(), other = server.client();
  // a long answer (4000 tokens, no end token); while it streams, the one slot is taken
  json long_body = chat("Hello", {{"max_tokens", 4000}, {"stream", true}});
  int chunks = 0, busy_status = 0;
  json busy;
  httplib::Request req;
  req.method = "POST";
  req.path = "/v1/chat/completions";
  req.body = long_body.dump();
  req.set_header("Content-Type", "application/json");
  req.content_receiver = [&](const char*, size_t, uint64_t, uint64_t) {
    if (++chunks == 2) {  // running: a second request finds no slot and no queue
      auto res = other.Post("/v1/chat/completions", chat("Hi").dump(), "application/json");
      busy_status = res ? res->status : -1;
      if (res) busy = json::parse(res->body);
    }
    return chunks < 3;  // then hang up mid-stream
  };
  client.send(req);
  EXPECT_EQ(busy_status, 503);
  expect_error(busy, "queue is full");
  // the disconnect frees the slot: the sequence is cancelled, not completed
  json health;
  for (int i = 0; i < 100; ++i) {
    health = json::parse(other.Get("/health")->body);
    if (health["running"] == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(health["running"], 0) << health;
  EXPECT_EQ(health["cancelled"], 1) << health;
  EXPECT_EQ(health["completed"], 0) << health;
  EXPECT_EQ(post(other, "/v1/chat/completions", chat("Hi", {{"max_tokens", 4}}), 200)["usage"]["completion_tokens"], 4);
}

}  // namespace
}  // namespace nf
