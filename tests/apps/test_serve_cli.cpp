// `nanoformer serve` end to end: the binary is started on a free loopback port (--port 0, the port
// read from its stderr) with a tiny chat model and called over HTTP. A streamed answer equals the
// non-streamed greedy one (chat and text completions); max_tokens and stop strings cut the answer
// where they should; /v1/models and /health; the API key; a full queue answers 503; a client that
// disconnects mid-stream frees its sequence; bad requests get OpenAI's error JSON with the right
// status, and the server keeps serving; a q8_0 KV cache answers as the f32 one does; a GGUF
// tokenizer with add_bos_token puts its bos before a completion prompt. What a slow or hostile
// client tries, over raw sockets: a request trickled byte by byte (408 at its deadline), more
// connections than the cap (503 at once), a chunked body of 100 MiB (413, the server's memory flat),
// a negative or absurd Content-Length (answered at once), a non-streamed client that leaves.
// n choices: each equals the request with its seed (seed + i) alone, streamed or not.
// /v1/embeddings: a sentence-transformers folder (an encoder: embeddings only) answers what
// sentence-transformers computes, as floats and as base64; a decoder embeds beside its completions.
#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <thread>
#include <tuple>

#include "nanoformer/formats/model_io.h"
#include "nanoformer/io/gguf.h"
#include "nanoformer/io/safetensors.h"
#include "nanoformer/tokenizer/gguf_tokenizer.h"
#include "nanoformer/tokenizer/hf_chat_template.h"
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
  int port() const { return port_; }
  // The server's memory from /proc/PID/status, in bytes: "VmRSS" resident now, "VmHWM" its peak.
  int64_t memory_bytes(const std::string& field) const {
    std::ifstream in("/proc/" + std::to_string(pid_) + "/status");
    for (std::string line; std::getline(in, line);)
      if (line.rfind(field + ":", 0) == 0) return std::stoll(line.substr(field.size() + 1)) * 1024;
    return -1;
  }

 private:
  pid_t pid_ = -1;
  int port_ = 0;
};

// A raw TCP connection to the server, for what httplib::Client does not send: a request trickled
// byte by byte, a chunked body, a bad Content-Length, a connection held open and idle.
class RawConnection {
 public:
  explicit RawConnection(int port) : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0) << std::strerror(errno);
    const timeval send_limit{.tv_sec = 60, .tv_usec = 0};  // a server that stops reading cannot hang the test
    ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &send_limit, sizeof(send_limit));
  }
  ~RawConnection() { close(); }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  // False once the server has closed the connection (or stopped reading for a minute).
  bool send(const std::string& data) {
    for (size_t at = 0; at < data.size();) {
      const ssize_t n = ::send(fd_, data.data() + at, data.size() - at, MSG_NOSIGNAL);
      if (n <= 0) return false;
      at += static_cast<size_t>(n);
    }
    return true;
  }
  // Whether the server has sent something (or closed) within `wait`.
  bool answered(std::chrono::milliseconds wait) {
    pollfd p{.fd = fd_, .events = POLLIN, .revents = 0};
    return ::poll(&p, 1, static_cast<int>(wait.count())) > 0;
  }
  // What the server sends until it closes the connection, or until `limit`.
  std::string receive_all(std::chrono::seconds limit = std::chrono::seconds(30)) {
    std::string all;
    const auto deadline = std::chrono::steady_clock::now() + limit;
    char buffer[4096];
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0 || !answered(left)) break;
      const ssize_t n = ::recv(fd_, buffer, sizeof(buffer), 0);
      if (n <= 0) break;
      all.append(buffer, static_cast<size_t>(n));
    }
    return all;
  }

 private:
  int fd_;
};

// The status of a raw HTTP response ("HTTP/1.1 413 ..."), 0 when there is none.
int status_of(const std::string& response) {
  return response.rfind("HTTP/1.1 ", 0) == 0 ? std::atoi(response.c_str() + 9) : 0;
}

// The JSON body of a raw HTTP response.
json body_of(const std::string& response) {
  const size_t at = response.find("\r\n\r\n");
  return at == std::string::npos ? json() : json::parse(response.substr(at + 4), nullptr, false);
}

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
  // Gives the model folder the Jinja chat template (and its special tokens) of the golden file's
  // template `name` (tests/data/tokenizer/hf_chat_templates.json); returns that entry.
  json use_golden_template(const std::string& name) {
    const json golden = json::parse(tokenizer::read_file(std::string(NF_TEST_DATA_DIR) + "/tokenizer/hf_chat_templates.json"));
    for (const json& entry : golden.at("templates"))
      if (entry.at("name") == name) {
        json config = entry.at("special_tokens");
        config["chat_template"] = entry.at("template");
        std::ofstream(path("model/tokenizer_config.json")) << config.dump();
        return entry;
      }
    ADD_FAILURE() << "no template " << name << " in hf_chat_templates.json";
    return json();
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

// response_format json_schema and the grammar field, over HTTP: chat and text, plain and streamed,
// seeded sampling; every answer is a sentence of the grammar and ends with finish_reason stop.
TEST_F(ServeCliTest, StructuredOutputFollowsTheSchemaAndTheGrammar) {
  ServerProcess server = serve("--context 512");
  httplib::Client client = server.client();
  const json schema = {{"type", "object"},
                       {"properties", {{"n", {{"type", "integer"}}}, {"ok", {{"type", "boolean"}}},
                                       {"tag", {{"enum", {"a", "b"}}}}}},
                       {"required", {"n", "ok", "tag"}},
                       {"additionalProperties", false}};
  const json format = {{"type", "json_schema"}, {"json_schema", {{"name", "t"}, {"schema", schema}, {"strict", true}}}};
  for (int seed = 0; seed < 4; ++seed) {
    const json sampling = {{"temperature", 1.0}, {"seed", seed}, {"max_tokens", 300}, {"response_format", format}};
    const json whole = post(client, "/v1/chat/completions", chat("Hi", sampling), 200);
    json text_body = sampling;
    text_body["prompt"] = "JSON:";
    const Streamed streamed = stream(client, "/v1/completions", text_body);
    for (const auto& [answer, finish] : {std::pair{whole["choices"][0]["message"]["content"].get<std::string>(),
                                                   whole["choices"][0]["finish_reason"]},
                                         std::pair{streamed.text, streamed.chunks.back()["choices"][0]["finish_reason"]}}) {
      const json parsed = json::parse(answer, nullptr, false);
      ASSERT_TRUE(parsed.is_object()) << answer;
      EXPECT_TRUE(parsed["n"].is_number_integer() && parsed["ok"].is_boolean() && (parsed["tag"] == "a" || parsed["tag"] == "b") &&
                  parsed.size() == 3)
          << answer;
      EXPECT_EQ(finish, "stop") << answer;
    }
  }
  const json grammar = {{"prompt", "Well?"}, {"grammar", "root ::= \"yes\" | \"no\" | \"maybe \" [0-9]{1,2}"},
                        {"temperature", 1.0}, {"seed", 5}};
  const std::string text = post(client, "/v1/completions", grammar, 200)["choices"][0]["text"];
  EXPECT_TRUE(text == "yes" || text == "no" || (text.rfind("maybe ", 0) == 0 && text.size() >= 7 && text.size() <= 8)) << text;
  EXPECT_EQ(stream(client, "/v1/completions", grammar).text, text);
  expect_error(post(client, "/v1/chat/completions", chat("Hi", {{"grammar", "root ::= x"}}), 400),
               "the rule 'x' is used but never defined", "grammar");
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

// A folder whose tokenizer_config.json has a Jinja chat_template serves chats in it (SmolLM2's,
// whose default system message makes the prompt longer than ChatML's).
TEST_F(ServeCliTest, AChatIsRenderedByTheFoldersJinjaTemplate) {
  const json smol = use_golden_template("smollm2");
  ServerProcess server = serve("--context 256");
  httplib::Client client = server.client();
  const auto tok = tokenizer::load_tokenizer(path("model/tokenizer.json"));
  const tokenizer::HfChatTemplate smol_template("smollm2", smol.at("template").get<std::string>(), {}, *tok);
  const size_t prompt = smol_template.render_for_completion(std::vector<tokenizer::ChatMessage>{{"user", "Hello"}}).size();
  EXPECT_EQ(post(client, "/v1/chat/completions", chat("Hello"), 200)["usage"]["prompt_tokens"].get<size_t>(), prompt);
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

// --cache-type q8_0 and q4_0 (a model of head_dim 32: one block per row) answer a greedy request
// with what the f32 cache answers; a bad cache type is one line before the model loads.
TEST_F(ServeCliTest, Q8_0AndQ4_0CachesAnswerAsTheF32CacheDoes) {
  testing::save_tiny_chat_model(path("wide"), /*ascii_only=*/true, /*max_seq_len=*/256, 0, /*head_dim=*/32);
  std::vector<json> answers;
  for (const std::string type : {"f32", "q8_0", "q4_0"}) {
    ServerProcess server(path(type + ".log"), {"--model", path("wide/model.safetensors"), "--cache-type", type});
    httplib::Client client = server.client();
    answers.push_back(post(client, "/v1/chat/completions", chat("Hello there", {{"max_tokens", 24}}), 200));
    EXPECT_NE(testing::read_text(path(type + ".log")).find("KV cache " + type), std::string::npos) << type;
  }
  EXPECT_EQ(answers[1]["choices"][0]["message"]["content"], answers[0]["choices"][0]["message"]["content"]);
  EXPECT_EQ(answers[2]["choices"][0]["message"]["content"], answers[0]["choices"][0]["message"]["content"]);
  const auto bad = cli("serve --model '" + path("none/model.safetensors") + "' --cache-type q4 --port 0");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("--cache-type: 'q4' is not a KV cache type"), std::string::npos) << bad.err;
}

// llama-server's per-request speculative fields turn prompt lookup on: the same answers (greedy,
// and sampled with a seed), the drafts counted in /metrics.
TEST_F(ServeCliTest, PromptLookupAnswersAsPlainDecodingDoes) {
  testing::save_tiny_chat_model(path("m"), /*ascii_only=*/true, /*max_seq_len=*/256);
  ServerProcess server(path("serve.log"), {"--model", path("m/model.safetensors")});
  httplib::Client client = server.client();
  const json lookup = {{"speculative.ngram_size_n", 2}, {"speculative.n_max", 4}, {"max_tokens", 48}};
  for (const json& sampling : {json{{"temperature", 0}}, json{{"temperature", 0.8}, {"seed", 5}}}) {
    json plain_body = chat("Hello there, hello there, hello there", {{"max_tokens", 48}}), spec_body = plain_body;
    plain_body.update(sampling), spec_body.update(sampling), spec_body.update(lookup);
    const json plain = post(client, "/v1/chat/completions", plain_body, 200);
    const json spec = post(client, "/v1/chat/completions", spec_body, 200);
    EXPECT_EQ(spec["choices"][0]["message"]["content"], plain["choices"][0]["message"]["content"]) << sampling.dump();
    EXPECT_EQ(spec["usage"]["completion_tokens"], plain["usage"]["completion_tokens"]);
  }
  const std::string metrics = client.Get("/metrics")->body;
  const auto at = metrics.find("\nnanoformer_draft_tokens_total ");
  ASSERT_NE(at, std::string::npos) << metrics;
  EXPECT_GT(std::stod(metrics.substr(at + 31)), 0) << metrics.substr(at, 60);
}

TEST_F(ServeCliTest, TheApiKeyIsRequired) {
  ServerProcess server = serve("--api-key s3cret");
  httplib::Client client = server.client();
  expect_error(post(client, "/v1/chat/completions", chat("Hi"), 401), "API key");
  auto models = client.Get("/v1/models");
  EXPECT_EQ(models->status, 401);
  EXPECT_EQ(client.Get("/metrics")->status, 401);
  EXPECT_EQ(client.Get("/health")->status, 200);  // open: health checks and the page
  EXPECT_EQ(client.Get("/")->status, 200);
  client.set_bearer_token_auth("wrong");
  EXPECT_EQ(client.Get("/v1/models")->status, 401);
  client.set_bearer_token_auth("s3cret");
  EXPECT_EQ(client.Get("/v1/models")->status, 200);
  EXPECT_EQ(post(client, "/v1/chat/completions", chat("Hi"), 200)["object"], "chat.completion");
  // the scheme is case-insensitive (RFC 7235); the key is not
  for (const auto& [header, status] : {std::pair{"bearer s3cret", 200}, std::pair{"BEARER  s3cret", 200},
                                       std::pair{"Basic s3cret", 401}, std::pair{"bearer S3CRET", 401},
                                       std::pair{"bearers3cret", 401}}) {
    httplib::Client plain = server.client();
    EXPECT_EQ(plain.Get("/v1/models", {{"Authorization", header}})->status, status) << header;
  }
}

// logprobs: one entry per token of the answer, whose tokens spell it (an end token and a stop
// string's tokens are not in it), each with its top_logprobs most likely first; greedy picks the
// first of them; streamed chunks carry the same entries as the whole answer.
TEST_F(ServeCliTest, LogprobsComeWithEachTokenOfTheAnswer) {
  ServerProcess server = serve("--context 256");
  httplib::Client client = server.client();
  EXPECT_TRUE(post(client, "/v1/chat/completions", chat("Hello"), 200)["choices"][0]["logprobs"].is_null());
  const json asked = chat("Hello", {{"logprobs", true}, {"top_logprobs", 3}});
  const json whole = post(client, "/v1/chat/completions", asked, 200);
  const std::string content = whole["choices"][0]["message"]["content"];
  const json entries = whole["choices"][0]["logprobs"]["content"];
  ASSERT_EQ(entries.size(), 16u) << whole;
  std::string spelled;
  for (const json& e : entries) {
    spelled += e["token"].get<std::string>();
    EXPECT_LE(e["logprob"].get<double>(), 0.0);
    ASSERT_EQ(e["top_logprobs"].size(), 3u);
    EXPECT_EQ(e["top_logprobs"][0]["token"], e["token"]);  // greedy: the most likely
    EXPECT_EQ(e["top_logprobs"][0]["logprob"], e["logprob"]);
    EXPECT_GE(e["top_logprobs"][0]["logprob"].get<double>(), e["top_logprobs"][1]["logprob"].get<double>());
    EXPECT_GE(e["top_logprobs"][1]["logprob"].get<double>(), e["top_logprobs"][2]["logprob"].get<double>());
  }
  EXPECT_EQ(spelled, content);

  const Streamed s = stream(client, "/v1/chat/completions", asked);
  json streamed = json::array();
  for (const json& chunk : s.chunks)
    if (!chunk["choices"].empty() && chunk["choices"][0]["logprobs"].is_object())
      for (const json& e : chunk["choices"][0]["logprobs"]["content"]) streamed.push_back(e);
  EXPECT_EQ(streamed, entries);

  // a stop string from the middle: the entries spell the answer, which ends before it
  json cut_body = asked;
  cut_body["stop"] = content.substr(6, 3);
  const json cut = post(client, "/v1/chat/completions", cut_body, 200);
  std::string cut_spelled;
  for (const json& e : cut["choices"][0]["logprobs"]["content"]) cut_spelled += e["token"].get<std::string>();
  EXPECT_EQ(cut_spelled, cut["choices"][0]["message"]["content"]);
  EXPECT_EQ(cut_spelled, content.substr(0, content.find(content.substr(6, 3))));

  // text completions: the legacy columns
  const json text = post(client, "/v1/completions", {{"prompt", "Once upon"}, {"temperature", 0}, {"max_tokens", 8}, {"logprobs", 2}}, 200);
  const json& columns = text["choices"][0]["logprobs"];
  ASSERT_EQ(columns["tokens"].size(), 8u) << text;
  std::string joined;
  for (size_t i = 0; i < 8; ++i) {
    EXPECT_EQ(columns["text_offset"][i], joined.size());
    joined += columns["tokens"][i].get<std::string>();
    EXPECT_EQ(columns["top_logprobs"][i][columns["tokens"][i].get<std::string>()], columns["token_logprobs"][i]);
  }
  EXPECT_EQ(joined, text["choices"][0]["text"]);
}

// GET /metrics in Prometheus's text format: every line a sample with its HELP and TYPE, requests
// counted by endpoint and status, tokens equal to the answers' usage, the time-to-first-token
// histogram's buckets cumulative and its count one per sequence, the queue and slots idle after.
TEST_F(ServeCliTest, MetricsCountRequestsTokensAndTheTimeToFirstToken) {
  ServerProcess server = serve("--context 256 --parallel 3");
  httplib::Client client = server.client();
  const json chat_answer = post(client, "/v1/chat/completions", chat("Hello"), 200);
  const Streamed text = stream(client, "/v1/completions",
                               {{"prompt", "Once upon"}, {"temperature", 0}, {"max_tokens", 7}, {"stream_options", {{"include_usage", true}}}});
  ASSERT_EQ(text.status, 200);
  EXPECT_EQ(client.Get("/v1/models/other")->status, 404);
  EXPECT_EQ(client.Get("/nowhere")->status, 404);

  // a request is counted once its answer is written, which the client may see first: wait for
  // every one of them (on a loaded machine the 404s were once not counted yet)
  const auto all_counted = [](const std::string& body) {
    for (const char* line : {"endpoint=\"/v1/completions\",code=\"200\"", "endpoint=\"/v1/models/{id}\",code=\"404\"",
                             "endpoint=\"other\",code=\"404\""})
      if (body.find(line) == std::string::npos) return false;
    return true;
  };
  httplib::Result res = client.Get("/metrics");
  for (int i = 0; i < 100 && res && !all_counted(res->body); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    res = client.Get("/metrics");
  }
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->get_header_value("Content-Type").rfind("text/plain; version=0.0.4", 0), 0u) << res->get_header_value("Content-Type");
  std::map<std::string, double> sample;  // "name{labels}" -> value
  std::set<std::string> described, typed;
  std::istringstream lines(res->body);
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (std::regex_match(line, m, std::regex(R"(# HELP ([a-z_]+) .+)"))) described.insert(m[1]);
    else if (std::regex_match(line, m, std::regex(R"(# TYPE ([a-z_]+) (counter|gauge|histogram))"))) typed.insert(m[1]);
    else if (std::regex_match(line, m, std::regex(R"(([a-z_]+)(\{(?:[^"}]|"(?:[^"\\]|\\.)*")*\})? (\S+))"))) {
      const std::string name = m[1];
      const std::string family = std::regex_replace(name, std::regex("_(bucket|sum|count)$"), "");
      EXPECT_TRUE(typed.count(name) || typed.count(family)) << "no TYPE before " << line;
      sample[name + m[2].str()] = std::stod(m[3]);
    } else {
      ADD_FAILURE() << "not a line of the text format: '" << line << "'";
    }
  }
  EXPECT_EQ(described, typed);
  EXPECT_EQ(sample["nanoformer_info{model=\"tiny\"}"], 1);
  EXPECT_EQ(sample["nanoformer_requests_total{endpoint=\"/v1/chat/completions\",code=\"200\"}"], 1);
  EXPECT_EQ(sample["nanoformer_requests_total{endpoint=\"/v1/completions\",code=\"200\"}"], 1);
  EXPECT_EQ(sample["nanoformer_requests_total{endpoint=\"/v1/models/{id}\",code=\"404\"}"], 1);
  EXPECT_EQ(sample["nanoformer_requests_total{endpoint=\"other\",code=\"404\"}"], 1);
  const json& text_usage = text.chunks.back()["usage"];
  EXPECT_EQ(sample["nanoformer_prompt_tokens_total"],
            chat_answer["usage"]["prompt_tokens"].get<int>() + text_usage["prompt_tokens"].get<int>());
  EXPECT_EQ(sample["nanoformer_generated_tokens_total"], 16 + 7);
  EXPECT_EQ(text_usage["completion_tokens"], 7);
  EXPECT_EQ(sample["nanoformer_decoded_rows_total"], 16 + 7 - 2);  // the first token of each comes from its prefill
  EXPECT_GT(sample["nanoformer_decode_seconds_total"], 0);
  for (const char* drafts : {"nanoformer_draft_tokens_total", "nanoformer_draft_tokens_accepted_total"})
    EXPECT_EQ(sample.count(drafts), 1u) << drafts;  // 0: neither request asked for speculative decoding
  EXPECT_GT(sample["nanoformer_prefill_seconds_total"], 0);
  EXPECT_GT(sample["nanoformer_prefill_step_seconds_max"], 0);
  EXPECT_LE(sample["nanoformer_prefill_step_seconds_max"], sample["nanoformer_prefill_seconds_total"]);
  EXPECT_GT(sample["nanoformer_decode_tokens_per_second"], 0);
  EXPECT_EQ(sample["nanoformer_sequences_completed_total"], 2);
  EXPECT_EQ(sample["nanoformer_queue_depth"], 0);
  EXPECT_EQ(sample["nanoformer_slots_busy"], 0);
  EXPECT_EQ(sample["nanoformer_slots"], 3);
  EXPECT_GT(sample["nanoformer_tensor_bytes"], 0);  // the model's weights at least
  EXPECT_GE(sample["nanoformer_tensor_bytes_peak"], sample["nanoformer_tensor_bytes"]);
  EXPECT_EQ(sample["nanoformer_time_to_first_token_seconds_count"], 2);
  EXPECT_EQ(sample["nanoformer_time_to_first_token_seconds_bucket{le=\"+Inf\"}"], 2);
  EXPECT_GT(sample["nanoformer_time_to_first_token_seconds_sum"], 0);
  double previous = 0;
  for (const char* le : {"0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1", "2.5", "5", "10", "+Inf"}) {
    const std::string key = std::string("nanoformer_time_to_first_token_seconds_bucket{le=\"") + le + "\"}";
    ASSERT_TRUE(sample.count(key)) << key << "\n" << res->body;
    EXPECT_GE(sample[key], previous) << key;
    previous = sample[key];
  }
}

// /v1/models/{id} answers the model served and 404 model_not_found for any other; a request naming
// another model is refused the same way (as OpenAI and vLLM do), one naming none is served.
TEST_F(ServeCliTest, OnlyTheModelServedIsFoundByItsName) {
  ServerProcess server = serve("");
  httplib::Client client = server.client();
  auto found = client.Get("/v1/models/tiny");
  ASSERT_TRUE(found);
  EXPECT_EQ(found->status, 200) << found->body;
  EXPECT_EQ(json::parse(found->body)["id"], "tiny");
  EXPECT_EQ(json::parse(found->body)["object"], "model");
  auto missing = client.Get("/v1/models/gpt-4o");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404) << missing->body;
  expect_error(json::parse(missing->body), "the model 'gpt-4o' does not exist: this server serves 'tiny'", "model");
  EXPECT_EQ(json::parse(missing->body)["error"]["code"], "model_not_found");

  json refused = post(client, "/v1/chat/completions", chat("Hi", {{"model", "gpt-4o"}}), 404);
  expect_error(refused, "the model 'gpt-4o' does not exist", "model");
  EXPECT_EQ(refused["error"]["code"], "model_not_found");
  EXPECT_EQ(post(client, "/v1/completions", {{"prompt", "Hi"}, {"model", "other"}}, 404)["error"]["code"], "model_not_found");
  EXPECT_EQ(post(client, "/v1/chat/completions", chat("Hi", {{"model", "tiny"}}), 200)["model"], "tiny");
  EXPECT_EQ(post(client, "/v1/chat/completions", chat("Hi"), 200)["model"], "tiny");
}

// A client that sends its request a byte every 250 ms, faster than any per-recv timeout, is still
// answered 408 and dropped once the request's deadline (--timeout 2) passes; others are served.
TEST_F(ServeCliTest, ARequestTrickledByteByByteIsDroppedAtItsDeadline) {
  ServerProcess server = serve("--timeout 2");
  RawConnection slow(server.port());
  const auto start = std::chrono::steady_clock::now();
  const std::string request = "POST /v1/completions HTTP/1.1\r\nHost: x\r\nX-Slow: " + std::string(200, 'a');
  bool answered = false;
  for (size_t i = 0; i < request.size() && !answered; ++i)  // up to 50 s
    answered = !slow.send(request.substr(i, 1)) || slow.answered(std::chrono::milliseconds(250));
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(answered) << "the trickling client was never dropped";
  EXPECT_GE(elapsed, 1.5);  // not before its deadline
  const std::string response = slow.receive_all();
  EXPECT_EQ(status_of(response), 408) << response;
  expect_error(body_of(response), "did not arrive within 2 s (--timeout)");
  httplib::Client client = server.client();
  EXPECT_EQ(client.Get("/health")->status, 200);
}

// --max-connections 3: three idle connections take every place; a fourth gets 503 at once (not
// after the others' 60 s timeout); when one leaves, its place serves again. The listen backlog is
// the cap (httplib's own is 5).
TEST_F(ServeCliTest, AConnectionBeyondTheCapGets503AtOnce) {
  ServerProcess server = serve("--max-connections 3 --timeout 60");
  std::vector<std::unique_ptr<RawConnection>> idle;
  for (int i = 0; i < 3; ++i) idle.push_back(std::make_unique<RawConnection>(server.port()));
  RawConnection extra(server.port());
  ASSERT_TRUE(extra.send("GET /health HTTP/1.1\r\nHost: x\r\n\r\n"));
  const std::string refused = extra.receive_all();  // closed at once: within the 30 s this waits
  EXPECT_EQ(status_of(refused), 503) << refused;
  expect_error(body_of(refused), "most connections (3, --max-connections)");
  EXPECT_EQ(body_of(refused)["error"]["code"], "too_many_connections");
  // a refused client still sending (its head, then its body, as Python's http.client does) is not
  // reset: it sends both and reads the 503
  RawConnection late(server.port());
  const std::string body = chat("Hi").dump();
  EXPECT_TRUE(late.send("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: " +
                        std::to_string(body.size()) + "\r\n\r\n"));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_TRUE(late.send(body)) << "reset before it could read its answer";
  EXPECT_EQ(status_of(late.receive_all()), 503);

  idle.front()->close();
  httplib::Client client = server.client();
  int status = 0;
  for (int i = 0; i < 300 && status != 200; ++i) {  // the server sees the close within its next poll
    auto res = client.Get("/health");
    status = res ? res->status : -1;
    if (status != 200) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(status, 200);

  // `ss -Hltn sport = :PORT`: "LISTEN 0 BACKLOG 127.0.0.1:PORT ..."
  const std::string command = "ss -Hltn 'sport = :" + std::to_string(server.port()) + "' 2>/dev/null";
  std::string listing;
  if (FILE* ss = ::popen(command.c_str(), "r")) {
    char line[512];
    while (std::fgets(line, sizeof(line), ss)) listing += line;
    ::pclose(ss);
  }
  std::istringstream fields(listing);
  std::string state, received, backlog;
  fields >> state >> received >> backlog;
  EXPECT_EQ(backlog, "3") << listing;
}

// A chunked body of 100 MiB to a server taking 1 MiB is answered 413 once 1 MiB has passed, without
// the rest being read, and the server's memory, now or at its peak, does not grow with it (httplib
// 0.11 read it whole, and answered 400 after parsing it as JSON).
TEST_F(ServeCliTest, AChunkedBodyOverTheLimitGets413WithoutBeingRead) {
  ServerProcess server = serve("--max-body 1048576 --timeout 120");
  httplib::Client client = server.client();
  ASSERT_EQ(client.Get("/health")->status, 200);  // the connection thread exists before measuring
  const int64_t rss_before = server.memory_bytes("VmRSS"), peak_before = server.memory_bytes("VmHWM");
  RawConnection upload(server.port());
  ASSERT_TRUE(upload.send("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                          "Transfer-Encoding: chunked\r\n\r\n"));
  const std::string chunk = "10000\r\n" + std::string(1 << 16, 'a') + "\r\n";  // 64 KiB
  int64_t sent = 0;
  while (sent < (int64_t{100} << 20) && !upload.answered(std::chrono::milliseconds(0)) && upload.send(chunk))
    sent += 1 << 16;
  const std::string response = upload.receive_all();
  EXPECT_EQ(status_of(response), 413) << response.substr(0, 200);
  expect_error(body_of(response), "over the limit of 1048576");
  EXPECT_LT(sent, int64_t{100} << 20) << "the whole body was read";
  const int64_t rss_after = server.memory_bytes("VmRSS"), peak_after = server.memory_bytes("VmHWM");
  EXPECT_LT(rss_after - rss_before, int64_t{10} << 20) << rss_before << " -> " << rss_after;
  EXPECT_LT(peak_after - peak_before, int64_t{10} << 20) << "peak " << peak_before << " -> " << peak_after;
  EXPECT_EQ(client.Get("/health")->status, 200);
}

// A Content-Length that is negative, not a number or absurd is answered at once (400 or 413), not
// after waiting for a body that never comes (httplib 0.11 read -1 as 2^64 - 1 bytes to skip).
TEST_F(ServeCliTest, ANegativeOrAbsurdContentLengthIsAnsweredAtOnce) {
  ServerProcess server = serve("--max-body 4096 --timeout 120");
  for (const auto& [length, status, message] :
       {std::tuple{"-1", 400, "one non-negative decimal integer"}, std::tuple{"12abc", 400, "got '12abc'"},
        std::tuple{"99999999999999999999999999", 413, "over the limit of 4096"},
        std::tuple{"4097", 413, "over the limit of 4096"}}) {
    RawConnection c(server.port());
    ASSERT_TRUE(c.send(std::string("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: ") + length +
                       "\r\n\r\n"));
    const std::string response = c.receive_all();  // within 30 s, the server's timeout being 120 s
    EXPECT_EQ(status_of(response), status) << length << ": " << response;
    expect_error(body_of(response), message);
  }
  // a client asking whether to send its body (curl does, past 1 MiB) is told 413, not "100 Continue"
  RawConnection asking(server.port());
  ASSERT_TRUE(asking.send("POST /v1/completions HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 5000\r\n\r\n"));
  EXPECT_EQ(status_of(asking.receive_all()), 413);
  // a request with a body but neither length nor chunks: 411, not a wait for the connection's end
  RawConnection c(server.port());
  ASSERT_TRUE(c.send("POST /v1/completions HTTP/1.1\r\nHost: x\r\n\r\n{}"));
  EXPECT_EQ(status_of(c.receive_all()), 411);
}

// A non-streamed request whose client leaves is cancelled: the scheduler stops decoding it.
TEST_F(ServeCliTest, ANonStreamedRequestWhoseClientLeftIsCancelled) {
  ServerProcess server = serve("--parallel 1");
  httplib::Client client = server.client();
  RawConnection leaving(server.port());
  // 100000 tokens, past the context (it shifts): tens of seconds uncancelled, so a failure ends too
  const std::string body = chat("Hello", {{"max_tokens", 100000}}).dump();
  ASSERT_TRUE(leaving.send("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                           "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body));
  json health = json::object();
  for (int i = 0; i < 600 && health.value("running", 0) == 0; ++i) {
    health = json::parse(client.Get("/health")->body);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_EQ(health["running"], 1) << health;
  leaving.close();
  for (int i = 0; i < 600 && health["running"] != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    health = json::parse(client.Get("/health")->body);
  }
  EXPECT_EQ(health["running"], 0) << health;
  EXPECT_EQ(health["cancelled"], 1) << health;
  EXPECT_EQ(health["completed"], 0) << health;
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
  // n beyond what the server ever holds (4 slots + 64 queued) can never succeed: not a 503 to retry
  expect_error(post(client, "/v1/completions", {{"prompt", "x"}, {"n", 100}}, 400), "at most 68 sequences at once", "n");
  auto missing = client.Get("/v1/engines");
  EXPECT_EQ(missing->status, 404);
  expect_error(json::parse(missing->body), "no such endpoint");
  // greedy: a sampled answer (the default temperature 1, a seed per request) may draw the end token sooner
  EXPECT_EQ(post(client, "/v1/completions", {{"prompt", "still"}, {"max_tokens", 3}, {"temperature", 0}}, 200)["usage"]["completion_tokens"], 3);
}

// A grammar nested 20,000 groups deep (40 KB) once overflowed the connection thread's stack and
// killed the server; nested repetitions once answered 500. Both are the client's error.
TEST_F(ServeCliTest, HostileGrammarsGet400AndTheServerKeepsServing) {
  ServerProcess server = serve("--context 64");
  httplib::Client client = server.client();
  const json deep = post(client, "/v1/completions",
                         {{"prompt", "x"}, {"grammar", "root ::= " + std::string(20'000, '(') + "\"a\"" + std::string(20'000, ')')}}, 400);
  expect_error(deep, "groups nested deeper than 256", "grammar");
  expect_error(post(client, "/v1/completions", {{"prompt", "x"}, {"grammar", R"(root ::= (("a"{0,1000}){0,1000}){0,1000})"}}, 400),
               "reaches more than 65536 rule positions", "grammar");
  // greedy: a sampled answer (the default temperature 1, a seed per request) may draw the end token sooner
  EXPECT_EQ(post(client, "/v1/completions", {{"prompt", "still"}, {"max_tokens", 3}, {"temperature", 0}}, 200)["usage"]["completion_tokens"], 3);
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

TEST_F(ServeCliTest, NChoicesEqualTheirSeedsRunOneAtATime) {
  ServerProcess server = serve("--parallel 4");
  httplib::Client client = server.client();
  const json sampled = {{"temperature", 1.0}, {"max_tokens", 12}, {"seed", 7}};
  for (const char* path : {"/v1/chat/completions", "/v1/completions"}) {
    const bool is_chat = std::string(path) == "/v1/chat/completions";
    json request = is_chat ? chat("Tell me", sampled) : json{{"prompt", "Once upon"}};
    request.update(sampled);
    request["n"] = 3;
    const json body = post(client, path, request, 200);
    ASSERT_EQ(body["choices"].size(), 3u) << body;
    int64_t tokens = 0;
    std::set<std::string> distinct;
    for (int i = 0; i < 3; ++i) {
      json alone_request = request;
      alone_request["n"] = 1;
      alone_request["seed"] = 7 + i;
      const json alone = post(client, path, alone_request, 200);
      const json& choice = body["choices"][static_cast<size_t>(i)];
      EXPECT_EQ(choice["index"], i);
      const auto text = [&](const json& c) { return is_chat ? c["message"]["content"] : c["text"]; };
      EXPECT_EQ(text(choice), text(alone["choices"][0])) << path << " choice " << i;
      EXPECT_EQ(choice["finish_reason"], alone["choices"][0]["finish_reason"]);
      tokens += alone["usage"]["completion_tokens"].get<int64_t>();
      distinct.insert(text(choice).get<std::string>());
    }
    EXPECT_EQ(body["usage"]["completion_tokens"], tokens);  // summed over the choices
    EXPECT_GT(distinct.size(), 1u);
    // streamed: each chunk names its choice; the texts per index equal the non-streamed ones
    const Streamed streamed = stream(client, path, request);
    EXPECT_TRUE(streamed.done);
    std::map<int, std::string> texts;
    for (const json& chunk : streamed.chunks) {
      if (chunk["choices"].empty()) continue;
      const json& c = chunk["choices"][0];
      const int index = c["index"];
      if (c.contains("delta") && c["delta"].contains("content")) texts[index] += c["delta"]["content"].get<std::string>();
      if (c.contains("text")) texts[index] += c["text"].get<std::string>();
    }
    for (int i = 0; i < 3; ++i)
      EXPECT_EQ(texts[i], (is_chat ? body["choices"][i]["message"]["content"] : body["choices"][i]["text"]).get<std::string>())
          << path << " streamed choice " << i;
  }
}

// --reasoning-format deepseek with a template that opens <think> in its generation prompt: the
// random model never closes it, so its whole answer is reasoning_content (white space after the
// tag dropped) and its content empty; the same answer is all content with --reasoning-format none.
TEST_F(ServeCliTest, AReasoningOpenedByTheTemplateIsTheReasoningContent) {
  std::ofstream(path("think.json")) << R"({"name": "think", "bos": "", "default_system": "",
      "system": "<|im_start|>system\n{content}<|im_end|>\n", "user": "<|im_start|>user\n{content}<|im_end|>\n",
      "assistant": "<|im_start|>assistant\n<think>\n{content}<|im_end|>\n", "end": "<|im_end|>"})";
  std::string plain;
  {
    ServerProcess server = serve("--chat-template " + path("think.json") + " --reasoning-format none");
    httplib::Client client = server.client();
    plain = post(client, "/v1/chat/completions", chat("Why?", {{"temperature", 1.0}, {"seed", 5}}), 200)["choices"][0]["message"]["content"];
  }
  ASSERT_NE(plain.find_first_not_of(" \t\r\n"), std::string::npos) << "a sampled answer with some text";
  ASSERT_EQ(plain.find("</think>"), std::string::npos);
  const std::string thought = plain.substr(std::min(plain.find_first_not_of(" \t\r\n"), plain.size()));
  ServerProcess server(path("server2.log"),  // a log of its own: the first one's says where it listened
                       {"--model", path("model/model.safetensors"), "--name", "tiny", "--chat-template", path("think.json"),
                        "--reasoning-format", "deepseek"});
  httplib::Client client = server.client();
  const json message = post(client, "/v1/chat/completions", chat("Why?", {{"temperature", 1.0}, {"seed", 5}}), 200)["choices"][0]["message"];
  EXPECT_EQ(message.value("reasoning_content", json()), thought) << message;
  EXPECT_EQ(message.value("content", json()), "") << message;
  const Streamed streamed = stream(client, "/v1/chat/completions", chat("Why?", {{"temperature", 1.0}, {"seed", 5}}));
  std::string reasoning;
  for (const json& chunk : streamed.chunks)
    if (!chunk["choices"].empty() && chunk["choices"][0]["delta"].contains("reasoning_content"))
      reasoning += chunk["choices"][0]["delta"]["reasoning_content"].get<std::string>();
  EXPECT_EQ(reasoning, thought);
  EXPECT_EQ(streamed.text, "");
}

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

}  // namespace
}  // namespace nf
