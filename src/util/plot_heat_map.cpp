// Grids of heat maps (util/plot.h): each panel a matrix of coloured cells with its title and its
// row and column labels (tokens), one viridis colour bar for the whole figure.
#include <plplot.h>

#include <algorithm>
#include <cmath>

#include "nanoformer/core/error.h"
#include "nanoformer/util/plot.h"
#include "plot_figure.h"

namespace nf::plot {
namespace {

using detail::PixelBox;

constexpr double kColorBarWidth = 120;  // pixels at the right of the figure
constexpr int64_t kMaxCells = 1 << 20;  // per panel

void check_panel(const std::string& path, const HeatMap& m) {
  NF_CHECK(m.rows > 0 && m.cols > 0 && m.rows * m.cols <= kMaxCells, "plot '", path, "': heat map '", m.title,
           "' has ", m.rows, " x ", m.cols, " cells (1 to ", kMaxCells, " allowed)");
  NF_CHECK(static_cast<int64_t>(m.values.size()) == m.rows * m.cols, "plot '", path, "': heat map '", m.title, "' has ",
           m.values.size(), " values for ", m.rows, " x ", m.cols, " cells");
  NF_CHECK(m.row_labels.empty() || static_cast<int64_t>(m.row_labels.size()) == m.rows, "plot '", path,
           "': heat map '", m.title, "' has ", m.row_labels.size(), " row labels for ", m.rows, " rows");
  NF_CHECK(m.col_labels.empty() || static_cast<int64_t>(m.col_labels.size()) == m.cols, "plot '", path,
           "': heat map '", m.title, "' has ", m.col_labels.size(), " column labels for ", m.cols, " columns");
}

// viridis, sampled at nine points and interpolated in RGB.
void use_viridis() {
  const PLFLT at[] = {0, 0.125, 0.25, 0.375, 0.5, 0.625, 0.75, 0.875, 1};
  const PLFLT r[] = {68, 71, 59, 44, 33, 39, 92, 170, 253}, g[] = {1, 44, 82, 113, 145, 173, 200, 220, 231},
              b[] = {84, 122, 139, 142, 140, 129, 99, 50, 37};
  PLFLT rf[9], gf[9], bf[9];
  for (int i = 0; i < 9; ++i) rf[i] = r[i] / 255, gf[i] = g[i] / 255, bf[i] = b[i] / 255;
  plscmap1n(256);
  plscmap1l(1, 9, at, rf, gf, bf, nullptr);
}

// Every k-th label so that labels are at least one character height apart.
int64_t label_stride(double cell_px, double char_px) {
  return std::max<int64_t>(1, static_cast<int64_t>(std::ceil(1.05 * char_px / cell_px)));
}

double longest_label(const std::vector<std::string>& labels, double char_px) {
  double px = 0;
  for (const std::string& l : labels) px = std::max(px, detail::text_pixels(l, char_px));
  return px;
}

void draw_panel(const detail::Figure& figure, const HeatMap& m, const HeatMapGrid& grid, double lo, double hi,
                const PixelBox& cell) {
  const double ch = figure.char_pixels();
  const double label_ch = 0.8 * ch;
  // labels (numbers when none are given), a gap, then the axis title
  const double left = longest_label(m.row_labels, label_ch) + (m.row_labels.empty() ? 2.5 * ch : 0.8 * ch) + 2.6 * ch;
  const double bottom = longest_label(m.col_labels, label_ch) + (m.col_labels.empty() ? 2.5 * ch : 0.8 * ch) + 2.6 * ch;
  const PixelBox area{cell.left + left, cell.top + 2.2 * ch, cell.right - 0.8 * ch, cell.bottom - bottom};
  NF_CHECK(area.right - area.left > 10 && area.bottom - area.top > 10, "plot '", figure.path(), "': heat map '", m.title,
           "': labels leave no room in a ", cell.right - cell.left, " x ", cell.bottom - cell.top, " pixel panel");
  figure.viewport(area);
  const auto rows = static_cast<double>(m.rows), cols = static_cast<double>(m.cols);
  plwind(0, cols, 0, rows);
  for (int64_t r = 0; r < m.rows; ++r)
    for (int64_t c = 0; c < m.cols; ++c) {
      const double v = m.values[r * m.cols + c];
      plcol1(std::isfinite(v) ? std::clamp((v - lo) / (hi - lo), 0.0, 1.0) : 0.0);
      const PLFLT x[] = {static_cast<double>(c), c + 1.0, c + 1.0, static_cast<double>(c)};
      const PLFLT y[] = {rows - r - 1.0, rows - r - 1.0, rows - r, rows - r};
      plfill(4, x, y);
    }
  plcol0(detail::kInk);
  const bool row_numbers = m.row_labels.empty(), col_numbers = m.col_labels.empty();
  plbox("bc", 0, 0, "bc", 0, 0);
  plschr(0, 0.8);
  const int64_t row_step = label_stride((area.bottom - area.top) / rows, label_ch);
  for (int64_t r = 0; r < m.rows; r += row_step)
    plmtex("lv", 0.5, (rows - r - 0.5) / rows, 1.0,
           detail::escape(row_numbers ? std::to_string(r) : m.row_labels[r]).c_str());
  const int64_t col_step = label_stride((area.right - area.left) / cols, label_ch);
  for (int64_t c = 0; c < m.cols; c += col_step)
    plmtex(col_numbers ? "b" : "bv", col_numbers ? 1.4 : 0.5, (c + 0.5) / cols, col_numbers ? 0.5 : 1.0,
           detail::escape(col_numbers ? std::to_string(c) : m.col_labels[c]).c_str());
  plschr(0, 1.0);
  plmtex("t", 0.8, 0.5, 0.5, detail::escape(m.title).c_str());
  plmtex("b", (bottom - 0.9 * ch) / ch, 0.5, 0.5, detail::escape(grid.col_axis).c_str());
  plmtex("l", (left - 1.4 * ch) / ch, 0.5, 0.5, detail::escape(grid.row_axis).c_str());
}

void draw_color_bar(const detail::Figure& figure, const HeatMapGrid& grid, double lo, double hi, double top) {
  const double ch = figure.char_pixels();
  const double w = figure.width();
  figure.viewport({w - kColorBarWidth + 1.0 * ch, top + 3 * ch, w - kColorBarWidth + 2.5 * ch, figure.height() - 3 * ch});
  plwind(0, 1, lo, hi);
  const std::string label = detail::escape(grid.value_label);
  const char* labels[] = {label.c_str()};
  const PLINT label_opts[] = {PL_COLORBAR_LABEL_TOP};
  const char* axis_opts[] = {"bcvtm"};
  const PLFLT ticks[] = {0};
  const PLINT sub_ticks[] = {0}, n_values[] = {2};
  const PLFLT range[] = {lo, hi};
  const PLFLT* values[] = {range};
  PLFLT width = 0, height = 0;
  plcolorbar(&width, &height, PL_COLORBAR_GRADIENT, PL_POSITION_LEFT | PL_POSITION_INSIDE | PL_POSITION_VIEWPORT, 0, 0,
             1, 1, detail::kBackground, detail::kInk, 1, 0, 0, detail::kInk, 1, 1, label_opts, labels, 1, axis_opts,
             ticks, sub_ticks, n_values, values);
}

}  // namespace

void write_heat_maps(const std::string& path, const HeatMapGrid& grid, const Layout& layout) {
  for (const HeatMap& m : grid.panels) check_panel(path, m);
  double lo = grid.min, hi = grid.max;
  if (!grid.fixed_range) {
    std::vector<const std::vector<double>*> all;
    for (const HeatMap& m : grid.panels) all.push_back(&m.values);
    const detail::Range r = detail::data_range(all, false, 0.0);
    lo = r.lo, hi = r.hi;
  }
  NF_CHECK(std::isfinite(lo) && std::isfinite(hi) && lo < hi, "plot '", path, "': colour range [", lo, ", ", hi,
           "] is empty");
  const detail::GridShape g = detail::grid_shape(path, grid.panels.size(), layout.columns, !layout.title.empty());
  detail::Figure figure(path, g.columns * layout.panel_width + static_cast<int>(kColorBarWidth),
                        static_cast<int>(g.top) + g.rows * layout.panel_height);
  use_viridis();
  figure.title(layout.title);
  for (size_t i = 0; i < grid.panels.size(); ++i)
    draw_panel(figure, grid.panels[i], grid, lo, hi,
               detail::grid_cell(static_cast<int>(i), g.columns, layout.panel_width, layout.panel_height, g.top));
  draw_color_bar(figure, grid, lo, hi, g.top);
  figure.finish();
}

}  // namespace nf::plot
