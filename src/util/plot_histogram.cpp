// Overlaid histograms (util/plot.h): several samples over the same bins, each as translucent bars
// with a solid outline, in fractions of its own count.
#include <plplot.h>

#include <algorithm>
#include <cmath>

#include "nanoformer/core/error.h"
#include "nanoformer/util/plot.h"
#include "plot_figure.h"

namespace nf::plot {
namespace {

using detail::PixelBox;

// Fractions of each sample's finite values in `bins` equal bins over [lo, hi].
std::vector<std::vector<double>> bin_fractions(const HistogramChart& chart, double lo, double hi) {
  std::vector<std::vector<double>> fractions;
  for (const Sample& s : chart.samples) {
    std::vector<double> counts(chart.bins, 0.0);
    double total = 0;
    for (double v : s.values) {
      if (!std::isfinite(v)) continue;
      const auto bin = static_cast<int64_t>((v - lo) / (hi - lo) * chart.bins);
      counts[std::clamp<int64_t>(bin, 0, chart.bins - 1)] += 1;
      total += 1;
    }
    for (double& c : counts) c = total > 0 ? c / total : 0;
    fractions.push_back(std::move(counts));
  }
  return fractions;
}

void draw_legend(const HistogramChart& chart) {
  std::vector<std::string> texts;
  std::vector<PLINT> options, colors, patterns, text_colors;
  std::vector<PLFLT> scales, widths;
  for (size_t i = 0; i < chart.samples.size(); ++i) {
    texts.push_back(detail::escape(chart.samples[i].label));
    options.push_back(PL_LEGEND_COLOR_BOX);
    colors.push_back(detail::series_color(static_cast<int>(i)));
    patterns.push_back(0);
    text_colors.push_back(detail::kInk);
    scales.push_back(0.8);
    widths.push_back(1.0);
  }
  std::vector<const char*> text_ptrs;
  for (const std::string& t : texts) text_ptrs.push_back(t.c_str());
  PLFLT width = 0, height = 0;
  const auto n = static_cast<PLINT>(texts.size());  // one row above the axes, clear of the bars
  pllegend(&width, &height, PL_LEGEND_BACKGROUND | PL_LEGEND_BOUNDING_BOX, PL_POSITION_TOP | PL_POSITION_OUTSIDE,
           0.01, 0.01, 0.05, detail::kBackground, detail::kGrid, 1, 1, n, n,
           options.data(), 0.8, 0.9, 1.8, 0.0, text_colors.data(), text_ptrs.data(), colors.data(), patterns.data(),
           scales.data(), widths.data(), nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr);
}

void draw_panel(const detail::Figure& figure, const HistogramChart& chart, const PixelBox& cell) {
  const double ch = figure.char_pixels();
  figure.viewport({cell.left + 8.5 * ch, cell.top + 4.4 * ch, cell.right - 1.5 * ch, cell.bottom - 4.8 * ch});
  std::vector<const std::vector<double>*> all;
  for (const Sample& s : chart.samples) all.push_back(&s.values);
  const detail::Range xr = detail::data_range(all, false, 0.0);
  const std::vector<std::vector<double>> fractions = bin_fractions(chart, xr.lo, xr.hi);
  std::vector<const std::vector<double>*> heights;
  for (const auto& f : fractions) heights.push_back(&f);
  detail::Range yr = detail::data_range(heights, chart.log_y, 0.05);
  if (!chart.log_y) yr.lo = 0;
  plwind(xr.lo, xr.hi, yr.lo, yr.hi);
  detail::draw_axes(xr, false, true, yr, chart.log_y);
  const double width = (xr.hi - xr.lo) / chart.bins;
  for (size_t i = 0; i < fractions.size(); ++i) {
    std::vector<PLFLT> outline_x, outline_y;
    for (int b = 0; b < chart.bins; ++b) {
      const double f = fractions[i][b];
      if (f <= 0) continue;
      const double top = chart.log_y ? std::log10(f) : f;
      if (top <= yr.lo) continue;
      const double x0 = xr.lo + b * width, x1 = x0 + width;
      const PLFLT bx[] = {x0, x1, x1, x0}, by[] = {yr.lo, yr.lo, top, top};
      plcol0(detail::fill_color(static_cast<int>(i)));
      plfill(4, bx, by);
      plcol0(detail::series_color(static_cast<int>(i)));
      const PLFLT tx[] = {x0, x0, x1, x1}, ty[] = {yr.lo, top, top, yr.lo};
      plline(4, tx, ty);
    }
  }
  plcol0(detail::kInk);
  plbox("bc", 0, 0, "bc", 0, 0);  // the frame again, over the bars
  plmtex("b", 3.0, 0.5, 0.5, detail::escape(chart.x_label).c_str());
  plmtex("l", 6.3, 0.5, 0.5, detail::escape(chart.y_label).c_str());
  plmtex("t", 2.8, 0.5, 0.5, detail::escape(chart.title).c_str());
  draw_legend(chart);
}

}  // namespace

void write_histograms(const std::string& path, const std::vector<HistogramChart>& panels, const Layout& layout) {
  for (const HistogramChart& chart : panels) {
    NF_CHECK(chart.bins >= 1 && chart.bins <= 10000, "plot '", path, "': histogram '", chart.title, "' has ",
             chart.bins, " bins (1 to 10000 allowed)");
    NF_CHECK(!chart.samples.empty(), "plot '", path, "': histogram '", chart.title, "' has no samples");
  }
  detail::draw_panel_grid(path, panels, layout, draw_panel);
}

void write_histogram(const std::string& path, const HistogramChart& chart) { write_histograms(path, {chart}, Layout{}); }

}  // namespace nf::plot
