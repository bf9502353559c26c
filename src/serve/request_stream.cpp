// A connection's socket under a per-request deadline and size bounds (request_stream.h).
#include "request_stream.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sstream>

namespace nf::serve {
namespace {

constexpr auto kSlice = std::chrono::milliseconds(100);  // how often a wait checks that the server goes on
thread_local RequestStream* t_current = nullptr;

std::string seconds(std::chrono::milliseconds t) {
  std::ostringstream out;
  out << static_cast<double>(t.count()) / 1000.0;
  return out.str();
}

const char* reason_phrase(int status) {
  switch (status) {
    case 400: return "Bad Request";
    case 408: return "Request Timeout";
    case 413: return "Payload Too Large";
    case 431: return "Request Header Fields Too Large";
    case 503: return "Service Unavailable";
    default: return "Error";
  }
}

// poll() for `events` for up to `wait` (EINTR retried): > 0 ready, 0 timed out, < 0 failed.
int poll_for(int socket, short events, std::chrono::milliseconds wait) {
  pollfd p{.fd = socket, .events = events, .revents = 0};
  int ready = 0;
  do ready = ::poll(&p, 1, static_cast<int>(std::max<int64_t>(wait.count(), 0)));
  while (ready < 0 && errno == EINTR);
  return ready;
}

void address_of(int socket, bool peer, std::string& ip, int& port) {
  sockaddr_storage address{};
  socklen_t length = sizeof(address);
  const int rc = peer ? ::getpeername(socket, reinterpret_cast<sockaddr*>(&address), &length)
                      : ::getsockname(socket, reinterpret_cast<sockaddr*>(&address), &length);
  if (rc != 0) return;
  char text[INET6_ADDRSTRLEN] = {};
  if (address.ss_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&address);
    ::inet_ntop(AF_INET, &in->sin_addr, text, sizeof(text));
    port = ntohs(in->sin_port);
  } else if (address.ss_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&address);
    ::inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof(text));
    port = ntohs(in6->sin6_port);
  }
  ip = text;
}

}  // namespace

std::string error_response(const ApiError& error) {
  const std::string body = error.body().dump();
  return "HTTP/1.1 " + std::to_string(error.status()) + " " + reason_phrase(error.status()) +
         "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
         "\r\nConnection: close\r\n\r\n" + body;
}

RequestStream::RequestStream(int socket, const RequestLimits& limits, std::function<bool()> stopping)
    : socket_(socket), limits_(limits), stopping_(std::move(stopping)) {}

RequestStream::~RequestStream() = default;

RequestStream* RequestStream::current() { return t_current; }
RequestStream::Scope::Scope(RequestStream& stream) { t_current = &stream; }
RequestStream::Scope::~Scope() { t_current = nullptr; }

bool RequestStream::next_request() {
  deadline_ = Clock::now() + limits_.timeout;
  head_bytes_ = body_bytes_ = 0;
  last_four_ = 0;
  in_body_ = false;
  if (buffered_begin_ < buffered_end_) return true;  // a pipelined request
  if (!wait_readable(deadline_)) return false;
  char byte = 0;  // readable at the end of the stream too: the client closed
  return ::recv(socket_, &byte, 1, MSG_PEEK) > 0;
}

bool RequestStream::wait_readable(Clock::time_point until) const {
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now());
    if (left.count() <= 0 || stopping_()) return false;
    const int ready = poll_for(socket_, POLLIN, std::min(left, std::chrono::milliseconds(kSlice)));
    if (ready != 0) return ready > 0;
  }
}

bool RequestStream::client_gone() const {
  if (poll_for(socket_, POLLIN, std::chrono::milliseconds(0)) <= 0) return false;
  char byte = 0;
  const ssize_t n = ::recv(socket_, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

bool RequestStream::is_readable() const {
  return buffered_begin_ < buffered_end_ || (!answered_ && wait_readable(deadline_));
}

bool RequestStream::is_writable() const {
  return !answered_ && poll_for(socket_, POLLOUT, limits_.write_timeout) > 0 && !client_gone();
}

ssize_t RequestStream::read(char* ptr, size_t size) {
  if (answered_) return -1;
  if (buffered_begin_ == buffered_end_) {
    if (!wait_readable(deadline_)) {
      if (!stopping_())
        answer(ApiError(408,
                        "the request did not arrive within " + seconds(limits_.timeout) +
                            " s (--timeout): its head and body must arrive by one deadline",
                        "invalid_request_error", "", "request_timeout"));
      return -1;
    }
    const ssize_t n = ::recv(socket_, buffer_, sizeof(buffer_), 0);
    if (n <= 0) return n;
    buffered_begin_ = 0;
    buffered_end_ = static_cast<size_t>(n);
  }
  const size_t n = std::min(size, buffered_end_ - buffered_begin_);
  std::memcpy(ptr, buffer_ + buffered_begin_, n);
  buffered_begin_ += n;
  return account(ptr, n) ? static_cast<ssize_t>(n) : -1;
}

bool RequestStream::account(const char* data, size_t n) {
  size_t i = 0;
  for (; !in_body_ && i < n; ++i, ++head_bytes_) {
    last_four_ = (last_four_ << 8) | static_cast<unsigned char>(data[i]);
    in_body_ = last_four_ == 0x0d0a0d0a;  // "\r\n\r\n": the blank line that ends the head
  }
  body_bytes_ += static_cast<int64_t>(n - i);
  if (head_bytes_ > kMaxHeadBytes) {
    answer(ApiError(431, "the request line and headers are over the limit of " + std::to_string(kMaxHeadBytes) + " bytes",
                    "invalid_request_error", "", "request_too_large"));
    return false;
  }
  if (body_bytes_ > limits_.max_body_bytes + kFramingBytes) {
    answer(ApiError(413, "the request body is over the limit of " + std::to_string(limits_.max_body_bytes) + " bytes",
                    "invalid_request_error", "", "request_too_large"));
    return false;
  }
  return true;
}

void RequestStream::answer(const ApiError& error) {
  const std::string response = error_response(error);
  if (poll_for(socket_, POLLOUT, limits_.write_timeout) > 0)
    ::send(socket_, response.data(), response.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  answered_ = true;
}

ssize_t RequestStream::write(const char* ptr, size_t size) {
  if (answered_ || poll_for(socket_, POLLOUT, limits_.write_timeout) <= 0) return -1;
  return ::send(socket_, ptr, size, MSG_NOSIGNAL);
}

void RequestStream::get_remote_ip_and_port(std::string& ip, int& port) const { address_of(socket_, true, ip, port); }

void RequestStream::get_local_ip_and_port(std::string& ip, int& port) const { address_of(socket_, false, ip, port); }

}  // namespace nf::serve
