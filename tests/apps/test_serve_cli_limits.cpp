// What a slow, hostile or impatient client does to `nanoformer serve`, over raw sockets and HTTP: a
// request trickled byte by byte (408 at its deadline), more connections than the cap (503 at once),
// a chunked body of 100 MiB (413, the server's memory flat), a negative or absurd Content-Length
// (answered at once), a non-streamed client that leaves; bad requests and hostile grammars get
// OpenAI's error JSON with the right status and the server keeps serving; a full queue answers 503
// and a disconnect frees its sequence; n choices each equal the request with its seed (seed + i)
// alone; a reasoning the template opened is the reasoning content.
#include "serve_cli_support.h"

namespace nf {
namespace {

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

}  // namespace
}  // namespace nf
