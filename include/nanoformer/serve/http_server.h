#pragma once
// The HTTP binding of the server (cpp-httplib): routes, authentication, body bounds, and the
// server-sent events of a streamed completion; everything else is CompletionService's.
//   GET  /                       the web chat page (embedded in the binary)
//   GET  /health                 {"status": "ok", "running", "queued", "parallel", "max_queue", ...}
//   GET  /v1/models              the one model served; /v1/models/{id} that model, or 404 model_not_found
//   POST /v1/chat/completions    OpenAI chat completions, streamed as "data: {chunk}\n\n" ... "data: [DONE]\n\n"
//   POST /v1/completions         OpenAI text completions, the same
//   POST /v1/embeddings          OpenAI embeddings (serve/embedding_service.h)
//   POST /apply-template         a chat request's prompt as the model sees it, {"prompt": text} (llama.cpp's)
//   GET  /metrics                Prometheus's text format: requests, tokens, queue, slots, time to first token
// With an API key every request but / and /health needs "Authorization: Bearer KEY" (the scheme in
// any case; 401). Every error is OpenAI's error JSON.
// What a client cannot do to it (request_stream.h, connection_pool.h): hold a connection by sending
// its request slowly (a request's head and body arrive within timeout_s, else 408), send a body
// over max_body_bytes (413 as soon as the Content-Length says so, or as a chunked body passes the
// limit, never read to its end), or take more than max_connections threads (beyond, 503 at once).
#include <cstdint>
#include <memory>
#include <string>

#include "nanoformer/serve/completion_service.h"
#include "nanoformer/serve/embedding_service.h"

namespace httplib {
class Server;
}

namespace nf::serve {

class RequestCounts;

struct HttpOptions {
  std::string host = "127.0.0.1";
  int port = 8998;              // 0: any free port (port() says which)
  std::string api_key;          // empty: no authentication
  int64_t max_body_bytes = 1 << 20;
  // Each request, head and body, arrives within it from the moment the server waits for it (the
  // connection's opening, or the previous answer's end): else 408, or a quiet close when nothing of
  // it came (an idle keep-alive connection).
  double timeout_s = 10;
  // Connections served at once, a thread each (a streamed answer holds one for its duration); one
  // beyond gets 503 at once. Also the listen backlog.
  int64_t max_connections = 256;
};

class HttpServer {
 public:
  // Either service may be null (an encoder model only embeds): its endpoints then answer 404.
  // `model_name` and `context` are what /v1/models and /health tell of the model.
  HttpServer(CompletionService* completions, EmbeddingService* embeddings, std::string model_name, int64_t context,
             const HttpOptions& options);
  ~HttpServer();
  // Binds host:port; throws nf::Error naming them when it cannot.
  void bind();
  int port() const { return port_; }
  // Serves until stop() (from another thread or a signal handler's thread).
  void serve();
  void stop();

 private:
  void routes();

  CompletionService* completions_;
  EmbeddingService* embeddings_;
  std::string model_name_;
  int64_t context_;
  HttpOptions options_;
  std::unique_ptr<httplib::Server> server_;
  int port_ = 0;
  std::unique_ptr<RequestCounts> requests_;  // for /metrics
};

}  // namespace nf::serve
