// Eval reports side by side: a table like 001's and a chart (eval_report.h).
#include "eval_report.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>

#include "nanoformer/core/error.h"
#include "nanoformer/util/plot.h"

namespace nf::cli {
namespace {

struct Point {
  int64_t context;
  double perplexity;
};

std::vector<Point> points_of(const nlohmann::json& report) {
  std::vector<Point> points;
  for (const auto& row : report.at("results")) points.push_back({row.at("context"), row.at("perplexity")});
  return points;
}

std::string label_of(const nlohmann::json& report) {
  return report.value("label", std::string()).empty() ? report.at("model").get<std::string>()
                                                       : report.at("label").get<std::string>();
}

}  // namespace

nlohmann::json read_eval_report(const std::string& path) {
  std::ifstream in(path);
  NF_CHECK(in, "--combine: ", path, ": cannot open");
  nlohmann::json report;
  try {
    report = nlohmann::json::parse(in);
    NF_CHECK(report.contains("model") && report.contains("results") && report.at("results").is_array(), path,
             ": not a report of nanoformer eval (no \"model\" and \"results\")");
    for (const auto& row : report.at("results")) {
      NF_CHECK(row.contains("context") && row.at("context").is_number_integer() && row.contains("perplexity") &&
                   row.at("perplexity").is_number(),
               path, ": a result without an integer \"context\" and a number \"perplexity\": ", row.dump());
    }
  } catch (const nlohmann::json::exception& e) {
    NF_FAIL(path, ": not a report of nanoformer eval: ", e.what());
  }
  return report;
}

std::string comparison_table(const std::vector<nlohmann::json>& reports) {
  std::set<int64_t> contexts;
  for (const auto& r : reports)
    for (const Point& p : points_of(r)) contexts.insert(p.context);
  std::ostringstream out;
  out << "| model |";
  for (int64_t c : contexts) out << " ppl (" << c << ") |";
  out << "\n| --- |";
  for (size_t i = 0; i < contexts.size(); ++i) out << " ---: |";
  out << "\n";
  for (const auto& r : reports) {
    const std::vector<Point> points = points_of(r);
    out << "| " << label_of(r) << " |";
    for (int64_t c : contexts) {
      const auto it = std::find_if(points.begin(), points.end(), [c](const Point& p) { return p.context == c; });
      char cell[32] = "-";
      if (it != points.end()) std::snprintf(cell, sizeof cell, "%.3f", it->perplexity);
      out << " " << cell << " |";
    }
    out << "\n";
  }
  return out.str();
}

void write_eval_chart(const std::string& path, const std::string& title, const std::vector<nlohmann::json>& reports) {
  // contexts as named, evenly spaced positions (they are usually powers of two), a line and a dot
  // per measured point for each report
  std::set<int64_t> contexts;
  for (const auto& r : reports)
    for (const Point& p : points_of(r)) contexts.insert(p.context);
  plot::LineChart chart{.title = title, .x_label = "context (tokens)", .y_label = "perplexity", .legend_above = true};
  for (int64_t c : contexts) chart.x_categories.push_back(std::to_string(c));
  double low = 0, high = 0;
  for (size_t i = 0; i < reports.size(); ++i) {
    plot::Series line{.label = label_of(reports[i]), .color = static_cast<int>(i)};
    for (const Point& p : points_of(reports[i])) {
      line.x.push_back(static_cast<double>(std::distance(contexts.begin(), contexts.find(p.context))));
      line.y.push_back(p.perplexity);
      low = low == 0 ? p.perplexity : std::min(low, p.perplexity);
      high = std::max(high, p.perplexity);
    }
    plot::Series dots = line;
    dots.label.clear();
    dots.style = plot::LineStyle::points;
    chart.series.push_back(line);
    chart.series.push_back(dots);
  }
  chart.log_y = low > 0 && high / low > 3;
  plot::write_line_chart(path, chart);
}

}  // namespace nf::cli
