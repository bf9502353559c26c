#pragma once
// The HTTP binding of the server (cpp-httplib): routes, authentication, body bounds, and the
// server-sent events of a streamed completion; everything else is CompletionService's.
//   GET  /                       the web chat page (embedded in the binary)
//   GET  /health                 {"status": "ok", "running", "queued", "parallel", "max_queue", ...}
//   GET  /v1/models              the one model served
//   POST /v1/chat/completions    OpenAI chat completions, streamed as "data: {chunk}\n\n" ... "data: [DONE]\n\n"
//   POST /v1/completions         OpenAI text completions, the same
// With an API key every request but / and /health needs "Authorization: Bearer KEY" (401). Bodies
// over max_body_bytes answer 413; unknown paths 404; every error is OpenAI's error JSON.
#include <cstdint>
#include <memory>
#include <string>

#include "nanoformer/serve/completion_service.h"

namespace httplib {
class Server;
}

namespace nf::serve {

struct HttpOptions {
  std::string host = "127.0.0.1";
  int port = 8998;              // 0: any free port (port() says which)
  std::string api_key;          // empty: no authentication
  int64_t max_body_bytes = 1 << 20;
  int64_t context = 0;          // reported by /v1/models
  // Connections served at once (httplib's threads): a streamed answer holds one for its duration.
  int64_t threads = 0;          // 0: parallel + max_queue + 16, so that overflow gets its 503 at once
};

class HttpServer {
 public:
  HttpServer(CompletionService& service, const HttpOptions& options);
  ~HttpServer();
  // Binds host:port; throws nf::Error naming them when it cannot.
  void bind();
  int port() const { return port_; }
  // Serves until stop() (from another thread or a signal handler's thread).
  void serve();
  void stop();

 private:
  void routes();

  CompletionService& service_;
  HttpOptions options_;
  std::unique_ptr<httplib::Server> server_;
  int port_ = 0;
};

}  // namespace nf::serve
