#include "nanoformer/util/svg_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <sstream>

#include "nanoformer/core/error.h"

namespace nf {
namespace {

const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"};

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '&') out += "&amp;";
    else out += c;
  }
  return out;
}

// Round tick values: 1, 2 or 5 times a power of ten, about `target` of them across [lo, hi].
std::vector<double> nice_ticks(double lo, double hi, int target) {
  const double span = hi - lo;
  if (!(span > 0)) return {lo};
  const double raw = span / target, mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double step = raw / mag < 1.5 ? mag : raw / mag < 3.5 ? 2 * mag : raw / mag < 7.5 ? 5 * mag : 10 * mag;
  std::vector<double> ticks;
  for (double t = std::ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) ticks.push_back(t);
  return ticks;
}

// For a log axis (values are log10 of the data): 1, 2 and 5 times each power of ten in range,
// or only the powers of ten when the range spans many decades.
std::vector<double> log_ticks(double lo, double hi) {
  std::vector<double> ticks;
  const bool dense = hi - lo <= 3.0;
  for (double decade = std::floor(lo); decade <= std::ceil(hi); decade += 1.0) {
    for (double m : dense ? std::vector<double>{1, 2, 5} : std::vector<double>{1}) {
      const double t = decade + std::log10(m);
      if (t >= lo && t <= hi) ticks.push_back(t);
    }
  }
  return ticks;
}

std::string fmt(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

}  // namespace

void write_line_plot_svg(const std::string& path, const std::vector<PlotSeries>& series, const PlotOptions& o) {
  auto ty = [&](double y) { return o.log_y ? std::log10(std::max(y, 1e-300)) : y; };
  double x0 = std::numeric_limits<double>::infinity(), x1 = -x0, y0 = x0, y1 = -x0;
  for (const auto& s : series) {
    NF_CHECK(s.x.size() == s.y.size(), "write_line_plot_svg: series '", s.label, "' has ", s.x.size(), " x and ",
             s.y.size(), " y values");
    for (size_t i = 0; i < s.x.size(); ++i) {
      if (!std::isfinite(s.y[i])) continue;
      x0 = std::min(x0, s.x[i]);
      x1 = std::max(x1, s.x[i]);
      y0 = std::min(y0, ty(s.y[i]));
      y1 = std::max(y1, ty(s.y[i]));
    }
  }
  if (!(x1 > x0)) { x0 -= 0.5; x1 += 0.5; }
  if (!(y1 > y0)) { y0 -= 0.5; y1 += 0.5; }
  const double pad = 0.05 * (y1 - y0);
  y0 -= pad;
  y1 += pad;

  const double left = 80, right = 20, top = 40, bottom = 50;
  const double W = o.width - left - right, H = o.height - top - bottom;
  auto px = [&](double x) { return left + (x - x0) / (x1 - x0) * W; };
  auto py = [&](double y) { return top + (1.0 - (y - y0) / (y1 - y0)) * H; };

  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << o.width << "\" height=\"" << o.height
      << "\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  svg << "<text x=\"" << o.width / 2 << "\" y=\"22\" text-anchor=\"middle\" font-size=\"15\">" << escape(o.title) << "</text>\n";
  for (double t : nice_ticks(x0, x1, 8)) {
    svg << "<line x1=\"" << px(t) << "\" y1=\"" << top << "\" x2=\"" << px(t) << "\" y2=\"" << top + H
        << "\" stroke=\"#eee\"/><text x=\"" << px(t) << "\" y=\"" << top + H + 16 << "\" text-anchor=\"middle\">"
        << fmt(t) << "</text>\n";
  }
  for (double t : o.log_y ? log_ticks(y0, y1) : nice_ticks(y0, y1, 6)) {
    svg << "<line x1=\"" << left << "\" y1=\"" << py(t) << "\" x2=\"" << left + W << "\" y2=\"" << py(t)
        << "\" stroke=\"#eee\"/><text x=\"" << left - 6 << "\" y=\"" << py(t) + 4 << "\" text-anchor=\"end\">"
        << (o.log_y ? fmt(std::pow(10.0, t)) : fmt(t)) << "</text>\n";
  }
  svg << "<rect x=\"" << left << "\" y=\"" << top << "\" width=\"" << W << "\" height=\"" << H
      << "\" fill=\"none\" stroke=\"#333\"/>\n";
  svg << "<text x=\"" << left + W / 2 << "\" y=\"" << o.height - 10 << "\" text-anchor=\"middle\">" << escape(o.x_label)
      << "</text>\n<text transform=\"translate(16," << top + H / 2 << ") rotate(-90)\" text-anchor=\"middle\">"
      << escape(o.y_label) << (o.log_y ? " (log scale)" : "") << "</text>\n";
  for (size_t k = 0; k < series.size(); ++k) {
    const auto& s = series[k];
    const char* color = kColors[k % (sizeof kColors / sizeof kColors[0])];
    svg << "<polyline fill=\"none\" stroke=\"" << color << "\" stroke-width=\"1.5\" points=\"";
    for (size_t i = 0; i < s.x.size(); ++i) {
      if (std::isfinite(s.y[i])) svg << px(s.x[i]) << "," << py(ty(s.y[i])) << " ";
    }
    svg << "\"/>\n<text x=\"" << left + W - 8 << "\" y=\"" << top + 16 + 16 * k << "\" text-anchor=\"end\" fill=\""
        << color << "\">" << escape(s.label) << "</text>\n";
  }
  svg << "</svg>\n";

  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary);
    NF_CHECK(f.good(), "write_line_plot_svg: cannot write '", tmp, "'");
    f << svg.str();
    NF_CHECK(f.good(), "write_line_plot_svg: write to '", tmp, "' failed");
  }
  NF_CHECK(std::rename(tmp.c_str(), path.c_str()) == 0, "write_line_plot_svg: cannot rename '", tmp, "' to '", path, "'");
}

}  // namespace nf
