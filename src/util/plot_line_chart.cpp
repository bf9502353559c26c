// Line charts (util/plot.h): axes with ticks and a light grid, one line per series (broken at
// non-finite points) or bars at named positions, a legend, numeric or named x positions, linear or
// logarithmic axes.
#include <plplot.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "nanoformer/core/error.h"
#include "nanoformer/util/plot.h"
#include "plot_figure.h"

namespace nf::plot {
namespace {

using detail::PixelBox;

void check_chart(const std::string& path, const LineChart& chart) {
  for (const Series& s : chart.series)
    NF_CHECK(s.x.size() == s.y.size(), "plot '", path, "': series '", s.label, "' has ", s.x.size(), " x and ",
             s.y.size(), " y values");
  for (const Series& s : chart.series) {
    if (s.style != LineStyle::bars) continue;
    NF_CHECK(!chart.x_categories.empty(), "plot '", path, "': series '", s.label,
             "' is drawn as bars, which need named x positions (x_categories)");
    NF_CHECK(!chart.log_y, "plot '", path, "': series '", s.label, "' is drawn as bars, which need a linear y axis");
  }
  if (!chart.x_categories.empty())
    for (const Series& s : chart.series)
      for (double x : s.x)
        NF_CHECK(x >= -0.5 && x <= static_cast<double>(chart.x_categories.size()) - 0.5, "plot '", path,
                 "': series '", s.label, "' has x = ", x, " outside the ", chart.x_categories.size(),
                 " named positions");
}

// PLplot line styles: 1 continuous, 2 short dashes, 4 dots (plstyl's built-in patterns).
int plplot_line_style(LineStyle style) {
  switch (style) {
    case LineStyle::dashed: return 2;
    case LineStyle::dotted: return 4;
    default: return 1;
  }
}

// The drawable points of a series in axis coordinates (log10 on a log axis), split into runs at
// points that cannot be drawn.
std::vector<std::pair<std::vector<double>, std::vector<double>>> runs_of(const Series& s, bool log_x, bool log_y) {
  std::vector<std::pair<std::vector<double>, std::vector<double>>> runs(1);
  for (size_t i = 0; i < s.x.size(); ++i) {
    const double x = s.x[i], y = s.y[i];
    const bool ok = std::isfinite(x) && std::isfinite(y) && (!log_x || x > 0) && (!log_y || y > 0);
    if (!ok) {
      if (!runs.back().first.empty()) runs.emplace_back();
      continue;
    }
    runs.back().first.push_back(log_x ? std::log10(x) : x);
    runs.back().second.push_back(log_y ? std::log10(y) : y);
  }
  return runs;
}

// Bar series `slot` of `slots`: its bars share the middle 80% of each named position's width.
struct BarSlot {
  int slot = 0, slots = 1;
};

// A bar's value as written above it: signed (+0.53) in a series with negative values (changes),
// plain (6777) otherwise.
bool signed_values(const Series& s) { return std::any_of(s.y.begin(), s.y.end(), [](double v) { return v < 0; }); }
std::string bar_value_text(const Series& s, double y, bool signs) {
  char text[32];
  std::snprintf(text, sizeof text, signs ? "%+.*f" : "%.*f", s.value_decimals, y);
  return text;
}

// A bar's value written upwards from just above its top (or above 0 for a negative bar).
void draw_bar_value(double x, double y, const std::string& text, const detail::Range& yr) {
  plcol0(detail::kInk);
  plschr(0, 0.7);
  plptex(x, std::max(y, 0.0) + 0.015 * (yr.hi - yr.lo), 0, 1, 0, text.c_str());
  plschr(0, 1.0);
}

void draw_bars(const Series& s, int color, const BarSlot& b, const detail::Range& yr) {
  const double width = 0.8 / b.slots;
  const bool signs = signed_values(s);
  for (size_t i = 0; i < s.x.size(); ++i) {
    if (!std::isfinite(s.y[i])) continue;
    const double x0 = s.x[i] - 0.4 + b.slot * width, x1 = x0 + width;
    const PLFLT bx[] = {x0, x1, x1, x0}, by[] = {0, 0, s.y[i], s.y[i]};
    plcol0(detail::fill_color(color));
    plfill(4, bx, by);
    plcol0(detail::series_color(color));
    const PLFLT tx[] = {x0, x0, x1, x1}, ty[] = {0, s.y[i], s.y[i], 0};
    plline(4, tx, ty);
    if (s.value_decimals >= 0) draw_bar_value((x0 + x1) / 2, s.y[i], bar_value_text(s, s.y[i], signs), yr);
  }
}

void draw_series(const Series& s, int index, bool log_x, bool log_y, const BarSlot& bar, const detail::Range& yr) {
  const int color = s.color >= 0 ? s.color : index;
  if (s.style == LineStyle::bars) return draw_bars(s, color, bar, yr);
  plcol0(detail::series_color(color));
  plwidth(2.0);
  for (auto& [x, y] : runs_of(s, log_x, log_y)) {
    if (x.empty()) continue;
    const auto n = static_cast<PLINT>(x.size());
    if (s.style == LineStyle::points || n == 1) {
      plstring(n, x.data(), y.data(), "•");
    } else {
      pllsty(plplot_line_style(s.style));
      plline(n, x.data(), y.data());
    }
  }
  pllsty(1);
  plwidth(1.0);
}

// A legend above the axes: as many columns as entries of the longest label fit across the plot
// area (width_px; a column is its line sample, the label and a gap), and as many rows as needed.
struct LegendGrid {
  PLINT rows = 1, columns = 1;
};
LegendGrid legend_grid(const LineChart& chart, double width_px, double char_px) {
  PLINT n = 0;
  double label_px = 0;
  for (const Series& s : chart.series) {
    if (s.label.empty()) continue;
    ++n;
    label_px = std::max(label_px, detail::text_pixels(s.label, char_px));
  }
  const double column_px = label_px + 0.05 * width_px + 4.0 * char_px;
  const PLINT columns = std::clamp<PLINT>(static_cast<PLINT>(width_px / column_px), 1, std::max<PLINT>(n, 1));
  return {std::max<PLINT>(1, (n + columns - 1) / columns), columns};
}

void draw_legend(const LineChart& chart, const LegendGrid& grid) {
  std::vector<PLINT> options, colors, fill_colors, patterns, styles, symbol_numbers;
  std::vector<PLFLT> widths, box_scales, symbol_scales;
  std::vector<std::string> texts;
  for (size_t i = 0; i < chart.series.size(); ++i) {
    const Series& s = chart.series[i];
    if (s.label.empty()) continue;
    const int color = s.color >= 0 ? s.color : static_cast<int>(i);
    options.push_back(s.style == LineStyle::points ? PL_LEGEND_SYMBOL
                      : s.style == LineStyle::bars ? PL_LEGEND_COLOR_BOX
                                                   : PL_LEGEND_LINE);
    colors.push_back(detail::series_color(color));
    fill_colors.push_back(detail::fill_color(color));
    patterns.push_back(0);
    box_scales.push_back(0.8);
    styles.push_back(plplot_line_style(s.style));
    widths.push_back(2.0);
    symbol_scales.push_back(1.0);
    symbol_numbers.push_back(1);
    texts.push_back(detail::escape(s.label));
  }
  if (texts.empty()) return;
  std::vector<const char*> text_ptrs, symbols(texts.size(), "•");
  for (const std::string& t : texts) text_ptrs.push_back(t.c_str());
  std::vector<PLINT> text_colors(texts.size(), detail::kInk);
  PLFLT width = 0, height = 0;
  const auto n = static_cast<PLINT>(texts.size());
  pllegend(&width, &height, PL_LEGEND_BACKGROUND | PL_LEGEND_BOUNDING_BOX,
           chart.legend_above ? PL_POSITION_TOP | PL_POSITION_OUTSIDE : PL_POSITION_TOP | PL_POSITION_RIGHT | PL_POSITION_INSIDE,
           0.01, 0.01, 0.05, detail::kBackground, detail::kGrid, 1, chart.legend_above ? grid.rows : 0,
           chart.legend_above ? grid.columns : 0, n,
           options.data(), 0.8, 0.9, 1.8, 0.0, text_colors.data(), text_ptrs.data(), fill_colors.data(),
           patterns.data(), box_scales.data(), widths.data(), colors.data(), styles.data(), widths.data(),
           colors.data(), symbol_scales.data(), symbol_numbers.data(),
           symbols.data());
}

void draw_panel(const detail::Figure& figure, const LineChart& chart, const PixelBox& cell) {
  const double ch = figure.char_pixels();
  double label_px = 0;
  for (const std::string& c : chart.x_categories) label_px = std::max(label_px, detail::text_pixels(c, ch * 0.85));
  const double bottom_numbers = chart.x_categories.empty() ? 2.2 * ch : label_px + 0.8 * ch;
  const LegendGrid grid = legend_grid(chart, cell.right - cell.left - 10.0 * ch, ch);
  const double legend_lines = chart.legend_above ? 1.8 * static_cast<double>(grid.rows) : 0.0;
  const PixelBox plot_area{cell.left + 8.5 * ch, cell.top + (2.6 + legend_lines) * ch, cell.right - 1.5 * ch,
                           cell.bottom - bottom_numbers - 2.6 * ch};
  figure.viewport(plot_area);

  std::vector<const std::vector<double>*> xs, ys;
  for (const Series& s : chart.series) xs.push_back(&s.x), ys.push_back(&s.y);
  const bool named = !chart.x_categories.empty();
  const detail::Range xr = named ? detail::Range{-0.5, static_cast<double>(chart.x_categories.size()) - 0.5}
                                 : detail::data_range(xs, chart.log_x, 0.0);
  detail::Range yr = detail::data_range(ys, chart.log_y, 0.05);
  const auto bar_series = static_cast<int>(std::count_if(chart.series.begin(), chart.series.end(),
                                                         [](const Series& s) { return s.style == LineStyle::bars; }));
  if (bar_series > 0) yr = {std::min(yr.lo, 0.0), std::max(yr.hi, 0.0)};  // bars stand on 0
  size_t value_chars = 0;  // the longest value written over a bar
  for (const Series& s : chart.series)
    if (s.style == LineStyle::bars && s.value_decimals >= 0) {
      const bool signs = signed_values(s);
      for (const double y : s.y)
        if (std::isfinite(y)) value_chars = std::max(value_chars, bar_value_text(s, y, signs).size());
    }
  // room for the values over the highest bars, written upwards: 3 % of the axis a character
  if (value_chars > 0) yr.hi += 0.03 * static_cast<double>(std::max<size_t>(value_chars, 4)) * (yr.hi - yr.lo);
  plwind(xr.lo, xr.hi, yr.lo, yr.hi);
  detail::draw_axes(xr, chart.log_x, !named, yr, chart.log_y);
  BarSlot bar{.slot = 0, .slots = std::max(bar_series, 1)};
  for (size_t i = 0; i < chart.series.size(); ++i) {
    draw_series(chart.series[i], static_cast<int>(i), chart.log_x, chart.log_y, bar, yr);
    bar.slot += chart.series[i].style == LineStyle::bars;
  }
  if (bar_series > 0) {  // the bars' base
    plcol0(detail::kInk);
    const PLFLT zx[] = {xr.lo, xr.hi}, zy[] = {0, 0};
    plline(2, zx, zy);
  }
  plcol0(detail::kInk);
  if (named) {
    plschr(0, 0.85);
    for (size_t i = 0; i < chart.x_categories.size(); ++i)
      plmtex("bv", 0.5, (static_cast<double>(i) - xr.lo) / (xr.hi - xr.lo), 1.0,
             detail::escape(chart.x_categories[i]).c_str());
    plschr(0, 1.0);
  }
  plmtex("b", bottom_numbers / ch + 1.0, 0.5, 0.5, detail::escape(chart.x_label).c_str());
  plmtex("l", 6.3, 0.5, 0.5, detail::escape(chart.y_label).c_str());
  plmtex("t", 1.0 + legend_lines, 0.5, 0.5, detail::escape(chart.title).c_str());
  draw_legend(chart, grid);
}

}  // namespace

void write_line_charts(const std::string& path, const std::vector<LineChart>& panels, const Layout& layout) {
  for (const LineChart& chart : panels) check_chart(path, chart);
  detail::draw_panel_grid(path, panels, layout, draw_panel);
}

void write_line_chart(const std::string& path, const LineChart& chart) { write_line_charts(path, {chart}, Layout{}); }

}  // namespace nf::plot
