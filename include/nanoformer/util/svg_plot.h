#pragma once
// Line plots written as standalone SVG files (viewable in any browser, no dependencies):
// loss curves and other per-step series.
#include <string>
#include <vector>

namespace nf {

struct PlotSeries {
  std::string label;
  std::vector<double> x;
  std::vector<double> y;
};

struct PlotOptions {
  std::string title;
  std::string x_label = "step";
  std::string y_label;
  bool log_y = false;  // logarithmic y axis (values must be positive)
  int width = 720;
  int height = 420;
};

// Writes the plot atomically (temporary file + rename); throws nf::Error naming the path on failure.
void write_line_plot_svg(const std::string& path, const std::vector<PlotSeries>& series, const PlotOptions& options);

}  // namespace nf
