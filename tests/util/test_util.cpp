// Progress-bar formatting.
#include "nanoformer/util/progress_bar.h"
#include "support/testing.h"

namespace nf {
namespace {

TEST(ProgressBar, HumanUnits) {
  EXPECT_EQ(human_count(12.0), "12.0");
  EXPECT_EQ(human_count(1234.0), "1.23 k");
  EXPECT_EQ(human_count(5.5e6), "5.50 M");
  EXPECT_EQ(human_duration(65), "01:05");
  EXPECT_EQ(human_duration(3723), "1:02:03");
  EXPECT_EQ(human_duration(-1), "--:--");
}

}  // namespace
}  // namespace nf
