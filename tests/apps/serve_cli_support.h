#pragma once
// What the `nanoformer serve` end-to-end tests share (test_serve_cli*.cpp): the server as a child
// process on a free loopback port, a raw socket for what a hostile client sends, the OpenAI calls
// and their checks, and the fixture that writes the tiny chat model.
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
inline int status_of(const std::string& response) {
  return response.rfind("HTTP/1.1 ", 0) == 0 ? std::atoi(response.c_str() + 9) : 0;
}

// The JSON body of a raw HTTP response.
inline json body_of(const std::string& response) {
  const size_t at = response.find("\r\n\r\n");
  return at == std::string::npos ? json() : json::parse(response.substr(at + 4), nullptr, false);
}

inline json chat(const std::string& content, json extra = json::object()) {
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

inline Streamed stream(httplib::Client& client, const std::string& path, json body) {
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

inline json post(httplib::Client& client, const std::string& path, const json& body, int expected_status) {
  auto res = client.Post(path.c_str(), body.dump(), "application/json");
  EXPECT_TRUE(res) << path;
  if (!res) return {};
  EXPECT_EQ(res->status, expected_status) << path << " " << res->body;
  return json::parse(res->body);
}

// The error shape: {"error": {"message", "type", "param", "code"}}, the message naming `needle`.
inline void expect_error(const json& body, const std::string& needle, const std::string& param = "") {
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

}  // namespace nf
