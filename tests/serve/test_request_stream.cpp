// A connection's reads under one deadline per request and size bounds (serve/request_stream.h),
// over a socketpair: a client trickling faster than any per-recv timeout still meets the request's
// deadline (408); an idle connection closes quietly; a head or a body past its bound is answered
// (431, 413) and cut; a request within the bounds reads whole, and the next one gets a new deadline.
#include "serve/request_stream.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace nf::serve {
namespace {

using namespace std::chrono_literals;

// A connected pair: the server's end (for the stream) and the client's.
struct SocketPair {
  int server = -1, client = -1;
  SocketPair() {
    int fds[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
    server = fds[0], client = fds[1];
  }
  ~SocketPair() {
    ::close(server);
    if (client >= 0) ::close(client);
  }
  void send(const std::string& data) const { ASSERT_EQ(::send(client, data.data(), data.size(), MSG_NOSIGNAL), ssize_t(data.size())); }
  // What the server wrote to the client so far (waiting up to `wait` for the first bytes).
  std::string received(std::chrono::milliseconds wait = 5000ms) const {
    std::string all;
    pollfd p{.fd = client, .events = POLLIN, .revents = 0};
    char buffer[4096];
    while (::poll(&p, 1, all.empty() ? static_cast<int>(wait.count()) : 0) > 0) {
      const ssize_t n = ::recv(client, buffer, sizeof(buffer), MSG_DONTWAIT);
      if (n <= 0) break;
      all.append(buffer, static_cast<size_t>(n));
    }
    return all;
  }
};

RequestLimits limits(std::chrono::milliseconds timeout, int64_t max_body = 1 << 20) {
  return {.timeout = timeout, .write_timeout = 1000ms, .max_body_bytes = max_body};
}

// Reads from the stream as httplib does, a byte at a time, until a read fails or ends; the bytes read.
std::string read_until_failure(RequestStream& stream, size_t at_once = 1) {
  std::string all;
  std::vector<char> buffer(at_once);
  for (ssize_t n; (n = stream.read(buffer.data(), buffer.size())) > 0;) all.append(buffer.data(), static_cast<size_t>(n));
  return all;
}

bool never() { return false; }

TEST(RequestStream, ATrickleFasterThanAnyRecvTimeoutStillMeetsTheRequestDeadline) {
  SocketPair pair;
  RequestStream stream(pair.server, limits(600ms), never);
  std::atomic<bool> stop = false;
  std::thread trickle([&] {  // a byte every 50 ms, for up to 5 s
    for (int i = 0; i < 100 && !stop; ++i) {
      ::send(pair.client, "a", 1, MSG_NOSIGNAL);
      std::this_thread::sleep_for(50ms);
    }
  });
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(stream.next_request());
  const std::string read = read_until_failure(stream);
  const auto elapsed = std::chrono::steady_clock::now() - start;
  stop = true;
  trickle.join();
  EXPECT_GE(elapsed, 550ms);
  EXPECT_LT(elapsed, 4s) << "the trickle was never cut";
  EXPECT_GE(read.size(), 5u);  // it was reading until then
  const std::string answer = pair.received();
  EXPECT_EQ(answer.rfind("HTTP/1.1 408 Request Timeout\r\n", 0), 0u) << answer;
  EXPECT_NE(answer.find("did not arrive within 0.6 s (--timeout)"), std::string::npos) << answer;
  EXPECT_NE(answer.find("Connection: close"), std::string::npos) << answer;
  EXPECT_TRUE(stream.must_close());
  char byte;
  EXPECT_EQ(stream.read(&byte, 1), -1);  // and stays cut
  EXPECT_EQ(stream.write("x", 1), -1);
}

TEST(RequestStream, AnIdleConnectionClosesQuietlyAndAClosedOneAtOnce) {
  SocketPair idle;
  RequestStream waiting(idle.server, limits(300ms), never);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(waiting.next_request());
  EXPECT_GE(std::chrono::steady_clock::now() - start, 250ms);
  EXPECT_EQ(idle.received(100ms), "");  // nothing was asked: nothing is answered

  SocketPair closed;
  ::close(closed.client);
  closed.client = -1;
  RequestStream gone(closed.server, limits(60s), never);
  EXPECT_FALSE(gone.next_request());  // at once, not after 60 s

  SocketPair stopping;
  RequestStream stopped(stopping.server, limits(60s), [] { return true; });
  EXPECT_FALSE(stopped.next_request());
}

TEST(RequestStream, ARequestWithinItsBoundsReadsWholeAndTheNextGetsANewDeadline) {
  SocketPair pair;
  RequestStream stream(pair.server, limits(1000ms, 10), never);
  const std::string request = "POST / HTTP/1.1\r\nContent-Length: 10\r\n\r\n0123456789";
  for (int round = 0; round < 2; ++round) {
    pair.send(request);
    ASSERT_TRUE(stream.next_request());
    std::string read;
    char byte;
    while (read.size() < request.size() && stream.read(&byte, 1) == 1) read += byte;
    EXPECT_EQ(read, request);
    EXPECT_FALSE(stream.must_close());
    if (round == 0) std::this_thread::sleep_for(1500ms);  // past the first request's deadline
  }
  EXPECT_EQ(pair.received(100ms), "");
  EXPECT_FALSE(stream.client_gone());
  ::close(pair.client);
  pair.client = -1;
  EXPECT_TRUE(stream.client_gone());
}

TEST(RequestStream, AHeadOrABodyPastItsBoundIsAnsweredAndCut) {
  SocketPair head;
  RequestStream long_head(head.server, limits(10s), never);
  std::thread writer([&] {  // a request line that never ends
    const std::string line(RequestStream::kMaxHeadBytes + 4096, 'a');
    ::send(head.client, line.data(), line.size(), MSG_NOSIGNAL);
  });
  ASSERT_TRUE(long_head.next_request());
  EXPECT_EQ(read_until_failure(long_head).size(), size_t(RequestStream::kMaxHeadBytes));
  ::shutdown(head.server, SHUT_RD);  // the writer's send ends
  writer.join();
  EXPECT_EQ(head.received().rfind("HTTP/1.1 431 ", 0), 0u);

  SocketPair body;
  RequestStream long_body(body.server, limits(10s, 1000), never);
  const int64_t allowed = 1000 + RequestStream::kFramingBytes;
  std::thread sender([&] {
    const std::string request = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n" + std::string(allowed + 4096, 'b');
    ::send(body.client, request.data(), request.size(), MSG_NOSIGNAL);
  });
  ASSERT_TRUE(long_body.next_request());
  const std::string read = read_until_failure(long_body, 4096);
  ::shutdown(body.server, SHUT_RD);
  sender.join();
  EXPECT_LE(static_cast<int64_t>(read.size()), allowed + 4096 + 64);
  EXPECT_GE(static_cast<int64_t>(read.size()), allowed - 4096);
  const std::string answer = body.received();
  EXPECT_EQ(answer.rfind("HTTP/1.1 413 ", 0), 0u) << answer;
  EXPECT_NE(answer.find("over the limit of 1000 bytes"), std::string::npos) << answer;
}

}  // namespace
}  // namespace nf::serve
