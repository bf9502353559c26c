// The HTTP binding (serve/http_server.h) on cpp-httplib.
#include "nanoformer/serve/http_server.h"

#include <httplib.h>

#include "nanoformer/core/error.h"
#include "nanoformer/serve/api_error.h"
#include "serve_web_page.h"  // generated from src/serve/web/index.html (CMakeLists.txt)

namespace nf::serve {
namespace {

using json = nlohmann::json;
constexpr auto kPoll = std::chrono::milliseconds(50);  // how often a waiting stream checks its client

// Generated text may hold invalid UTF-8 (a byte-level model's bytes): it becomes U+FFFD here.
std::string dump(const json& body) { return body.dump(-1, ' ', false, json::error_handler_t::replace); }

void send_json(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(dump(body), "application/json");
}

void send_error(httplib::Response& res, const ApiError& e) { send_json(res, e.status(), e.body()); }

bool authorized(const httplib::Request& req, const std::string& key) {
  const std::string given = req.get_header_value("Authorization");
  const std::string expected = "Bearer " + key;
  if (given.size() != expected.size()) return false;
  unsigned char diff = 0;  // the same time whatever the first differing byte
  for (size_t i = 0; i < given.size(); ++i) diff |= static_cast<unsigned char>(given[i] ^ expected[i]);
  return diff == 0;
}

std::string sse(const json& chunk) { return "data: " + dump(chunk) + "\n\n"; }

// Streams a completion as server-sent events; the client going away cancels it.
void stream(httplib::Response& res, std::shared_ptr<Completion> completion, bool include_usage) {
  auto first = std::make_shared<bool>(true);
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      "text/event-stream",
      [completion, first, include_usage](size_t, httplib::DataSink& sink) {
        if (!sink.is_writable()) {
          completion->cancel();
          return false;
        }
        const CompletionUpdate update = completion->wait(kPoll);
        const ResponseHeader& h = completion->header();
        std::string out;
        if (!update.text.empty() || (*first && h.endpoint == Endpoint::chat)) {
          out += sse(completion_chunk(h, update.text, *first));
          *first = false;
        }
        if (update.done) {
          if (!update.error.empty())
            out += sse(ApiError(500, update.error, "server_error").body());
          else
            out += sse(completion_chunk(h, "", *first, update.finish_reason));
          if (include_usage) out += sse(usage_chunk(h, update.usage));
          out += "data: [DONE]\n\n";
        }
        if (!out.empty() && !sink.write(out.data(), out.size())) {
          completion->cancel();
          return false;
        }
        if (update.done) sink.done();
        return true;
      },
      [completion](bool success) {
        if (!success) completion->cancel();
      });
}

}  // namespace

HttpServer::HttpServer(CompletionService& service, const HttpOptions& options)
    : service_(service), options_(options), server_(std::make_unique<httplib::Server>()) {
  const SchedulerStats s = service.scheduler().stats();
  const auto threads = static_cast<size_t>(options.threads > 0 ? options.threads : s.parallel + s.max_queue + 16);
  server_->new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  server_->set_payload_max_length(static_cast<size_t>(options.max_body_bytes));
  server_->set_keep_alive_max_count(1000);
  routes();
}

HttpServer::~HttpServer() = default;

void HttpServer::routes() {
  httplib::Server& s = *server_;
  const std::string key = options_.api_key;
  s.set_pre_routing_handler([key](const httplib::Request& req, httplib::Response& res) {
    const bool open = req.path == "/" || req.path == "/health";
    if (key.empty() || open || authorized(req, key)) return httplib::Server::HandlerResponse::Unhandled;
    send_error(res, ApiError(401, "a valid API key is required: send the header 'Authorization: Bearer KEY'",
                             "authentication_error", "", "invalid_api_key"));
    return httplib::Server::HandlerResponse::Handled;
  });
  const int64_t max_body = options_.max_body_bytes;
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
  s.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
    const SchedulerStats st = service_.scheduler().stats();
    send_json(res, 200,
              {{"status", "ok"}, {"model", service_.model_name()}, {"running", st.running}, {"queued", st.queued},
               {"parallel", st.parallel}, {"max_queue", st.max_queue}, {"completed", st.completed},
               {"cancelled", st.cancelled}, {"decode_steps", st.decode_steps}, {"decoded_rows", st.decoded_rows}});
  });
  s.Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
    send_json(res, 200,
              {{"object", "list"},
               {"data", json::array({{{"id", service_.model_name()}, {"object", "model"}, {"created", 0},
                                      {"owned_by", "nanoformer"}, {"context_length", service_.scheduler().context()}}})}});
  });
  for (const auto& route : {std::pair{"/v1/chat/completions", Endpoint::chat},
                            std::pair{"/v1/completions", Endpoint::completion}}) {
    s.Post(route.first, [this, endpoint = route.second](const httplib::Request& req, httplib::Response& res) {
      try {
        const CompletionRequest request = parse_completion_request(req.body, endpoint);
        std::shared_ptr<Completion> completion = service_.start(request);
        if (request.stream) return stream(res, std::move(completion), request.include_usage);
        const CompletionUpdate all = completion->wait_all();
        if (!all.error.empty()) throw ApiError(500, all.error, "server_error");
        send_json(res, 200, completion_body(completion->header(), all.text, all.finish_reason, all.usage));
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
}

void HttpServer::serve() { server_->listen_after_bind(); }

void HttpServer::stop() { server_->stop(); }

}  // namespace nf::serve
