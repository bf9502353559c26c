// Progress-bar formatting, and its lines in a log (stderr not a terminal).
#include <algorithm>
#include <chrono>
#include <thread>

#include "nanoformer/util/progress_bar.h"
#include "support/testing.h"

namespace nf::util {
namespace {

TEST(ProgressBar, HumanUnits) {
  EXPECT_EQ(human_count(12.0), "12.0");
  EXPECT_EQ(human_count(1234.0), "1.23 k");
  EXPECT_EQ(human_count(5.5e6), "5.50 M");
  EXPECT_EQ(human_duration(65), "01:05");
  EXPECT_EQ(human_duration(3723), "1:02:03");
  EXPECT_EQ(human_duration(-1), "--:--");
}

// Lines a bar writes to a captured (non-terminal) stderr, past its half-second quiet start.
std::string logged(const std::string& final_status) {
  ::testing::internal::CaptureStderr();
  {
    ProgressBar bar(3, "job", "steps");
    std::this_thread::sleep_for(std::chrono::milliseconds(600));
    bar.update(1);
    bar.update(3, "done");
    bar.finish(final_status);
  }
  return ::testing::internal::GetCapturedStderr();
}

TEST(ProgressBar, ALogGetsTheFinalStateOnce) {
  const std::string same = logged("");
  EXPECT_EQ(std::count(same.begin(), same.end(), '\n'), 2) << same;  // 1/3, then 3/3 once
  const std::string changed = logged("val 1.5");  // finish with a new status: one more line
  EXPECT_EQ(std::count(changed.begin(), changed.end(), '\n'), 3) << changed;
  EXPECT_NE(changed.rfind("val 1.5"), std::string::npos) << changed;
}

}  // namespace
}  // namespace nf::util
