#pragma once
// The PLplot plumbing shared by the chart kinds (util/plot.h): one figure at a time on a cairo
// stream writing a temporary file, pixel-based panel placement, the palette, text escaping and
// axis ranges. Internal to src/util.
#include <cstddef>
#include <mutex>
#include <string>
#include <vector>

#include "nanoformer/util/plot.h"

namespace nf::plot::detail {

// Palette indices of PLplot's colour map 0 (set by Figure).
constexpr int kBackground = 0;
constexpr int kInk = 1;    // axes, text
constexpr int kGrid = 2;   // light grey
constexpr int kFirstSeriesColor = 3;
constexpr int kSeriesColors = 10;  // tab10
constexpr int kFirstFillColor = kFirstSeriesColor + kSeriesColors;  // the same, 35% opaque
// A series colour by index (repeats after kSeriesColors); its translucent twin for filled areas.
int series_color(int index);
int fill_color(int index);

// A panel's place on the page, in pixels from the top-left corner.
struct PixelBox {
  double left, top, right, bottom;
};

// One figure being drawn. The constructor takes the process-wide PLplot lock, checks the path's
// extension (.png or .svg), creates the temporary file and starts PLplot on it; finish() ends the
// stream and renames the file into place. Destroyed unfinished (an exception), it ends the stream
// and removes the temporary file. PLplot's fatal errors become nf::Error naming the path.
class Figure {
 public:
  Figure(const std::string& path, int width, int height);
  ~Figure();
  Figure(const Figure&) = delete;
  Figure& operator=(const Figure&) = delete;

  void finish();
  const std::string& path() const { return path_; }
  int width() const { return width_; }
  int height() const { return height_; }
  // Sets the viewport (the plotting area) to a box in pixels.
  void viewport(const PixelBox& box) const;
  // The figure's title, centred at the top (pixels from the top to the text's centre).
  void title(const std::string& text, double y_pixels = 22) const;
  // The character height in pixels at the current scale (for margins and label spacing).
  double char_pixels() const;

 private:
  std::unique_lock<std::mutex> lock_;
  std::string path_, tmp_;
  int width_, height_;
  bool open_ = false;
};

// How `count` panels of `layout` fill the page: columns and rows, and the pixels above the first
// row (room for the figure's title). Checks there is a panel and a column.
struct GridShape {
  int columns, rows;
  double top;
};
GridShape grid_shape(const std::string& path, size_t count, int layout_columns, bool has_title);

// The box of panel `index` in a grid of `columns` cells of panel_width x panel_height pixels,
// starting `top` pixels below the top of the page (room for the figure's title).
PixelBox grid_cell(int index, int columns, int panel_width, int panel_height, double top);

// A figure of `panels` in a grid as `layout` says, draw(figure, panel, cell box) drawing each.
template <class Panel, class Draw>
void draw_panel_grid(const std::string& path, const std::vector<Panel>& panels, const Layout& layout, Draw draw) {
  const GridShape g = grid_shape(path, panels.size(), layout.columns, !layout.title.empty());
  Figure figure(path, g.columns * layout.panel_width, static_cast<int>(g.top) + g.rows * layout.panel_height);
  figure.title(layout.title);
  for (size_t i = 0; i < panels.size(); ++i)
    draw(figure, panels[i], grid_cell(static_cast<int>(i), g.columns, layout.panel_width, layout.panel_height, g.top));
  figure.finish();
}

// The approximate width of UTF-8 text in pixels at a character height of `char_px` (CJK and other
// wide characters count as one height, the rest as 0.65).
double text_pixels(const std::string& text, double char_px);

// PLplot's escape character '#' doubled, so text is drawn as given.
std::string escape(const std::string& text);

// [lo, hi] of the finite values (positive ones only when `log`), as log10 when `log`, padded by
// `pad` of the span on each side (a flat range is widened); {0, 1} when there is none.
struct Range {
  double lo, hi;
};
Range data_range(const std::vector<const std::vector<double>*>& values, bool log, double pad);

// The values to label on a logarithmic axis spanning [10^lo, 10^hi]: 1-2-5 steps, or decades
// when there are many, or 1..9 when there are few, or plain linear steps within one short decade.
// (PLplot's own log axes label decades only, which leaves a loss curve from 0.3 to 3 bare.)
std::vector<double> log_ticks(double lo, double hi);

// The current window's frame, ticks, light grid lines and numbers (x numbers only when
// `x_numbers`; a named-position x axis draws its own), linear or logarithmic per axis.
void draw_axes(const Range& x, bool log_x, bool x_numbers, const Range& y, bool log_y);

}  // namespace nf::plot::detail
