#include "plot_figure.h"

#include <plplot.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "nanoformer/core/error.h"

namespace nf::plot::detail {
namespace {

std::mutex& plplot_mutex() {
  static std::mutex m;
  return m;
}

// The path being drawn, for PLplot's exit handler (only read while the lock is held).
std::string& current_path() {
  static std::string path;
  return path;
}

// PLplot calls this instead of exit() on a fatal error, and instead of printing a warning when it
// abandons a drawing call (bad viewport limits, say): both are errors here.
int throw_on_plplot_error(const char* message) { NF_FAIL("plot '", current_path(), "': PLplot: ", message); }
void throw_on_plplot_abort(const char* message) { throw_on_plplot_error(message); }

// tab10 (matplotlib's default cycle): distinct on white and for most colour-blind readers.
constexpr int kTab10[kSeriesColors][3] = {{31, 119, 180}, {255, 127, 14}, {44, 160, 44},  {214, 39, 40},
                                          {148, 103, 189}, {140, 86, 75}, {227, 119, 194}, {127, 127, 127},
                                          {188, 189, 34},  {23, 190, 207}};

constexpr double kTextPixels = 14;  // the character height of ordinary text

}  // namespace

int series_color(int index) { return kFirstSeriesColor + ((index % kSeriesColors) + kSeriesColors) % kSeriesColors; }
int fill_color(int index) { return series_color(index) + kSeriesColors; }

Figure::Figure(const std::string& path, int width, int height)
    : lock_(plplot_mutex()), path_(path), width_(width), height_(height) {
  const std::string ext = std::filesystem::path(path).extension().string();
  NF_CHECK(ext == ".png" || ext == ".svg", "plot '", path, "': unknown picture format '", ext, "' (use .png or .svg)");
  NF_CHECK(width >= 100 && height >= 100 && width <= 20000 && height <= 20000, "plot '", path, "': size ", width, " x ",
           height, " pixels is out of range");
  tmp_ = path + ".tmp" + std::to_string(::getpid());
  // PLplot would prompt on stdin for another name when it cannot open the file: create it first.
  NF_CHECK(std::ofstream(tmp_).good(), "plot '", path, "': cannot write '", tmp_, "'");
  current_path() = path;
  plsexit(throw_on_plplot_error);
  plsabort(throw_on_plplot_abort);
  plsdev(ext == ".png" ? "pngcairo" : "svgcairo");
  plsfnam(tmp_.c_str());
  plspage(0, 0, width, height, 0, 0);
  plscmap0n(kFirstFillColor + kSeriesColors);
  plscol0(kBackground, 255, 255, 255);
  plscol0(kInk, 0, 0, 0);
  plscol0(kGrid, 220, 220, 220);
  for (int i = 0; i < kSeriesColors; ++i) {
    plscol0(kFirstSeriesColor + i, kTab10[i][0], kTab10[i][1], kTab10[i][2]);
    plscol0a(kFirstFillColor + i, kTab10[i][0], kTab10[i][1], kTab10[i][2], 0.35);
  }
  plinit();
  open_ = true;
  pladv(0);
  // PLplot scales its default character height with the page; fix it at kTextPixels instead, so
  // text has one size in every figure, large or small.
  PLFLT x0_mm = 0, x1_mm = 0, y0_mm = 0, y1_mm = 0;
  plgspa(&x0_mm, &x1_mm, &y0_mm, &y1_mm);
  plschr(kTextPixels * (x1_mm - x0_mm) / width, 1.0);
  plcol0(kInk);
}

Figure::~Figure() {
  if (open_) plend1();
  if (!tmp_.empty()) std::remove(tmp_.c_str());
}

void Figure::finish() {
  plend1();
  open_ = false;
  std::error_code ec;
  std::filesystem::rename(tmp_, path_, ec);
  NF_CHECK(!ec, "plot '", path_, "': cannot rename '", tmp_, "' into place: ", ec.message());
  tmp_.clear();
}

void Figure::viewport(const PixelBox& b) const {
  plvpor(b.left / width_, b.right / width_, 1 - b.bottom / height_, 1 - b.top / height_);
}

void Figure::title(const std::string& text, double y_pixels) const {
  if (text.empty()) return;
  plvpor(0, 1, 0, 1);
  plwind(0, 1, 0, 1);
  plschr(0, 1.15);
  plcol0(kInk);
  plptex(0.5, 1 - y_pixels / height_, 1, 0, 0.5, escape(text).c_str());
  plschr(0, 1.0);
}

double Figure::char_pixels() const {
  PLFLT default_mm = 0, current_mm = 0;
  plgchr(&default_mm, &current_mm);
  PLFLT x0_mm = 0, x1_mm = 0, y0_mm = 0, y1_mm = 0;
  plgspa(&x0_mm, &x1_mm, &y0_mm, &y1_mm);  // the page (one subpage) in millimetres
  return current_mm * width_ / (x1_mm - x0_mm);
}

GridShape grid_shape(const std::string& path, size_t count, int layout_columns, bool has_title) {
  NF_CHECK(count > 0, "plot '", path, "': nothing to draw");
  NF_CHECK(layout_columns >= 1, "plot '", path, "': columns must be at least 1, got ", layout_columns);
  const int columns = std::min<int>(layout_columns, static_cast<int>(count));
  return {columns, static_cast<int>((count + columns - 1) / columns), has_title ? 36.0 : 0.0};
}

PixelBox grid_cell(int index, int columns, int panel_width, int panel_height, double top) {
  const double left = static_cast<double>(index % columns) * panel_width;
  const double y = top + static_cast<double>(index / columns) * panel_height;
  return {left, y, left + panel_width, y + panel_height};
}

double text_pixels(const std::string& text, double char_px) {
  double width = 0;
  for (size_t i = 0; i < text.size();) {
    const auto lead = static_cast<unsigned char>(text[i]);
    const size_t len = lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
    width += len >= 3 ? 1.0 : 0.65;  // three- and four-byte characters: CJK, kana, hangul, symbols
    i += len;
  }
  return width * char_px;
}

std::string escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    out += c;
    if (c == '#') out += '#';
  }
  return out;
}

Range data_range(const std::vector<const std::vector<double>*>& values, bool log, double pad) {
  double lo = INFINITY, hi = -INFINITY;
  for (const auto* v : values)
    for (double x : *v) {
      if (!std::isfinite(x) || (log && x <= 0)) continue;
      const double t = log ? std::log10(x) : x;
      lo = std::min(lo, t);
      hi = std::max(hi, t);
    }
  if (lo > hi) return {0, 1};
  if (hi - lo < 1e-12 * std::max(1.0, std::abs(hi))) {
    const double widen = log ? 0.5 : std::max(0.5, 0.1 * std::abs(hi));
    return {lo - widen, hi + widen};
  }
  const double span = hi - lo;
  return {lo - pad * span, hi + pad * span};
}

std::vector<double> log_ticks(double lo, double hi) {
  auto with_mantissas = [&](std::initializer_list<double> mantissas) {
    std::vector<double> ticks;
    for (int k = static_cast<int>(std::floor(lo)); k <= static_cast<int>(std::ceil(hi)); ++k)
      for (double m : mantissas) {
        const double v = m * std::pow(10.0, k);
        if (std::log10(v) >= lo - 1e-9 && std::log10(v) <= hi + 1e-9) ticks.push_back(v);
      }
    return ticks;
  };
  std::vector<double> ticks = with_mantissas({1, 2, 5});
  if (ticks.size() > 8) return with_mantissas({1});
  if (ticks.size() >= 3) return ticks;
  ticks = with_mantissas({1, 2, 3, 4, 5, 6, 7, 8, 9});
  if (ticks.size() >= 3) return ticks;
  // A fraction of a decade: about five round linear steps.
  const double a = std::pow(10.0, lo), b = std::pow(10.0, hi);
  const double raw = (b - a) / 5, unit = std::pow(10.0, std::floor(std::log10(raw)));
  const double step = unit * (raw / unit < 2 ? 2 : raw / unit < 5 ? 5 : 10);
  ticks.clear();
  for (double v = std::ceil(a / step) * step; v <= b; v += step) ticks.push_back(v);
  return ticks;
}

namespace {

// Tick numbers as %g writes them ("0.003", "1e+06"), instead of PLplot's shared "(x10^-3)" factor,
// which collides with the title above the panel.
void format_tick(PLINT, PLFLT value, char* label, PLINT length, PLPointer) {
  std::snprintf(label, static_cast<size_t>(length), "%.6g", std::abs(value) < 1e-300 ? 0.0 : value);
}

// Grid lines and numbers of a logarithmic axis at log_ticks().
void draw_log_axis(bool x_axis, const Range& axis, const Range& other) {
  for (double v : log_ticks(axis.lo, axis.hi)) {
    const double at = std::log10(v);
    plcol0(kGrid);
    if (x_axis) pljoin(at, other.lo, at, other.hi);
    else pljoin(other.lo, at, other.hi, at);
    plcol0(kInk);
    char text[32];
    std::snprintf(text, sizeof text, "%g", v);
    const double pos = (at - axis.lo) / (axis.hi - axis.lo);
    plmtex(x_axis ? "b" : "lv", x_axis ? 1.5 : 0.7, pos, x_axis ? 0.5 : 1.0, text);
  }
}

}  // namespace

void draw_axes(const Range& x, bool log_x, bool x_numbers, const Range& y, bool log_y) {
  plcol0(kGrid);
  plbox(log_x || !x_numbers ? "" : "g", 0, 0, log_y ? "" : "g", 0, 0);
  if (log_x && x_numbers) draw_log_axis(true, x, y);
  if (log_y) draw_log_axis(false, y, x);
  plcol0(kInk);
  plslabelfunc(format_tick, nullptr);
  const std::string x_options = std::string(x_numbers ? "bcst" : "bc") + (log_x ? "l" : "") + (x_numbers && !log_x ? "no" : "");
  const std::string y_options = std::string("bcstv") + (log_y ? "l" : "no");
  plbox(x_options.c_str(), 0, 0, y_options.c_str(), 0, 0);
}

}  // namespace nf::plot::detail
