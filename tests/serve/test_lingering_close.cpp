// Answered sockets closed a moment later (serve/lingering_close.h), over socketpairs: the client
// sees the answer end at once but may go on sending until the linger has passed; beyond the
// capacity the oldest socket is closed at once.
#include "serve/lingering_close.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

namespace nf::serve {
namespace {

using namespace std::chrono_literals;

// A connected pair: [0] the server's end (handed over), [1] the client's.
struct Pair {
  int fd[2] = {-1, -1};
  Pair() { EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fd), 0); }
  ~Pair() { ::close(fd[1]); }
  // Whether the client can still send (its peer not closed).
  bool client_can_send() const { return ::send(fd[1], "x", 1, MSG_NOSIGNAL | MSG_DONTWAIT) == 1; }
  // Whether the client sees the end of what the server sends.
  bool client_sees_end() const {
    char byte;
    return ::recv(fd[1], &byte, 1, MSG_DONTWAIT) == 0;
  }
};

TEST(LingeringClose, TheClientSeesTheEndAtOnceAndMaySendUntilTheLingerHasPassed) {
  LingeringClose lingering(300ms, 8);
  Pair pair;
  lingering.add(pair.fd[0]);
  EXPECT_TRUE(pair.client_sees_end());
  EXPECT_TRUE(pair.client_can_send());  // closed at once, this would fail (a reset, for TCP)
  lingering.close_expired();
  EXPECT_TRUE(pair.client_can_send());  // not yet
  std::this_thread::sleep_for(400ms);
  lingering.close_expired();
  EXPECT_FALSE(pair.client_can_send());
}

TEST(LingeringClose, BeyondItsCapacityTheOldestIsClosedAtOnce) {
  LingeringClose lingering(60s, 2);
  Pair first, second, third;
  lingering.add(first.fd[0]);
  lingering.add(second.fd[0]);
  EXPECT_TRUE(first.client_can_send());
  lingering.add(third.fd[0]);
  EXPECT_FALSE(first.client_can_send());
  EXPECT_TRUE(second.client_can_send());
  EXPECT_TRUE(third.client_can_send());
}

}  // namespace
}  // namespace nf::serve
