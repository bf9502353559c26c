#pragma once
// Figures drawn with PLplot's cairo driver: line charts (one panel or a grid of panels), grids of
// heat maps with one colour bar, and overlaid histograms. The file's extension chooses the format:
// .png (pngcairo) or .svg (svgcairo). Every figure is written to a temporary file beside `path`
// and renamed into place; every error is an nf::Error naming the path. PLplot keeps global state,
// so figures are drawn one at a time (a process-wide mutex); calls from several threads are safe.
// Text is UTF-8 (CJK included, from the Noto CJK fonts through fontconfig).
#include <cstdint>
#include <string>
#include <vector>

namespace nf::plot {

// bars: a bar from 0 to y at each named position (LineChart::x_categories), the chart's bar series
// side by side within a position, filled translucent with a solid outline (a linear y axis only).
enum class LineStyle { solid, dashed, dotted, points, bars };

struct Series {
  std::string label{};  // the legend entry ("" = not in the legend)
  std::vector<double> x{}, y{};
  LineStyle style = LineStyle::solid;
  int color = -1;  // an index into the palette (repeats after 10); -1 = the series' position in the chart
  int value_decimals = -1;  // bars: each bar's value written above it with this many decimals (-1: none)
};

struct LineChart {
  std::string title{}, x_label{}, y_label{};
  bool log_x = false, log_y = false;  // points <= 0 are left out on a log axis
  std::vector<Series> series{};       // non-finite points break a line (a diverged loss, say)
  // Named x positions instead of numbers: the x values are 0, 1, 2, ... and these labels are drawn
  // vertically under the axis (the stages of a block, say); a line may span [-0.5, n - 0.5].
  std::vector<std::string> x_categories{};
  bool legend_above = false;  // the legend in one row above the axes instead of inside at the top right
};

// The size and arrangement of a figure, in pixels.
struct Layout {
  std::string title{};      // over the whole figure ("" = none)
  int columns = 1;          // panels per row (a grid fills row by row)
  int panel_width = 900;
  int panel_height = 520;
};

void write_line_chart(const std::string& path, const LineChart& chart);
void write_line_charts(const std::string& path, const std::vector<LineChart>& panels, const Layout& layout);

// One matrix shown as coloured cells: values[r * cols + c] is row r (drawn top to bottom), column c.
struct HeatMap {
  std::string title{};
  int64_t rows = 0, cols = 0;
  std::vector<double> values{};
  std::vector<std::string> row_labels{}, col_labels{};  // empty, or one per row / column (tokens, say)
};

struct HeatMapGrid {
  std::vector<HeatMap> panels{};
  std::string row_axis{}, col_axis{};  // axis titles shared by the panels ("query", "key")
  std::string value_label{};           // the colour bar's title
  bool fixed_range = false;        // colour range [min, max] as given, else the data's range
  double min = 0, max = 1;
};

// Panels in a grid of layout.columns columns, one colour bar (viridis) at the right.
void write_heat_maps(const std::string& path, const HeatMapGrid& grid, const Layout& layout);

// Overlaid histograms of several samples over the same bins.
struct Sample {
  std::string label{};
  std::vector<double> values{};
};

struct HistogramChart {
  std::string title{}, x_label{};
  std::string y_label = "fraction of values";
  int bins = 60;
  bool log_y = false;
  std::vector<Sample> samples{};  // each normalised to fractions of its own count
};

void write_histogram(const std::string& path, const HistogramChart& chart);
// Several histogram panels in a grid (one per layer, say).
void write_histograms(const std::string& path, const std::vector<HistogramChart>& panels, const Layout& layout);

}  // namespace nf::plot
