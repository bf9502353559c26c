// The HTTP binding (serve/http_server.h) on cpp-httplib.
#include "nanoformer/serve/http_server.h"

#include <httplib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <climits>
#include <optional>
#include <string_view>

#include "connection_pool.h"
#include "lingering_close.h"
#include "metrics.h"
#include "nanoformer/core/error.h"
#include "nanoformer/serve/api_error.h"
#include "request_stream.h"
#include "serve_web_page.h"  // generated from src/serve/web/index.html (CMakeLists.txt)

namespace nf::serve {
namespace {

using json = nlohmann::json;
constexpr auto kPoll = std::chrono::milliseconds(50);  // how often a waiting answer checks that its client is there

// Generated text may hold invalid UTF-8 (a byte-level model's bytes): it becomes U+FFFD here.
std::string dump(const json& body) { return body.dump(-1, ' ', false, json::error_handler_t::replace); }

void send_json(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(dump(body), "application/json");
}

void send_error(httplib::Response& res, const ApiError& e) { send_json(res, e.status(), e.body()); }

bool equal_ignoring_case(std::string_view a, std::string_view b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](char x, char y) {
    return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
  });
}

// "Authorization: Bearer KEY", the scheme in any case (RFC 7235: "bearer" is as good).
bool authorized(const httplib::Request& req, const std::string& key) {
  const std::string given = req.get_header_value("Authorization");
  const size_t space = given.find(' ');
  if (space == std::string::npos || !equal_ignoring_case(std::string_view(given).substr(0, space), "bearer")) return false;
  const std::string token = given.substr(std::min(given.find_first_not_of(' ', space), given.size()));
  if (token.size() != key.size()) return false;
  unsigned char diff = 0;  // the same time whatever the first differing byte
  for (size_t i = 0; i < token.size(); ++i) diff |= static_cast<unsigned char>(token[i] ^ key[i]);
  return diff == 0;
}

constexpr const char* kChatPath = "/v1/chat/completions";
constexpr const char* kTextPath = "/v1/completions";
constexpr const char* kEmbeddingsPath = "/v1/embeddings";
constexpr const char* kApplyTemplatePath = "/apply-template";

// The only requests whose body is read (through read_body's bound); any other body is refused unread.
bool reads_body(const httplib::Request& req) {
  return req.method == "POST" &&
         (req.path == kChatPath || req.path == kTextPath || req.path == kEmbeddingsPath || req.path == kApplyTemplatePath);
}

// What the request's headers say of its body, checked before any of it is read: a Content-Length
// that is not a plain decimal, or over the limit, is refused at once (httplib 0.11 would read
// `Content-Length: -1` as 2^64 - 1 bytes and wait for them), and so is a body where none is read.
std::optional<ApiError> refuse_body(const httplib::Request& req, int64_t max_body) {
  const bool chunked = req.has_header("Transfer-Encoding");
  if (chunked && !equal_ignoring_case(req.get_header_value("Transfer-Encoding"), "chunked"))
    return ApiError(501, "only Transfer-Encoding: chunked is supported, got '" + req.get_header_value("Transfer-Encoding") + "'");
  const bool sized = req.has_header("Content-Length");
  int64_t length = 0;
  if (sized) {
    const std::string value = req.get_header_value("Content-Length");
    const bool digits = !value.empty() && std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (!digits || req.get_header_value_count("Content-Length") > 1 || chunked)
      return ApiError(400, "the header Content-Length must be one non-negative decimal integer, without "
                           "Transfer-Encoding; got '" + value + "'");
    const std::string significant = value.substr(std::min(value.find_first_not_of('0'), value.size() - 1));
    if (significant.size() > 18 || std::stoll(significant) > max_body)
      return ApiError(413, "the request body is over the limit of " + std::to_string(max_body) + " bytes",
                      "invalid_request_error", "", "request_too_large");
    length = std::stoll(significant);
  }
  if (reads_body(req)) {
    if (!sized && !chunked) return ApiError(411, "a request body needs a Content-Length or Transfer-Encoding: chunked");
    if (req.is_multipart_form_data()) return ApiError(415, "the request body must be JSON, not multipart/form-data");
    return std::nullopt;
  }
  // httplib reads a body for these methods even without a length: until the connection closes
  const bool reads_anyway = req.method == "POST" || req.method == "PUT" || req.method == "PATCH" || req.method == "DELETE";
  if (chunked || length > 0 || (reads_anyway && !sized))
    return ApiError(404, "no such endpoint: " + req.method + " " + req.path + " with a request body",
                    "invalid_request_error", "", "unknown_url");
  return std::nullopt;
}

// The request's body, read as it arrives and refused (413) as soon as it passes `max_body`: a chunked
// body over the limit is never read to its end. The connection then ends after the answer.
std::string read_body(const httplib::ContentReader& read, int64_t max_body) {
  std::string body;
  bool over = false;
  const bool whole = read([&](const char* data, size_t n) {
    over = static_cast<int64_t>(body.size() + n) > max_body;
    if (!over) body.append(data, n);
    return !over;
  });
  if (over || !whole) {
    if (RequestStream* connection = RequestStream::current()) connection->close_after_response();
    if (over)
      throw ApiError(413, "the request body is over the limit of " + std::to_string(max_body) + " bytes",
                     "invalid_request_error", "", "request_too_large");
    throw ApiError(400, "the request body could not be read: a malformed chunked encoding, or the client left");
  }
  return body;
}

// Whether the client of this thread's request has closed its connection.
bool client_gone() {
  const RequestStream* connection = RequestStream::current();
  return connection && connection->client_gone();
}

json model_object(const std::string& name, int64_t context) {
  return {{"id", name}, {"object", "model"}, {"created", 0}, {"owned_by", "nanoformer"}, {"context_length", context}};
}

ApiError not_served(const std::string& what) {
  return ApiError(404, "this server's model does not serve " + what, "invalid_request_error", "", "unknown_url");
}

std::string sse(const json& chunk) { return "data: " + dump(chunk) + "\n\n"; }

// The choices of one request, waited on together: each call hands over what every choice produced
// since the last, blocking up to kPoll on the first choice still running (the choices decode in
// the same steps, so what one has the others have too).
class Choices {
 public:
  explicit Choices(std::vector<std::shared_ptr<Completion>> choices)
      : choices_(std::move(choices)), done_(choices_.size(), false) {}
  // (index, update) for every running choice, done ones included once; empty when all are done.
  std::vector<std::pair<size_t, CompletionUpdate>> next() {
    std::vector<std::pair<size_t, CompletionUpdate>> updates;
    bool waited = false;
    for (size_t i = 0; i < choices_.size(); ++i) {
      if (done_[i]) continue;
      CompletionUpdate update = choices_[i]->wait(waited ? std::chrono::milliseconds(0) : kPoll);
      waited = true;
      if (update.done) {
        done_[i] = true;
        usage_.prompt_tokens = update.usage.prompt_tokens;
        usage_.completion_tokens += update.usage.completion_tokens;  // summed over the choices, as OpenAI
      }
      updates.emplace_back(i, std::move(update));
    }
    return updates;
  }
  bool all_done() const { return std::all_of(done_.begin(), done_.end(), [](bool d) { return d; }); }
  void cancel() {
    for (const auto& c : choices_) c->cancel();
  }
  const Completion& operator[](size_t i) const { return *choices_[i]; }
  size_t size() const { return choices_.size(); }
  const Usage& usage() const { return usage_; }

 private:
  std::vector<std::shared_ptr<Completion>> choices_;
  std::vector<bool> done_;
  Usage usage_;
};

// Streams a completion's choices as server-sent events; the client going away cancels them.
void stream(httplib::Response& res, std::shared_ptr<Choices> choices, bool include_usage) {
  auto first = std::make_shared<std::vector<bool>>(choices->size(), true);
  auto calls = std::make_shared<std::vector<int64_t>>(choices->size(), 0);  // each choice's tool calls so far
  auto server_calls = std::make_shared<std::vector<int64_t>>(choices->size(), 0);  // and the calls the server ran
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      "text/event-stream",
      [choices, first, calls, server_calls, include_usage](size_t, httplib::DataSink& sink) {
        if (!sink.is_writable()) {
          choices->cancel();
          return false;
        }
        std::string out;
        for (const auto& [i, update] : choices->next()) {
          const Completion& choice = (*choices)[i];
          const ResponseHeader& h = choice.header();
          if (!update.text.empty() || !update.reasoning.empty() || ((*first)[i] && h.endpoint == Endpoint::chat)) {
            out += sse(completion_chunk(h, update.text, (*first)[i], "", choice.logprobs() ? &update.logprobs : nullptr,
                                        update.reasoning));
            (*first)[i] = false;
          }
          for (const infer::ToolCall& call : update.tool_calls)
            for (const json& chunk : tool_call_chunks(h, call, (*calls)[i]++)) out += sse(chunk);
          for (const ServerToolCall& call : update.server_tool_calls) out += sse(server_tool_call_chunk(h, call, (*server_calls)[i]++));
          if (update.done) {
            if (!update.error.empty())
              out += sse(ApiError(500, update.error, "server_error").body());
            else
              out += sse(completion_chunk(h, "", (*first)[i], update.finish_reason));
          }
        }
        const bool done = choices->all_done();
        if (done) {
          if (include_usage) out += sse(usage_chunk((*choices)[0].header(), choices->usage()));
          out += "data: [DONE]\n\n";
        }
        if (!out.empty() && !sink.write(out.data(), out.size())) {
          choices->cancel();
          return false;
        }
        if (done) sink.done();
        return true;
      },
      [choices](bool success) {
        if (!success) choices->cancel();
      });
}

// httplib's server with each connection served by our loop instead of httplib's: its requests
// read through a RequestStream (one deadline per request, bounded head and body), on a thread of a
// ConnectionPool, and a connection beyond the pool's capacity answered 503 where it was accepted.
class GuardedServer final : public httplib::Server {
 public:
  GuardedServer(const RequestLimits& limits, size_t max_connections)
      : limits_(limits), max_connections_(max_connections), lingering_(std::chrono::seconds(1), max_connections) {
    new_task_queue = [this] { return new ConnectionPool(max_connections_, [this] { lingering_.close_expired(); }); };
    set_idle_interval(0, 200'000);  // the accepting thread closes lingering sockets when idle for 0.2 s
    set_keep_alive_timeout(std::max<time_t>(1, std::chrono::duration_cast<std::chrono::seconds>(limits.timeout).count()));
    set_keep_alive_max_count(1000);
  }
  // httplib 0.11 listens with a backlog of 5; listen() again on the bound socket sets ours (the
  // kernel caps it at net.core.somaxconn).
  void set_backlog(int backlog) { ::listen(svr_sock_, backlog); }

 private:
  bool process_and_close_socket(socket_t sock) override {
    if (ConnectionPool::refusing() || sock >= FD_SETSIZE) {  // httplib 0.11 cannot select() on sockets past FD_SETSIZE
      refuse(sock);
      return false;
    }
    RequestStream stream(sock, limits_, [this] { return svr_sock_ == INVALID_SOCKET; });
    RequestStream::Scope current(stream);
    bool served = false;
    for (size_t left = keep_alive_max_count_; left > 0 && stream.next_request(); --left) {
      bool closed = false;
      served = process_request(stream, /*close_connection=*/left == 1, closed, nullptr);
      if (!served || closed || stream.must_close()) break;
    }
    if (stream.must_close()) {  // answered before its request was read whole: the client may still be sending
      lingering_.add(sock);
    } else {
      ::shutdown(sock, SHUT_RDWR);
      ::close(sock);
    }
    return served;
  }

  // 503 at once, without waiting for the client's request (the answer fits the new socket's empty
  // buffer); the socket is closed a second later, so that a client still sending reads the answer.
  void refuse(socket_t sock) {
    const std::string response = error_response(
        ApiError(503, "the server is serving its most connections (" + std::to_string(max_connections_) +
                          ", --max-connections); retry later",
                 "server_error", "", "too_many_connections"));
    ::send(sock, response.data(), response.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    lingering_.add(sock);
  }

  RequestLimits limits_;
  size_t max_connections_;
  LingeringClose lingering_;
};

}  // namespace

HttpServer::HttpServer(CompletionService* completions, EmbeddingService* embeddings, std::string model_name,
                       int64_t context, const HttpOptions& options)
    : completions_(completions),
      embeddings_(embeddings),
      model_name_(std::move(model_name)),
      context_(context),
      options_(options),
      requests_(std::make_unique<RequestCounts>()) {
  NF_CHECK(options.timeout_s > 0 && std::isfinite(options.timeout_s), "serve: --timeout must be > 0 seconds, got ",
           options.timeout_s);
  NF_CHECK(options.max_connections > 0, "serve: --max-connections must be >= 1, got ", options.max_connections);
  NF_CHECK(options.max_body_bytes > 0, "serve: --max-body must be >= 1 byte, got ", options.max_body_bytes);
  const RequestLimits limits{
      .timeout = std::chrono::milliseconds(static_cast<int64_t>(std::ceil(options.timeout_s * 1000))),
      .write_timeout = std::chrono::seconds(CPPHTTPLIB_WRITE_TIMEOUT_SECOND),
      .max_body_bytes = options.max_body_bytes};
  server_ = std::make_unique<GuardedServer>(limits, static_cast<size_t>(options.max_connections));
  server_->set_payload_max_length(static_cast<size_t>(options.max_body_bytes));
  routes();
}

HttpServer::~HttpServer() = default;

void HttpServer::routes() {
  httplib::Server& s = *server_;
  const std::string key = options_.api_key;
  const int64_t max_body = options_.max_body_bytes;
  // Before any of the body is read (and before "100 Continue" invites it): the key, then what the
  // headers say of the body. A refusal ends the connection after its answer: the body is unread.
  const auto refused = [key, max_body](const httplib::Request& req, httplib::Response& res) {
    const bool open = req.path == "/" || req.path == "/health";
    std::optional<ApiError> refusal = refuse_body(req, max_body);
    if (!key.empty() && !open && !authorized(req, key))
      refusal = ApiError(401, "a valid API key is required: send the header 'Authorization: Bearer KEY'",
                         "authentication_error", "", "invalid_api_key");
    if (!refusal) return false;
    send_error(res, *refusal);
    if (RequestStream* connection = RequestStream::current()) connection->close_after_response();
    return true;
  };
  s.set_expect_100_continue_handler([refused](const httplib::Request& req, httplib::Response& res) {
    return refused(req, res) ? res.status : 100;
  });
  s.set_pre_routing_handler([refused](const httplib::Request& req, httplib::Response& res) {
    return refused(req, res) ? httplib::Server::HandlerResponse::Handled : httplib::Server::HandlerResponse::Unhandled;
  });
  s.set_error_handler([max_body](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;  // an error this server already wrote
    if (res.status == 413)
      send_error(res, ApiError(413, "the request body is over the limit of " + std::to_string(max_body) + " bytes",
                               "invalid_request_error", "", "request_too_large"));
    else if (res.status == 404)
      send_error(res, ApiError(404, "no such endpoint: " + req.method + " " + req.path, "invalid_request_error", "",
                               "unknown_url"));
    else
      send_error(res, ApiError(res.status, "the request was refused (HTTP " + std::to_string(res.status) + ")"));
  });
  s.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr error) {
    std::string message = "internal error";
    try {
      std::rethrow_exception(error);
    } catch (const std::exception& e) {
      message = e.what();
    } catch (...) {
    }
    send_error(res, ApiError(500, message, "server_error"));
  });

  s.Get("/", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(reinterpret_cast<const char*>(kServeWebPage), sizeof(kServeWebPage), "text/html; charset=utf-8");
  });
  // an embedding-only server has no scheduler: its counts are zeros
  const auto stats = [this] { return completions_ ? completions_->scheduler().stats() : SchedulerStats{}; };
  s.Get("/health", [this, stats](const httplib::Request&, httplib::Response& res) {
    const SchedulerStats st = stats();
    send_json(res, 200,
              {{"status", "ok"}, {"model", model_name_}, {"running", st.running}, {"queued", st.queued},
               {"parallel", st.parallel}, {"max_queue", st.max_queue}, {"completed", st.completed},
               {"cancelled", st.cancelled}, {"decode_steps", st.decode_steps}, {"decoded_rows", st.decoded_rows}});
  });
  s.Get("/metrics", [this, stats](const httplib::Request&, httplib::Response& res) {
    res.set_content(prometheus_text(model_name_, stats(), requests_->snapshot()),
                    "text/plain; version=0.0.4; charset=utf-8");
  });
  s.set_logger([this](const httplib::Request& req, const httplib::Response& res) { requests_->add(req.path, res.status); });
  s.Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
    send_json(res, 200, {{"object", "list"}, {"data", json::array({model_object(model_name_, context_)})}});
  });
  s.Get(R"(/v1/models/(.+))", [this](const httplib::Request& req, httplib::Response& res) {
    if (req.matches[1] == model_name_) return send_json(res, 200, model_object(model_name_, context_));
    send_error(res, ApiError(404, "the model '" + std::string(req.matches[1]) + "' does not exist: this server serves '" +
                                      model_name_ + "'", "invalid_request_error", "model", "model_not_found"));
  });
  s.Post(kEmbeddingsPath, [this, max_body](const httplib::Request&, httplib::Response& res,
                                           const httplib::ContentReader& content) {
    try {
      const EmbeddingRequest request = parse_embedding_request(read_body(content, max_body));
      if (!embeddings_) throw not_served("embeddings");
      send_json(res, 200, embeddings_->embed(request));
    } catch (const ApiError& e) {
      send_error(res, e);
    }
  });
  s.Post(kApplyTemplatePath, [this, max_body](const httplib::Request&, httplib::Response& res,
                                              const httplib::ContentReader& content) {
    try {
      const CompletionRequest request = parse_completion_request(read_body(content, max_body), Endpoint::chat);
      if (!completions_) throw not_served("chat completions (it embeds: /v1/embeddings)");
      send_json(res, 200, {{"prompt", completions_->prompt_text(request)}});
    } catch (const ApiError& e) {
      send_error(res, e);
    }
  });
  for (const auto& route : {std::pair{kChatPath, Endpoint::chat}, std::pair{kTextPath, Endpoint::completion}}) {
    s.Post(route.first, [this, max_body, endpoint = route.second](const httplib::Request&, httplib::Response& res,
                                                                  const httplib::ContentReader& content) {
      try {
        const CompletionRequest request = parse_completion_request(read_body(content, max_body), endpoint);
        if (!completions_) throw not_served(endpoint == Endpoint::chat ? "chat completions (it embeds: /v1/embeddings)"
                                                                      : "completions (it embeds: /v1/embeddings)");
        auto choices = std::make_shared<Choices>(completions_->start(request));
        if (request.stream) return stream(res, std::move(choices), request.include_usage);
        std::vector<ChoiceOutput> outputs(choices->size());
        std::vector<std::vector<LogprobEntry>> logprobs(choices->size());
        while (!choices->all_done()) {  // polled, so that a client gone cancels the sequences
          for (auto& [i, update] : choices->next()) {
            outputs[i].text += update.text;
            outputs[i].reasoning += update.reasoning;
            outputs[i].tool_calls.insert(outputs[i].tool_calls.end(), update.tool_calls.begin(), update.tool_calls.end());
            outputs[i].server_tool_calls.insert(outputs[i].server_tool_calls.end(), update.server_tool_calls.begin(),
                                                update.server_tool_calls.end());
            logprobs[i].insert(logprobs[i].end(), update.logprobs.begin(), update.logprobs.end());
            if (!update.done) continue;
            if (!update.error.empty()) {
              choices->cancel();
              throw ApiError(500, update.error, "server_error");
            }
            outputs[i].finish_reason = update.finish_reason;
            if ((*choices)[i].logprobs()) outputs[i].logprobs = &logprobs[i];
          }
          if (!choices->all_done() && client_gone()) return choices->cancel();
        }
        return send_json(res, 200, completion_body((*choices)[0].header(), outputs, choices->usage()));
      } catch (const ApiError& e) {
        send_error(res, e);
      }
    });
  }
}

void HttpServer::bind() {
  if (options_.port == 0) {
    port_ = server_->bind_to_any_port(options_.host);
    NF_CHECK(port_ > 0, "serve: cannot listen on ", options_.host, " (any port)");
  } else {
    NF_CHECK(server_->bind_to_port(options_.host, options_.port), "serve: cannot listen on ", options_.host, ":",
             options_.port, " (in use, or not an address of this machine)");
    port_ = options_.port;
  }
  static_cast<GuardedServer&>(*server_).set_backlog(static_cast<int>(std::min<int64_t>(options_.max_connections, INT_MAX)));
}

void HttpServer::serve() { server_->listen_after_bind(); }

void HttpServer::stop() { server_->stop(); }

}  // namespace nf::serve
