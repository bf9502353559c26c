// Eval reports side by side: a table like 001's and a chart (eval_report.h).
#include "eval_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
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

// The scores a benchmark report of `layout` holds: exact match for generative tasks, else both accuracies.
std::vector<const char*> score_keys(const std::string& layout) {
  if (layout == "gsm8k") return {"exact_match"};
  return {"acc", "acc_norm"};
}

std::string label_of(const nlohmann::json& report) {
  return report.value("label", std::string()).empty() ? report.at("model").get<std::string>()
                                                       : report.at("label").get<std::string>();
}

std::string model_name_of(const nlohmann::json& report) {
  const std::string name = report.value("model_config", nlohmann::json::object()).value("name", std::string());
  return name.empty() ? "(unnamed)" : name;
}

std::optional<double> perplexity_at(const nlohmann::json& report, int64_t context) {
  for (const Point& p : points_of(report))
    if (p.context == context) return p.perplexity;
  return std::nullopt;
}

// Reports grouped by model for --baseline: models and labels in order of first appearance, the
// report of each (model, label), the contexts of each model.
struct Groups {
  std::vector<std::string> models, labels;
  std::map<std::pair<std::string, std::string>, const nlohmann::json*> report;
  std::map<std::string, std::set<int64_t>> contexts;
  const nlohmann::json* find(const std::string& model, const std::string& label) const {
    const auto it = report.find({model, label});
    return it == report.end() ? nullptr : it->second;
  }
  // The change in % from the model's baseline at `context`; none when either lacks it.
  std::optional<double> change(const std::string& model, const std::string& label, const std::string& baseline,
                               int64_t context) const {
    const nlohmann::json* r = find(model, label);
    const std::optional<double> ppl = r ? perplexity_at(*r, context) : std::nullopt;
    const std::optional<double> base = perplexity_at(*find(model, baseline), context);
    if (!ppl || !base) return std::nullopt;
    return 100.0 * (*ppl / *base - 1.0);
  }
};

Groups group_reports(const std::vector<nlohmann::json>& reports, const std::string& baseline) {
  Groups g;
  for (const auto& r : reports) {
    const std::string model = model_name_of(r), label = label_of(r);
    if (std::find(g.models.begin(), g.models.end(), model) == g.models.end()) g.models.push_back(model);
    if (std::find(g.labels.begin(), g.labels.end(), label) == g.labels.end()) g.labels.push_back(label);
    NF_CHECK(g.report.emplace(std::make_pair(model, label), &r).second, "--baseline: two reports of model '", model,
             "' are labelled '", label, "' (give each a distinct --label)");
    for (const Point& p : points_of(r)) g.contexts[model].insert(p.context);
  }
  for (const std::string& model : g.models) {
    if (g.find(model, baseline)) continue;
    std::string labels;
    for (const auto& [key, r] : g.report)
      if (key.first == model) labels += (labels.empty() ? "" : ", ") + key.second;
    NF_FAIL("--baseline ", baseline, ": no report of model '", model, "' is labelled '", baseline, "' (its labels: ",
            labels, ")");
  }
  return g;
}

std::string format_number(const char* pattern, double value) {
  char cell[32];
  std::snprintf(cell, sizeof cell, pattern, value);
  return cell;
}

}  // namespace

void write_eval_report(const std::string& path, const nlohmann::json& report) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    // a generated answer may cut a character or hold bytes that are none (a model's random tokens):
    // written as U+FFFD rather than refused, so the report of a whole run is never lost to one answer
    out << report.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    NF_CHECK(out.good(), "--json: cannot write ", tmp);
  }
  std::filesystem::rename(tmp, path);
}

nlohmann::json read_eval_report(const std::string& path) {
  std::ifstream in(path);
  NF_CHECK(in, "--combine: ", path, ": cannot open");
  nlohmann::json report;
  try {
    report = nlohmann::json::parse(in);
    if (is_task_report(report)) {
      NF_CHECK(report.contains("model") && report.at("layout").is_string() && report.at("task").is_string(), path,
               ": a benchmark report without a string \"model\", \"task\" and \"layout\"");
      for (const char* score : score_keys(report.at("layout").get<std::string>()))
        NF_CHECK(report.contains(score) && report.at(score).is_number(), path, ": a ",
                 report.at("layout").get<std::string>(), " report without a number \"", score, "\"");
      return report;
    }
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

bool is_task_report(const nlohmann::json& report) { return report.is_object() && report.contains("layout"); }

std::string task_table(const std::vector<nlohmann::json>& reports) {
  std::ostringstream out;
  out << "| label | task | layout | records | acc | acc_norm | exact_match |\n"
         "| --- | --- | --- | ---: | ---: | ---: | ---: |\n";
  for (const auto& r : reports) {
    out << "| " << label_of(r) << " | " << r.at("task").get<std::string>() << " | " << r.at("layout").get<std::string>()
        << " | " << (r.contains("records") ? r.at("records").dump() : "-") << " |";
    for (const char* score : {"acc", "acc_norm", "exact_match"}) {
      char cell[32] = "-";
      if (r.contains(score)) std::snprintf(cell, sizeof cell, "%.4f", r.at(score).get<double>());
      out << " " << cell << " |";
    }
    out << "\n";
  }
  return out.str();
}

void write_task_chart(const std::string& path, const std::string& title, const std::vector<nlohmann::json>& reports) {
  std::vector<std::string> labels, lines;  // x positions; lines "task score", in order of first appearance
  std::map<std::pair<std::string, std::string>, std::vector<double>> values;  // (line, label) -> scores
  for (const auto& r : reports) {
    const std::string label = label_of(r);
    if (std::find(labels.begin(), labels.end(), label) == labels.end()) labels.push_back(label);
    const std::string task = std::filesystem::path(r.at("task").get<std::string>()).filename().string();
    for (const char* score : score_keys(r.at("layout").get<std::string>())) {
      const std::string line = task + " " + score;
      if (std::find(lines.begin(), lines.end(), line) == lines.end()) lines.push_back(line);
      values[{line, label}].push_back(r.at(score).get<double>());
    }
  }
  plot::LineChart chart{.title = title, .y_label = "score", .x_categories = labels, .legend_above = true};
  for (size_t i = 0; i < lines.size(); ++i) {
    plot::Series mean{.label = lines[i], .color = static_cast<int>(i)};
    plot::Series dots{.style = plot::LineStyle::points, .color = static_cast<int>(i)};
    for (size_t x = 0; x < labels.size(); ++x) {
      const auto it = values.find({lines[i], labels[x]});
      if (it == values.end()) continue;
      double sum = 0;
      for (double v : it->second) {
        sum += v;
        dots.x.push_back(static_cast<double>(x));
        dots.y.push_back(v);
      }
      mean.x.push_back(static_cast<double>(x));
      mean.y.push_back(sum / static_cast<double>(it->second.size()));
    }
    chart.series.push_back(mean);
    chart.series.push_back(dots);
  }
  plot::write_line_chart(path, chart);
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

std::string change_table(const std::vector<nlohmann::json>& reports, const std::string& baseline) {
  const Groups g = group_reports(reports, baseline);
  std::ostringstream out;
  out << "| label |";
  size_t columns = 0;
  for (const std::string& model : g.models)
    for (int64_t c : g.contexts.at(model)) out << " " << model << " ppl (" << c << ") | change |", columns += 2;
  out << "\n| --- |";
  for (size_t i = 0; i < columns; ++i) out << " ---: |";
  out << "\n";
  for (const std::string& label : g.labels) {
    out << "| " << label << " |";
    for (const std::string& model : g.models) {
      const nlohmann::json* r = g.find(model, label);
      for (int64_t c : g.contexts.at(model)) {
        const std::optional<double> ppl = r ? perplexity_at(*r, c) : std::nullopt;
        const std::optional<double> change = g.change(model, label, baseline, c);
        out << " " << (ppl ? format_number("%.4f", *ppl) : "-") << " | "
            << (label == baseline ? "baseline" : change ? format_number("%+.3f %%", *change) : "-") << " |";
      }
    }
    out << "\n";
  }
  return out.str();
}

void write_change_chart(const std::string& path, const std::string& title, const std::vector<nlohmann::json>& reports,
                        const std::string& baseline, const std::vector<double>& bounds) {
  const Groups g = group_reports(reports, baseline);
  plot::LineChart chart{.title = title, .y_label = "perplexity change from " + baseline + " (%)", .legend_above = true};
  for (const std::string& label : g.labels)
    if (label != baseline) chart.x_categories.push_back(label);
  int color = 0;
  for (const std::string& model : g.models) {
    const std::set<int64_t>& contexts = g.contexts.at(model);
    for (int64_t c : contexts) {
      plot::Series bars{.label = contexts.size() == 1 ? model : model + " (" + std::to_string(c) + ")",
                        .style = plot::LineStyle::bars, .color = color++, .value_decimals = 2};
      for (size_t i = 0; i < chart.x_categories.size(); ++i) {
        bars.x.push_back(static_cast<double>(i));
        bars.y.push_back(g.change(model, chart.x_categories[i], baseline, c).value_or(NAN));
      }
      chart.series.push_back(bars);
    }
  }
  const double right = static_cast<double>(chart.x_categories.size()) - 0.5;
  for (double bound : bounds)
    chart.series.push_back({.label = format_number("%g %%", bound), .x = {-0.5, right}, .y = {bound, bound},
                            .style = plot::LineStyle::dashed, .color = color++});
  plot::write_line_chart(path, chart);
}

}  // namespace nf::cli
