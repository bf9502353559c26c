// Figures through PLplot (util/plot.h): the files are real PNG / SVG pictures of the size the layout
// asks for, written atomically; bad input and unwritable paths are errors naming the path; figures
// drawn from several threads at once all succeed (the PLplot lock). What the pictures look like is
// checked by eye (docs/see-inside.md); the helpers behind them are checked here.
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "nanoformer/util/plot.h"
#include "support/temp_dir.h"
#include "support/testing.h"
#include "util/plot_figure.h"

namespace nf::plot {
namespace {

namespace fs = std::filesystem;

class PlotTest : public ::testing::Test {
 protected:
  std::string path(const std::string& name) const { return dir_.file(name); }
  // Files in the directory other than `name` (a temporary file left behind would show here).
  size_t other_files(const std::string& name) const {
    size_t n = 0;
    for (const auto& e : fs::directory_iterator(dir_.path())) n += e.path().filename() != name;
    return n;
  }
  testing::TempDir dir_;
};

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Width and height from a PNG's IHDR chunk (big-endian at bytes 16 and 20).
std::pair<uint32_t, uint32_t> png_size(const std::string& bytes) {
  auto be32 = [&](size_t at) {
    uint32_t v = 0;
    for (size_t i = 0; i < 4; ++i) v = v << 8 | static_cast<unsigned char>(bytes.at(at + i));
    return v;
  };
  return {be32(16), be32(20)};
}

bool is_png(const std::string& bytes) { return bytes.rfind("\x89PNG\r\n\x1a\n", 0) == 0 && bytes.size() > 1000; }

LineChart two_curves() {
  return {.title = "curves #1",
          .x_label = "step",
          .y_label = "loss",
          .log_y = true,
          .series = {{.label = "train 训练", .x = {0, 1, 2, 3}, .y = {2.0, 1.0, 0.5, 0.25}},
                     {.label = "val", .x = {0, 1, 2, 3}, .y = {2.1, NAN, 0.7, 0.6}, .style = LineStyle::dashed}}};
}

TEST_F(PlotTest, LineChartIsAPngOfTheLayoutsSize) {
  write_line_chart(path("a.png"), two_curves());
  const std::string png = read_bytes(path("a.png"));
  ASSERT_TRUE(is_png(png));
  EXPECT_EQ(png_size(png), std::make_pair(900u, 520u));
  EXPECT_EQ(other_files("a.png"), 0u);

  write_line_charts(path("grid.png"), {two_curves(), two_curves(), two_curves()},
                    {.title = "three panels", .columns = 2, .panel_width = 400, .panel_height = 300});
  EXPECT_EQ(png_size(read_bytes(path("grid.png"))), std::make_pair(800u, 36u + 600u));
}

TEST_F(PlotTest, SvgByExtension) {
  write_line_chart(path("a.svg"), two_curves());
  const std::string svg = read_bytes(path("a.svg"));
  EXPECT_NE(svg.find("<svg"), std::string::npos);
  EXPECT_NE(svg.find("width=\"900pt\""), std::string::npos);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
}

TEST_F(PlotTest, NamedXPositionsAndPoints) {
  LineChart chart{.title = "stages", .x_label = "stage", .y_label = "RMS", .x_categories = {"input", "norm", "attention"}};
  chart.series = {{.label = "rms", .x = {0, 1, 2}, .y = {1, 0.5, 2}, .style = LineStyle::points}};
  write_line_chart(path("c.png"), chart);
  EXPECT_TRUE(is_png(read_bytes(path("c.png"))));
  chart.series[0].x[2] = 3;
  EXPECT_THROW_WITH(write_line_chart(path("d.png"), chart), "d.png", "x = 3", "3 named positions");
}

// Bars side by side at named positions (one negative, one missing; one series with its values
// written), a dashed line across the positions' whole span; bars need named positions and a linear y axis.
TEST_F(PlotTest, BarsAtNamedPositions) {
  LineChart chart{.title = "change", .y_label = "%", .x_categories = {"q8_0", "q4_0", "q4_1"}, .legend_above = true};
  chart.series = {{.label = "char", .x = {0, 1, 2}, .y = {0.1, 3.0, -0.5}, .style = LineStyle::bars,
                   .value_decimals = 2},
                  {.label = "bpe", .x = {0, 1, 2}, .y = {0.2, NAN, 2.0}, .style = LineStyle::bars},
                  {.label = "5 %", .x = {-0.5, 2.5}, .y = {5, 5}, .style = LineStyle::dashed}};
  write_line_chart(path("bars.png"), chart);
  EXPECT_TRUE(is_png(read_bytes(path("bars.png"))));
  chart.log_y = true;
  EXPECT_THROW_WITH(write_line_chart(path("log.png"), chart), "log.png", "'char'", "bars", "linear y axis");
  chart.log_y = false;
  chart.x_categories.clear();
  EXPECT_THROW_WITH(write_line_chart(path("plain.png"), chart), "plain.png", "'char'", "bars", "named x positions");
  EXPECT_EQ(other_files("bars.png"), 0u);
}

TEST_F(PlotTest, HeatMapsAndHistograms) {
  HeatMap m{.title = "head 0", .rows = 3, .cols = 3, .values = {1, 0, 0, 0.5, 0.5, 0, 0.2, 0.3, 0.5},
            .row_labels = {"我", "爱", "你"}, .col_labels = {"我", "爱", "你"}};
  write_heat_maps(path("h.png"), {.panels = {m, m}, .row_axis = "query", .col_axis = "key", .value_label = "weight",
                                  .fixed_range = true, .min = 0, .max = 1},
                  {.columns = 2, .panel_width = 300, .panel_height = 300});
  EXPECT_EQ(png_size(read_bytes(path("h.png"))), std::make_pair(600u + 120u, 300u));

  HistogramChart h{.title = "outputs", .x_label = "value", .bins = 20,
                   .samples = {{"post-norm", {0, 1, 1, 2, 3}}, {"pre-norm", {-5, 0, 5, 10, NAN}}}};
  write_histogram(path("hist.png"), h);
  EXPECT_TRUE(is_png(read_bytes(path("hist.png"))));
  EXPECT_EQ(other_files("hist.png"), 1u);  // h.png, and no temporary file
}

TEST_F(PlotTest, BadInputNamesThePathAndWhatIsWrong) {
  LineChart ragged = two_curves();
  ragged.series[1].y.pop_back();
  EXPECT_THROW_WITH(write_line_chart(path("r.png"), ragged), "r.png", "'val'", "4 x and 3 y");
  EXPECT_THROW_WITH(write_line_chart(path("r.pdf"), two_curves()), "r.pdf", "'.pdf'", ".png or .svg");
  EXPECT_THROW_WITH(write_line_chart("/nonexistent-dir/plot.png", two_curves()), "/nonexistent-dir/plot.png",
                    "cannot write");
  EXPECT_THROW_WITH(write_line_charts(path("n.png"), {}, {}), "n.png", "nothing to draw");
  EXPECT_THROW_WITH(write_line_charts(path("n.png"), {two_curves()}, {.columns = 0}), "n.png", "columns");
  HeatMap m{.title = "head 2", .rows = 2, .cols = 2, .values = {1, 2, 3}};
  EXPECT_THROW_WITH(write_heat_maps(path("m.png"), {.panels = {m}}, {}), "m.png", "'head 2'", "3 values", "2 x 2");
  m.values.push_back(4);
  m.row_labels = {"a"};
  EXPECT_THROW_WITH(write_heat_maps(path("m.png"), {.panels = {m}}, {}), "m.png", "1 row labels for 2 rows");
  EXPECT_THROW_WITH(write_histogram(path("e.png"), {.title = "empty"}), "e.png", "'empty'", "no samples");
  EXPECT_EQ(other_files(""), 0u);  // nothing written, no temporary file left
}

TEST_F(PlotTest, FiguresFromSeveralThreadsAllSucceed) {
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i)
    threads.emplace_back([&, i] { write_line_chart(path(std::to_string(i) + ".png"), two_curves()); });
  for (auto& t : threads) t.join();
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(is_png(read_bytes(path(std::to_string(i) + ".png"))));
}

TEST(PlotHelpers, EscapeRangeAndTextWidth) {
  EXPECT_EQ(detail::escape("a#b##"), "a##b####");
  const std::vector<double> v = {NAN, 1, 10, 100, -3, INFINITY};
  const detail::Range linear = detail::data_range({&v}, false, 0.0);
  EXPECT_EQ(linear.lo, -3);
  EXPECT_EQ(linear.hi, 100);
  const detail::Range log = detail::data_range({&v}, true, 0.1);  // log10: [0, 2] padded by 0.2
  EXPECT_DOUBLE_EQ(log.lo, -0.2);
  EXPECT_DOUBLE_EQ(log.hi, 2.2);
  const std::vector<double> flat = {3, 3};
  const detail::Range widened = detail::data_range({&flat}, false, 0.05);
  EXPECT_LT(widened.lo, 3);
  EXPECT_GT(widened.hi, 3);
  const std::vector<double> none = {NAN};
  EXPECT_EQ(detail::data_range({&none}, false, 0.05).hi, 1);
  EXPECT_DOUBLE_EQ(detail::text_pixels("ab", 10), 13);     // 0.65 each
  EXPECT_DOUBLE_EQ(detail::text_pixels("我们", 10), 20);   // one height each
  const detail::PixelBox cell = detail::grid_cell(3, 2, 100, 50, 36);
  EXPECT_EQ(cell.left, 100);
  EXPECT_EQ(cell.top, 86);
}

}  // namespace
}  // namespace nf::plot
