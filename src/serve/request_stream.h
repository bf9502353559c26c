#pragma once
// A client connection's socket as cpp-httplib reads and writes it (httplib::Stream), with the
// bounds httplib 0.11 lacks: a request, head and body, must arrive by one deadline (not a timeout
// per recv, which a client sending a byte a second never meets); its head is at most 64 KiB and
// its body's bytes on the wire (chunk framing included) at most --max-body + 64 KiB. A request past
// one of them is answered here (408, 431, 413: OpenAI's error JSON) and its connection ends. The
// connection loop (http_server.cpp) makes one per connection and calls next_request() before each
// request; a handler reaches the stream of its request through current().
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include <httplib.h>

#include "nanoformer/serve/api_error.h"

namespace nf::serve {

// A whole HTTP/1.1 response carrying `error` (OpenAI's JSON), ending the connection: for answers
// written straight to a socket, outside httplib's routing.
std::string error_response(const ApiError& error);

struct RequestLimits {
  std::chrono::milliseconds timeout{10'000};    // --timeout: a request's head and body arrive within it
  std::chrono::milliseconds write_timeout{5'000};  // a write waits for the client this long at most
  int64_t max_body_bytes = 1 << 20;             // --max-body
};

class RequestStream final : public httplib::Stream {
 public:
  static constexpr int64_t kMaxHeadBytes = 64 << 10;  // the request line and headers
  static constexpr int64_t kFramingBytes = 64 << 10;  // a chunked body's size lines, beyond --max-body

  // `stopping` is polled while waiting: true ends the wait (the server is stopping).
  RequestStream(int socket, const RequestLimits& limits, std::function<bool()> stopping);
  ~RequestStream() override;

  // Starts the next request's deadline (now + timeout) and waits for its first byte. False when the
  // client closed, sent nothing by the deadline (an idle keep-alive connection: closed without an
  // answer), or the server is stopping.
  bool next_request();
  // The request is answered before its body was read: the connection ends after the answer.
  void close_after_response() { close_ = true; }
  // Whether the connection must end now (it was told to, or a bound was passed and answered here).
  bool must_close() const { return close_ || answered_; }
  // Whether the client has closed its end (checked without waiting).
  bool client_gone() const;
  const RequestLimits& limits() const { return limits_; }

  // The stream whose request this thread is serving (the handlers run on the connection's thread),
  // or null outside one. A Scope sets it for a connection's lifetime.
  static RequestStream* current();
  class Scope {
   public:
    explicit Scope(RequestStream& stream);
    ~Scope();
  };

  // httplib::Stream
  bool is_readable() const override;
  bool is_writable() const override;
  ssize_t read(char* ptr, size_t size) override;
  ssize_t write(const char* ptr, size_t size) override;
  void get_remote_ip_and_port(std::string& ip, int& port) const override;
  void get_local_ip_and_port(std::string& ip, int& port) const override;
  int socket() const override { return socket_; }

 private:
  using Clock = std::chrono::steady_clock;
  // Waits until the socket has bytes: false at the deadline or when stopping.
  bool wait_readable(Clock::time_point until) const;
  // Counts bytes handed to httplib against the head and body bounds; false past one (answered).
  bool account(const char* data, size_t n);
  // Answers the request with `error` and refuses every later read and write.
  void answer(const ApiError& error);

  int socket_;
  RequestLimits limits_;
  std::function<bool()> stopping_;
  Clock::time_point deadline_{};
  char buffer_[4096];
  size_t buffered_begin_ = 0, buffered_end_ = 0;
  // the request being read: its head's bytes until the blank line ("\r\n\r\n"), then its body's
  int64_t head_bytes_ = 0, body_bytes_ = 0;
  uint32_t last_four_ = 0;  // the last four bytes of the head, to find its end
  bool in_body_ = false;
  bool close_ = false, answered_ = false;
};

}  // namespace nf::serve
