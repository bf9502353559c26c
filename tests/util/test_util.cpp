// Progress-bar formatting and SVG line plots.
#include <cstdio>
#include <fstream>
#include <sstream>

#include "nanoformer/util/progress_bar.h"
#include "nanoformer/util/svg_plot.h"
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

std::string read_all(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

TEST(SvgPlot, WritesOnePolylinePerSeriesWithEscapedText) {
  const std::string path = ::testing::TempDir() + "nf_plot_test.svg";
  PlotSeries a{"loss <train>", {0, 1, 2, 3}, {2.0, 1.0, 0.5, 0.25}};
  PlotSeries b{"loss & val", {0, 1, 2, 3}, {2.1, 1.2, 0.7, 0.6}};
  write_line_plot_svg(path, {a, b}, {.title = "curves", .y_label = "loss", .log_y = true});
  const std::string svg = read_all(path);
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  size_t lines = 0;
  for (size_t at = svg.find("<polyline"); at != std::string::npos; at = svg.find("<polyline", at + 1)) ++lines;
  EXPECT_EQ(lines, 2u);
  EXPECT_NE(svg.find("loss &lt;train&gt;"), std::string::npos);
  EXPECT_NE(svg.find("loss &amp; val"), std::string::npos);
  EXPECT_NE(svg.find(">0.5<"), std::string::npos);  // a 1-2-5 tick on the log axis
  std::remove(path.c_str());
}

TEST(SvgPlot, ErrorsNameTheSeriesOrPath) {
  PlotSeries bad{"ragged", {0, 1}, {1.0}};
  EXPECT_THROW_WITH(write_line_plot_svg(::testing::TempDir() + "x.svg", {bad}, {}), "ragged", "2 x", "1 y");
  PlotSeries ok{"s", {0, 1}, {1.0, 2.0}};
  EXPECT_THROW_WITH(write_line_plot_svg("/nonexistent-dir/plot.svg", {ok}, {}), "/nonexistent-dir/plot.svg");
}

}  // namespace
}  // namespace nf
