// `nanoformer plot`: two runs' metrics.jsonl drawn into one PNG, named by their directories; a
// malformed line is one error line naming the file and line number; bad flags are clear errors.
#include <filesystem>
#include <fstream>

#include "support/cli_test.h"

namespace nf::testing {
namespace {

namespace fs = std::filesystem;

class PlotCliTest : public CliTest {
 protected:
  // DIR/metrics.jsonl of `steps` training steps and a validation every 5.
  std::string write_run(const std::string& dir, int steps, double scale) {
    fs::create_directories(path(dir));
    std::ofstream out(path(dir + "/metrics.jsonl"));
    for (int s = 1; s <= steps; ++s) {
      out << "{\"step\":" << s << ",\"loss\":" << scale * 3.0 / s << ",\"lr\":" << 0.001 * s / steps << "}\n";
      if (s % 5 == 0) out << "{\"step\":" << s << ",\"val_loss\":" << scale * 3.2 / s << "}\n";
    }
    return path(dir + "/metrics.jsonl");
  }
};

TEST_F(PlotCliTest, DrawsSeveralRunsIntoOnePicture) {
  const std::string a = write_run("run-a", 20, 1.0), b = write_run("run-b", 30, 1.2);
  const CliRun r = cli("plot '" + a + "' '" + b + "' --out '" + path("runs.png") + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("run-a: 20 steps"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("run-b: 30 steps"), std::string::npos) << r.out;
  EXPECT_EQ(read_text(path("runs.png")).rfind("\x89PNG", 0), 0u);
  const CliRun named = cli("plot '" + a + "' --names first --out '" + path("one.svg") + "'");
  ASSERT_EQ(named.exit_code, 0) << named.err;
  EXPECT_NE(named.out.find("first: 20 steps"), std::string::npos);
  EXPECT_NE(read_text(path("one.svg")).find("<svg"), std::string::npos);
}

TEST_F(PlotCliTest, ErrorsNameFileAndLine) {
  const std::string a = write_run("run-a", 4, 1.0);
  std::ofstream(a, std::ios::app) << "{\"step\": 5, \"loss\": oops}\n";
  CliRun r = cli("plot '" + a + "' --out '" + path("x.png") + "'");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find(a + " line 5: not valid JSON"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(path("x.png")));
  r = cli("plot '" + write_run("run-b", 4, 1.0) + "' --out '" + path("x.gif") + "'");
  EXPECT_NE(r.err.find("x.gif': unknown picture format '.gif'"), std::string::npos) << r.err;
  r = cli("plot '" + path("run-b/metrics.jsonl") + "' --names a,b --out '" + path("x.png") + "'");
  EXPECT_NE(r.err.find("--names: 2 names for 1 metrics files"), std::string::npos) << r.err;
  r = cli("plot '" + path("none.jsonl") + "' --out '" + path("x.png") + "'");
  EXPECT_NE(r.err.find("none.jsonl: cannot read the metrics file"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace nf::testing
