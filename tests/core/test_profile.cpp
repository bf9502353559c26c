// The op profiler (NF_PROFILE): kernels dispatched through DeviceKernels are timed by op name,
// backward kernels as "<op> backward", nested scopes count exclusively, and nothing is recorded
// while it is off.
#include <chrono>
#include <thread>

#include "nanoformer/core/profile.h"
#include "support/testing.h"

namespace nf {
namespace {

const profile::Entry* find(const std::vector<profile::Entry>& entries, const std::string& name) {
  for (const auto& e : entries)
    if (e.name == name) return &e;
  return nullptr;
}

class Profile : public ::testing::Test {
 protected:
  void SetUp() override {
    previous_ = profile::enabled();
    profile::set_enabled(true);
    profile::reset();
  }
  void TearDown() override {
    profile::set_enabled(previous_);
    profile::reset();
  }
  bool previous_ = false;
};

TEST_F(Profile, TimesDispatchedKernelsByOpAndPhase) {
  Generator gen(1);
  Tensor a = randn({64, 32}, gen);
  a.set_requires_grad();
  const Tensor b = randn({32, 16}, gen);
  sum(matmul(a, b)).backward();
  const auto entries = profile::entries();
  const profile::Entry* forward = find(entries, "matmul");
  const profile::Entry* backward = find(entries, "matmul backward");
  ASSERT_NE(forward, nullptr);
  ASSERT_NE(backward, nullptr);
  EXPECT_EQ(forward->calls, 1);
  EXPECT_EQ(backward->calls, 1);  // only a needs a gradient
  EXPECT_NE(find(entries, "sum"), nullptr);
}

// Sleeps only ever last at least as long as asked, and the profiler's scopes lie inside the wall
// time measured around them, so these bounds hold however loaded the machine is.
TEST_F(Profile, NestedScopesCountExclusively) {
  const auto begin = std::chrono::steady_clock::now();
  {
    profile::Scope outer("outer");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    profile::Scope inner("inner");
    std::this_thread::sleep_for(std::chrono::milliseconds(40));
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  const auto entries = profile::entries();
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_GE(entries[0].seconds, entries[1].seconds);  // the longest first
  const profile::Entry* inner = find(entries, "inner");
  const profile::Entry* outer = find(entries, "outer");
  ASSERT_NE(inner, nullptr);
  ASSERT_NE(outer, nullptr);
  EXPECT_GE(inner->seconds, 0.04);
  EXPECT_GE(outer->seconds, 0.02);
  // exclusive: outer's own time plus inner's is the outer scope's span, within the wall time; had
  // the inner 40 ms been counted in outer's too, the sum would exceed the wall time by them
  EXPECT_LE(outer->seconds + inner->seconds, wall);
  const std::string table = profile::report(1, 0.1);
  EXPECT_NE(table.find("inner"), std::string::npos);
  EXPECT_NE(table.find("(outside any op)"), std::string::npos);
}

TEST_F(Profile, RecordsNothingWhenOff) {
  profile::set_enabled(false);
  Generator gen(2);
  (void)matmul(randn({8, 8}, gen), randn({8, 8}, gen));
  { profile::Scope scope("ignored"); }
  EXPECT_TRUE(profile::entries().empty());
}

}  // namespace
}  // namespace nf
